import type { Dirent } from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { RpcError } from '../rpc';
import { isErrno, lstatOrUndefined, resolveEntryFor, resolveFor } from './fsPaths';
import { errnoError, FD_PATHS, inParent, openDirectory, realPathOfHandle, type FsSandbox } from './fsSandbox';
import { checkCreate, mkdirChecked, notARegularFile, openRegularForWriting } from './fsWrite';
import { isWithin } from './sandbox/policy';

/* `fs/copy` and `fs/remove`: whole trees, and for a sandboxed call always through opened directories. */

/** `dest` with its longest existing prefix resolved through links (the rest appended as is). */
async function resolveExisting(dest: string): Promise<string> {
  const suffix: string[] = [];
  let existing = dest;
  while (existing !== dirname(existing) && !(await exists(existing))) {
    suffix.unshift(basename(existing));
    existing = dirname(existing);
  }
  return join(await fsp.realpath(existing), ...suffix);
}

function exists(path: string): Promise<boolean> {
  return fsp.stat(path).then(
    () => true,
    () => false,
  );
}

async function copySymlink(source: string, target: string): Promise<void> {
  await fsp.symlink(await fsp.readlink(source), target);
}

/** Like the reference: `mkdir -p` the target, then files, links and subdirectories; other kinds are skipped. */
async function copyDirectory(source: string, target: string): Promise<void> {
  await fsp.mkdir(target, { recursive: true });
  for await (const entry of await fsp.opendir(source)) {
    const from = join(source, entry.name);
    const to = join(target, entry.name);
    const kind = await direntKind(entry, from);
    if (kind === 'directory') await copyDirectory(from, to);
    else if (kind === 'file') await copyRegularFile(from, to, to, undefined);
    else if (kind === 'symlink') await copySymlink(from, to);
  }
}

async function direntKind(entry: Dirent, path: string): Promise<'directory' | 'file' | 'symlink' | 'other'> {
  // Some file systems do not report the type while listing; ask then.
  const known =
    entry.isDirectory() ||
    entry.isFile() ||
    entry.isSymbolicLink() ||
    entry.isFIFO() ||
    entry.isSocket() ||
    entry.isBlockDevice() ||
    entry.isCharacterDevice();
  const t = known ? entry : await fsp.lstat(path);
  if (t.isDirectory()) return 'directory';
  if (t.isFile()) return 'file';
  if (t.isSymbolicLink()) return 'symlink';
  return 'other';
}

/**
 * Copies the regular file `source` to `target` between descriptors opened without blocking: a FIFO,
 * socket or device at either end (also one swapped in after the caller looked) is refused, so no
 * thread-pool thread waits on a FIFO for a peer. With a sandbox both paths are checked real paths
 * (no final link followed) and the opened files are checked where they really are (`targetReal`).
 */
