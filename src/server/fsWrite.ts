import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { RpcError } from '../rpc';
import { isErrno, lstatOrUndefined } from './fsPaths';
import { errnoError, inParent, openDirectory, realPathOfHandle, type FsSandbox } from './fsSandbox';

/* The writing side of `fs/*`: files written in place, directories made (sandboxed: inside opened parents). */

export function notARegularFile(shownPath: string): RpcError {
  return RpcError.invalidRequest(
    `path \`${shownPath}\` is not a regular file (a FIFO, socket or device): only regular files are written to or copied`,
  );
}

/**
 * Opens `path` for writing, created if missing (mode `mode`, before the umask), and makes sure it is
 * a regular file. The open never blocks a thread-pool thread: O_NONBLOCK makes a FIFO without a
 * reader fail at once (ENXIO) instead of waiting for one (every thread stuck so stopped every other
 * client's fs calls), and the opened descriptor is checked, so a file swapped for a FIFO or a device
 * after any earlier look is still refused. `truncate`: with O_TRUNC, which the kernel ignores for
 * anything but a regular file (a sandboxed write truncates only once the opened file is checked).
 * `noFollow`: a link as last name fails (ELOOP), for a path already resolved by a sandbox check.
 */
export async function openRegularForWriting(
  path: string,
  shownPath: string,
  opts: { noFollow: boolean; truncate: boolean; mode?: number },
): Promise<fsp.FileHandle> {
  const flags =
    fsConstants.O_WRONLY |
    fsConstants.O_CREAT |
    fsConstants.O_NONBLOCK |
    (opts.noFollow ? fsConstants.O_NOFOLLOW : 0) |
    (opts.truncate ? fsConstants.O_TRUNC : 0);
  let file: fsp.FileHandle;
  try {
    file = await fsp.open(path, flags, opts.mode ?? 0o666);
  } catch (e) {
    // A FIFO with no reader, or a socket.
    if (isErrno(e, 'ENXIO')) throw notARegularFile(shownPath);
    throw e;
  }
  try {
    if (!(await file.stat()).isFile()) throw notARegularFile(shownPath);
    return file;
  } catch (e) {
    await file.close();
    throw e;
  }
}

/** `fs/writeFile` without a sandbox: the whole file replaced, only if it is a regular one. */
export async function writeWholeFile(path: string, bytes: Buffer): Promise<void> {
  const file = await openRegularForWriting(path, path, { noFollow: false, truncate: true });
  try {
    await writeFully(file, bytes, 0);
  } finally {
    await file.close();
  }
}

export async function writeFully(file: fsp.FileHandle, bytes: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten === 0) throw errnoError('EIO');
    done += bytesWritten;
  }
}

/**
 * May the sandbox create `real`? The kernel looks up the parent before it looks at the mount, so
 * a missing parent is ENOENT (ENOTDIR) even where nothing could be written.
 */
export async function checkCreate(sb: FsSandbox, real: string): Promise<void> {
  if (sb.accessAt(real) === 'write') return;
  const parent = await fsp.stat(dirname(real));
  if (!parent.isDirectory()) throw errnoError('ENOTDIR');
  sb.checkWrite(real);
}

/** Opens `real` for writing (created if missing) inside its opened parent; truncated only once checked. */
export async function openForWriting(sb: FsSandbox, real: string, truncate: boolean): Promise<fsp.FileHandle> {
  await checkCreate(sb, real);
  return inParent(real, async (child, dir, name) => {
    sb.checkWrite(join(dir.real, name));
    const file = await openRegularForWriting(child, real, { noFollow: true, truncate: false });
    try {
      sb.checkWrite(await realPathOfHandle(file, real));
      if (truncate) await file.truncate(0);
      return file;
    } catch (e) {
      await file.close();
      throw e;
    }
  });
}

/** `mkdir` (`-p` when `recursive`) of the real path `real`, each new directory made inside its opened parent. */
export async function mkdirChecked(sb: FsSandbox, real: string, recursive: boolean): Promise<void> {
  const st = await lstatOrUndefined(real);
  if (st) {
    sb.checkRead(real);
    if (recursive && st.isDirectory()) return;
    throw errnoError('EEXIST');
  }
  // The first missing component, and what follows it.
  let first = real;
  const rest: string[] = [];
  for (let i = 0; i < 4096 && dirname(first) !== first && !(await lstatOrUndefined(dirname(first))); i++) {
    rest.unshift(basename(first));
    first = dirname(first);
  }
  if (rest.length > 0 && !recursive) throw errnoError('ENOENT');
  await checkCreate(sb, first);
  let dir = await openDirectory(dirname(first));
  try {
    for (const name of [basename(first), ...rest]) {
      sb.checkWrite(join(dir.real, name));
      try {
        await fsp.mkdir(join(dir.path, name));
      } catch (e) {
        if (!recursive || !isErrno(e, 'EEXIST')) throw e;
      }
      const next = await openDirectory(join(dir.path, name));
      await dir.close();
      dir = next;
    }
  } finally {
    await dir.close();
  }
}