async function copyRegularFile(source: string, target: string, targetReal: string, sb: FsSandbox | undefined): Promise<void> {
  const from = await fsp.open(source, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | (sb ? fsConstants.O_NOFOLLOW : 0));
  try {
    const st = await from.stat();
    if (!st.isFile()) throw notARegularFile(source);
    if (sb) sb.checkRead(await realPathOfHandle(from, source));
    // Created owner-writable (libuv reopens it through /proc and then gives it the source's mode).
    const to = await openRegularForWriting(target, targetReal, { noFollow: sb !== undefined, truncate: false, mode: 0o600 });
    try {
      if (sb) sb.checkWrite(await realPathOfHandle(to, targetReal));
      // Through the two descriptors: libuv sees the same file (and then leaves it alone), truncates, copies, sets the mode.
      if (FD_PATHS) await fsp.copyFile(`/proc/self/fd/${from.fd}`, `/proc/self/fd/${to.fd}`);
      else await fsp.copyFile(source, targetReal);
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}

/** `copyDirectory` for a sandboxed call: both trees are walked through opened directories, never by path. */
async function copyTreeChecked(sb: FsSandbox, source: string, target: string, depth = 0): Promise<void> {
  if (depth > 4096) throw errnoError('ELOOP');
  const src = await openDirectory(source);
  try {
    sb.checkRead(src.real);
    try {
      await fsp.mkdir(target);
    } catch (e) {
      if (!isErrno(e, 'EEXIST')) throw e;
    }
    const dst = await openDirectory(target);
    try {
      sb.checkWrite(dst.real);
      for await (const entry of await fsp.opendir(src.path)) {
        const from = join(src.path, entry.name);
        const to = join(dst.path, entry.name);
        const kind = await direntKind(entry, from);
        if (kind === 'directory') await copyTreeChecked(sb, from, to, depth + 1);
        else if (kind === 'file') await copyRegularFile(from, to, join(dst.real, entry.name), sb);
        else if (kind === 'symlink') {
          sb.checkWrite(join(dst.real, entry.name));
          await copySymlink(from, to);
        }
      }
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}

/** `rm -r` for a sandboxed call: descends through opened directories, so a link swapped in is never followed. */
async function removeTreeChecked(sb: FsSandbox, path: string, depth = 0): Promise<void> {
  if (depth > 4096) throw errnoError('ELOOP');
  const dir = await openDirectory(path);
  try {
    sb.checkWrite(dir.real);
    // Names first: deleting while reading a directory may skip entries.
    const names: string[] = [];
    for await (const entry of await fsp.opendir(dir.path)) names.push(entry.name);
    for (const name of names) {
      const child = join(dir.path, name);
      const st = await lstatOrUndefined(child);
      if (!st) continue;
      if (st.isDirectory()) await removeTreeChecked(sb, child, depth + 1);
      else await fsp.unlink(child);
    }
  } finally {
    await dir.close();
  }
  await fsp.rmdir(path);
}

/** `fs/copy` of the local paths `source` to `destination` (OS errors are thrown as they are). */
export async function copyEntry(source: string, destination: string, recursive: boolean, sb: FsSandbox | undefined): Promise<void> {
  const st = await fsp.lstat(source);
  if (st.isDirectory()) {
    if (!recursive) throw RpcError.invalidRequest('fs/copy requires recursive: true when sourcePath is a directory');
    if (isWithin(await resolveExisting(destination), await fsp.realpath(source))) {
      throw RpcError.invalidRequest('fs/copy cannot copy a directory to itself or one of its descendants');
    }
    if (!sb) return copyDirectory(source, destination);
    const from = await resolveFor(sb, source, true);
    sb.checkRead(from);
    if (sb.blocksSubtree(from, 'read')) throw errnoError('EACCES');
    const to = await resolveFor(sb, destination, true);
    await mkdirChecked(sb, to, true);
    if (sb.blocksSubtree(to, 'write')) throw errnoError('EROFS');
    return copyTreeChecked(sb, from, to);
  }
  if (st.isSymbolicLink()) {
    if (!sb) return copySymlink(source, destination);
    sb.checkRead(await resolveEntryFor(sb, source));
    const to = await resolveEntryFor(sb, destination);
    await checkCreate(sb, to);
    return inParent(to, async (child, dir, name) => {
      sb.checkWrite(join(dir.real, name));
      await copySymlink(source, child);
    });
  }
  if (!st.isFile()) throw RpcError.invalidRequest('fs/copy only supports regular files, directories, and symlinks');
  if (!sb) return copyRegularFile(source, destination, destination, undefined);
  const from = await resolveFor(sb, source, true);
  sb.checkRead(from);
  const to = await resolveFor(sb, destination, true);
  await checkCreate(sb, to);
  return inParent(to, (child) => copyRegularFile(from, child, to, sb));
}

/** `fs/remove` of the local path `path` (OS errors are thrown as they are). */
export async function removeEntry(path: string, recursive: boolean, force: boolean, sb: FsSandbox | undefined): Promise<void> {
  let target = path;
  try {
    if (sb) {
      target = await resolveEntryFor(sb, path);
      // What the sandbox cannot see is missing there.
      if (sb.accessAt(target) === 'none') throw errnoError('ENOENT');
    }
    const st = await fsp.lstat(target);
    if (sb) {
      sb.checkWrite(target);
      sb.checkWrite(dirname(target));
      if (st.isDirectory() && recursive && sb.blocksSubtree(target, 'write')) throw errnoError('EROFS');
    }
  } catch (e) {
    if (force && isErrno(e, 'ENOENT')) return;
    throw e;
  }
  if (!sb) {
    const st = await fsp.lstat(path);
    if (!st.isDirectory()) await fsp.unlink(path);
    else if (recursive) await fsp.rm(path, { recursive: true });
    else await fsp.rmdir(path);
    return;
  }
  await inParent(target, async (child, dir, name) => {
    sb.checkWrite(join(dir.real, name));
    const st = await fsp.lstat(child);
    if (!st.isDirectory()) await fsp.unlink(child);
    else if (recursive) await removeTreeChecked(sb, child);
    else await fsp.rmdir(child);
  });
}
