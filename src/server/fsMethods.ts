import { constants as fsConstants, type BigIntStats, type Dirent, type Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { FsDirectoryEntry, FsMetadata, FsWalkEntry, FsWalkOptions, FsWalkResult } from '../protocol/fs';
import { RpcError } from '../rpc/errors';
import type { Router } from '../rpc/router';
import { FileHandleTable } from './fileHandles';
import { errnoError, FD_PATHS, FsSandbox, inParent, openDirectory, realPathOfHandle, resolveReal } from './fsSandbox';
import { isWithin } from './sandbox/policy';
import { decodeBase64, describeIoError, ioErrorToRpc } from './rustCompat';
import { uriFromPath } from './uri';

/**
 * The `fs/*` methods, matching `codex exec-server` 0.171.0 (docs/protocol.md §6) down to
 * error codes and messages: missing path → -32004, permission denied / invalid input → -32600,
 * other OS errors → -32603 `<description> (os error N)`. Behaviours below that the reference
 * doc does not spell out were observed on the real binary. A request's `sandbox` is enforced by
 * ./fsSandbox.ts: every path is checked (as a real path) against the layout that sandbox gives a
 * command, and the operation runs on directories opened by those real paths.
 */
export interface FsContext {
  fileHandles: FileHandleTable;
}

/** The reference refuses to read bigger files whole (-32600). */
export const MAX_READ_FILE_BYTES = 512 * 1024 * 1024;
/**
 * Below the reference's bound, but a JS string (the base64 text, then the JSON frame) cannot hold
 * much more; bigger files must be read in blocks.
 */
export const MAX_READ_FILE_BYTES_HERE = 256 * 1024 * 1024;
export const MAX_READ_BLOCK_BYTES = 1024 * 1024;
/** `fs/readFile` reads in chunks (multiples of 8 bytes: /proc/self/pagemap refuses anything else). */
const FIRST_READ_CHUNK = 64 * 1024;
const READ_CHUNK = 1024 * 1024;
const MAX_WALK_DEPTH = 64;
const MAX_WALK_DIRECTORIES = 10_000;
const MAX_WALK_ENTRIES = 50_000;
const MAX_WALK_RESPONSE_BYTES = 4 * 1024 * 1024;
const WALK_ITEM_OVERHEAD_BYTES = 64;
/** Parallel stats while listing a directory (ordered results; bounded so a huge directory cannot flood the thread pool). */
const STAT_BATCH = 64;

const hostPlatform = process.platform === 'darwin' ? 'macos' : process.platform;

/**
 * A wire path URI, checked the way the reference deserializes it (-32602 on failure). Whether it
 * names a path on this host is checked later, by `localPath` (-32600), as the reference does.
 */
function parsePathUri(uri: string): URL {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    const hasScheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri);
    throw RpcError.invalidParams(hasScheme ? 'invalid URI: invalid international domain name' : 'invalid URI: relative URL without a base');
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'file') throw RpcError.invalidParams(`unsupported path URI scheme \`${scheme}\``);
  // WHATWG URL drops an empty `?`/`#`; the reference refuses those too.
  const beforeHash = url.href.split('#', 1)[0]!;
  if (url.search !== '' || beforeHash.includes('?')) throw RpcError.invalidParams('query parameters are not allowed in path URIs');
  if (url.hash !== '' || url.href.includes('#')) throw RpcError.invalidParams('fragments are not allowed in path URIs');
  if (percentDecode(url.pathname).includes('\0')) throw RpcError.invalidParams(`'${url.href}' is invalid on '${hostPlatform}'`);
  return url;
}

/** The absolute local path of a parsed URI; a URI with a host (other than localhost) is not local. */
function localPath(url: URL): string {
  if (url.hostname !== '') throw RpcError.invalidRequest(`'${url.href}' is invalid on '${hostPlatform}'`);
  return percentDecode(url.pathname);
}

/** Decodes `%XX` escapes to bytes (then UTF-8); malformed escapes stay literal, as in the reference. */
function percentDecode(s: string): string {
  if (!s.includes('%')) return s;
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      for (const b of Buffer.from(s[i]!)) out.push(b);
    }
  }
  return Buffer.from(out).toString('utf8');
}

function toPath(uri: string): string {
  return localPath(parsePathUri(uri));
}

/** Runs a file-system step, turning OS errors into the reference's JSON-RPC errors. */
async function io<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    throw ioErrorToRpc(e);
  }
}

function isErrno(e: unknown, code: string): boolean {
  return (e as NodeJS.ErrnoException | null)?.code === code;
}

/** Milliseconds since the epoch, truncated, or 0 before it (Rust's `duration_since` fails then). */
function unixMs(ns: bigint): number {
  return ns < 0n ? 0 : Number(ns / 1_000_000n);
}

async function metadataFollowing(path: string): Promise<FsMetadata> {
  const st = await fsp.stat(path, { bigint: true });
  const lst = await fsp.lstat(path);
  return {
    isDirectory: st.isDirectory(),
    isFile: st.isFile(),
    isSymlink: lst.isSymbolicLink(),
    size: Number(st.size),
    // The reference (a static musl build) cannot read birth times on this path and reports 0.
    createdAtMs: 0,
    modifiedAtMs: unixMs(st.mtimeNs),
  };
}

/**
 * `followSymlinks: false`: every component is looked at without following links. A link inside
 * the path fails like `O_NOFOLLOW|O_DIRECTORY` would (ENOTDIR); a link at the end is refused.
 */
async function metadataNotFollowing(path: string): Promise<FsMetadata> {
  const parts = path.split('/').filter((p) => p !== '');
  let current = '/';
  let st: BigIntStats = await fsp.lstat(current, { bigint: true });
  for (let i = 0; i < parts.length; i++) {
    current = join(current, parts[i]!);
    st = await fsp.lstat(current, { bigint: true });
    const last = i === parts.length - 1;
    if (st.isSymbolicLink()) {
      if (last) throw RpcError.invalidRequest('path contains a symbolic link');
      throw errnoError('ENOTDIR');
    }
    if (!last && !st.isDirectory()) throw errnoError('ENOTDIR');
  }
  return {
    isDirectory: st.isDirectory(),
    isFile: st.isFile(),
    isSymlink: false,
    size: Number(st.size),
    createdAtMs: unixMs(st.birthtimeNs),
    modifiedAtMs: unixMs(st.mtimeNs),
  };
}

/**
 * Lists a directory in the OS's order (not sorted: `opendir`, unlike `readdir`, keeps it), with
 * each entry's followed type. Entries whose type cannot be read (dangling links) are left out.
 */
async function listDirectory(path: string): Promise<FsDirectoryEntry[]> {
  const names: string[] = [];
  const dir = await fsp.opendir(path);
  for await (const entry of dir) names.push(entry.name);
  const entries: FsDirectoryEntry[] = [];
  for (let i = 0; i < names.length; i += STAT_BATCH) {
    const batch = names.slice(i, i + STAT_BATCH);
    const stats = await Promise.all(batch.map((n) => fsp.stat(join(path, n)).catch(() => undefined)));
    batch.forEach((fileName, k) => {
      const st = stats[k];
      if (st) entries.push({ fileName, isDirectory: st.isDirectory(), isFile: st.isFile() });
    });
  }
  return entries;
}

/** Lists the directory at the real path `real` through an opened handle, checked where it really is. */
async function listDirectoryChecked(sb: FsSandbox, real: string): Promise<FsDirectoryEntry[]> {
  sb.checkRead(real);
  const dir = await openDirectory(real);
  try {
    sb.checkRead(dir.real);
    return await listDirectory(dir.path);
  } finally {
    await dir.close();
  }
}

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
    else if (kind === 'file') await fsp.copyFile(from, to);
    else if (kind === 'symlink') await copySymlink(from, to);
  }
}

async function direntKind(entry: Dirent, path: string): Promise<'directory' | 'file' | 'symlink' | 'other'> {
  // Some file systems do not report the type while listing; ask then.
  const known = entry.isDirectory() || entry.isFile() || entry.isSymbolicLink() || entry.isFIFO() || entry.isSocket() || entry.isBlockDevice() || entry.isCharacterDevice();
  const t = known ? entry : await fsp.lstat(path);
  if (t.isDirectory()) return 'directory';
  if (t.isFile()) return 'file';
  if (t.isSymbolicLink()) return 'symlink';
  return 'other';
}

async function writeFully(file: fsp.FileHandle, bytes: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten === 0) throw errnoError('EIO');
    done += bytesWritten;
  }
}

async function readFully(file: fsp.FileHandle, len: number, position: number): Promise<Buffer> {
  // No file reaches 2^53 bytes: such an offset is past the end (Node would refuse the position).
  if (position > Number.MAX_SAFE_INTEGER - len) return Buffer.alloc(0);
  const buf = Buffer.alloc(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await file.read(buf, got, len - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

async function metadataOfAll(paths: string[]): Promise<Array<Outcome<FsMetadata>>> {
  const out: Array<Outcome<FsMetadata>> = [];
  for (let i = 0; i < paths.length; i += STAT_BATCH) {
    const batch = paths.slice(i, i + STAT_BATCH).map((p) =>
      metadataFollowing(p).then(
        (value): Outcome<FsMetadata> => ({ ok: true, value }),
        (error: unknown): Outcome<FsMetadata> => ({ ok: false, error }),
      ),
    );
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/**
 * `fs/walk`: breadth first from `root`, entries sorted by name (bytewise, as Rust sorts strings)
 * within each directory. Every listed entry counts against `maxEntries`; a directory deeper than
 * `maxDepth` is listed but not entered; directories are deduplicated by identity (their
 * canonical path when links are followed), so link cycles end.
 */
async function walk(rootUrl: URL, options: FsWalkOptions, sb: FsSandbox | undefined): Promise<FsWalkResult> {
  if (options.maxDirectories === 0 || options.maxEntries === 0) throw RpcError.invalidRequest('filesystem walk limits must be greater than zero');
  if (options.maxDepth > MAX_WALK_DEPTH || options.maxDirectories > MAX_WALK_DIRECTORIES || options.maxEntries > MAX_WALK_ENTRIES) {
    throw RpcError.invalidRequest(
      `filesystem walk limits exceed maximums: depth=${MAX_WALK_DEPTH}, directories=${MAX_WALK_DIRECTORIES}, entries=${MAX_WALK_ENTRIES}`,
    );
  }
  const rootPath = localPath(rootUrl);
  const follow = options.followDirectorySymlinks;
  const outcome: FsWalkResult = { entries: [], errors: [], truncated: false };
  if (sb) await io(async () => sb.checkRead(await resolveFor(sb, rootPath, true)));
  const root = await io(() => metadataFollowing(rootPath));
  if (!root.isDirectory || (root.isSymlink && !follow)) return outcome;
  const rootIdentity = follow ? await io(() => fsp.realpath(rootPath)) : rootPath;

  let responseBytes = 0;
  const reserve = (bytes: number): boolean => {
    const total = responseBytes + bytes + WALK_ITEM_OVERHEAD_BYTES;
    if (total > MAX_WALK_RESPONSE_BYTES) {
      outcome.truncated = true;
      return false;
    }
    responseBytes = total;
    return true;
  };
  const pushError = (path: string, e: unknown): boolean => {
    const uri = uriFromPath(path);
    const message = describeIoError(e);
    if (!reserve(Buffer.byteLength(uri) + Buffer.byteLength(message))) return false;
    outcome.errors.push({ path: uri, message });
    return true;
  };

  const queue: Array<{ path: string; depth: number }> = [{ path: rootPath, depth: 0 }];
  const visited = new Set<string>([rootIdentity]);
  let directoryCount = 1;
  let entryCount = 0;
  for (let next = queue.shift(); next; next = queue.shift()) {
    let listing: FsDirectoryEntry[];
    try {
      listing = sb ? await listDirectoryChecked(sb, await fsp.realpath(next.path)) : await listDirectory(next.path);
    } catch (e) {
      if (!pushError(next.path, e)) return outcome;
      continue;
    }
    listing.sort((a, b) => Buffer.compare(Buffer.from(a.fileName), Buffer.from(b.fileName)));
    // Metadata is fetched ahead in parallel batches (only for entries the limit still allows);
    // the entries are still handled in order.
    const allowed = listing.slice(0, options.maxEntries - entryCount);
    const metas = await metadataOfAll(allowed.map((item) => join(next.path, item.fileName)));
    for (const [k, item] of listing.entries()) {
      if (entryCount === options.maxEntries) {
        outcome.truncated = true;
        return outcome;
      }
      entryCount++;
      const path = join(next.path, item.fileName);
      const meta = metas[k]!;
      if (!meta.ok) {
        if (!pushError(path, meta.error)) return outcome;
        continue;
      }
      const { isDirectory, isFile, isSymlink } = meta.value;
      if (isSymlink && (!follow || !isDirectory)) continue;
      const kind: FsWalkEntry['kind'] | undefined = isDirectory ? 'directory' : isFile ? 'file' : undefined;
      if (!kind) continue;
      const uri = uriFromPath(path);
      if (!reserve(Buffer.byteLength(uri))) return outcome;
      outcome.entries.push({ path: uri, kind });
      if (kind !== 'directory' || next.depth >= options.maxDepth) continue;
      if (options.pruneHiddenDirectories && item.fileName.startsWith('.')) continue;
      let identity = path;
      if (follow) {
        try {
          identity = await fsp.realpath(path);
        } catch (e) {
          if (!pushError(path, e)) return outcome;
          continue;
        }
      }
      if (visited.has(identity)) continue;
      visited.add(identity);
      if (directoryCount === options.maxDirectories) {
        outcome.truncated = true;
      } else {
        directoryCount++;
        queue.push({ path, depth: next.depth + 1 });
      }
    }
  }
  return outcome;
}

/**
 * Reads a whole regular file from an open handle, counting the bytes actually read: procfs and
 * sysfs files report size 0 but can be endless (/proc/self/pagemap), so `stat` alone bounds nothing.
 */
async function readWhole(file: fsp.FileHandle, size: number): Promise<Buffer> {
  if (size > MAX_READ_FILE_BYTES) throw RpcError.invalidRequest(`file is too large to read: limit is ${MAX_READ_FILE_BYTES} bytes`);
  if (size > MAX_READ_FILE_BYTES_HERE) throw tooLargeHere(`${size} bytes`);
  const chunks: Buffer[] = [];
  let total = 0;
  let chunk = size > 0 ? Math.min(Math.max(size + 1, FIRST_READ_CHUNK), READ_CHUNK) : FIRST_READ_CHUNK;
  const maxReads = Math.ceil(MAX_READ_FILE_BYTES_HERE / FIRST_READ_CHUNK) + 2;
  for (let reads = 0; reads < maxReads; reads++) {
    const buf = Buffer.allocUnsafe(chunk);
    // Sequential reads (position null): some pseudo-files do not support positioned ones.
    const { bytesRead } = await file.read(buf, 0, chunk, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    total += bytesRead;
    if (total > MAX_READ_FILE_BYTES_HERE) throw tooLargeHere(`more than ${MAX_READ_FILE_BYTES_HERE} bytes`);
    chunks.push(bytesRead === chunk ? buf : Buffer.from(buf.subarray(0, bytesRead)));
    chunk = READ_CHUNK;
  }
  throw tooLargeHere(`more than ${MAX_READ_FILE_BYTES_HERE} bytes`);
}

function tooLargeHere(what: string): RpcError {
  return RpcError.internal(
    `file is too large to return in one message (${what}; this server's limit is ${MAX_READ_FILE_BYTES_HERE} bytes, and clients usually accept frames of 16 MiB): read it in blocks with fs/open and fs/readBlock`,
  );
}

/**
 * Opens a regular file for reading. Other kinds are refused before they are opened (opening a FIFO
 * blocks, opening a device can do things) and again after (the path may have changed in between).
 * With a sandbox, `path` must be the checked real path; the opened file is checked once more.
 */
async function openForReading(path: string, shownPath: string, sb: FsSandbox | undefined): Promise<{ file: fsp.FileHandle; size: number }> {
  const notAFile = () => RpcError.invalidRequest(`path \`${shownPath}\` is not a file`);
  if (!(await fsp.stat(path)).isFile()) throw notAFile();
  const flags = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | (sb ? fsConstants.O_NOFOLLOW : 0);
  const file = await fsp.open(path, flags);
  try {
    const st = await file.stat();
    if (!st.isFile()) throw notAFile();
    if (sb) sb.checkRead(await realPathOfHandle(file, path));
    return { file, size: st.size };
  } catch (e) {
    await file.close();
    throw e;
  }
}

/** The real path of `path` for a sandboxed call; a path the sandbox cannot see fails as unseen. */
async function resolveFor(sb: FsSandbox, path: string, followFinal: boolean): Promise<string> {
  try {
    return await resolveReal(path, followFinal);
  } catch (e) {
    sb.checkRead(path);
    throw e;
  }
}

/** `path` itself (a final link not followed), with its directory resolved. */
async function resolveEntryFor(sb: FsSandbox, path: string): Promise<string> {
  if (path === '/') return '/';
  return join(await resolveFor(sb, dirname(path), true), basename(path));
}

function isMissing(e: unknown): boolean {
  return isErrno(e, 'ENOENT');
}

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await fsp.lstat(path);
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}

/**
 * May the sandbox create `real`? The kernel looks up the parent before it looks at the mount, so
 * a missing parent is ENOENT (ENOTDIR) even where nothing could be written.
 */
async function checkCreate(sb: FsSandbox, real: string): Promise<void> {
  if (sb.accessAt(real) === 'write') return;
  const parent = await fsp.stat(dirname(real));
  if (!parent.isDirectory()) throw errnoError('ENOTDIR');
  sb.checkWrite(real);
}

/** Opens `real` for writing (created if missing) inside its opened parent; truncated only once checked. */
async function openForWriting(sb: FsSandbox, real: string, truncate: boolean): Promise<fsp.FileHandle> {
  await checkCreate(sb, real);
  return inParent(real, async (child, dir, name) => {
    sb.checkWrite(join(dir.real, name));
    const file = await fsp.open(child, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW, 0o666);
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
async function mkdirChecked(sb: FsSandbox, real: string, recursive: boolean): Promise<void> {
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

/** Copies one regular file between handles opened (and checked) by real paths. */
async function copyFileChecked(sb: FsSandbox, source: string, target: string, targetReal: string): Promise<void> {
  const from = await fsp.open(source, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  try {
    const st = await from.stat();
    if (!st.isFile()) throw errnoError('EINVAL');
    sb.checkRead(await realPathOfHandle(from, source));
    const to = await fsp.open(target, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW, st.mode & 0o7777);
    try {
      sb.checkWrite(await realPathOfHandle(to, targetReal));
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
        else if (kind === 'file') await copyFileChecked(sb, from, to, join(dst.real, entry.name));
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

export function registerFsMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  router.on('fs/readFile', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    const data = await io(async () => {
      let target = path;
      if (sb) {
        target = await resolveFor(sb, path, true);
        sb.checkRead(target);
      }
      const { file, size } = await openForReading(target, path, sb);
      try {
        return await readWhole(file, size);
      } finally {
        await file.close();
      }
    });
    return { dataBase64: data.toString('base64') };
  });

  router.on('fs/writeFile', async (params) => {
    const url = parsePathUri(params.path);
    const decoded = decodeBase64(params.dataBase64);
    if (!decoded.ok) throw RpcError.invalidRequest(`fs/writeFile requires valid base64 dataBase64: ${decoded.message}`);
    const path = localPath(url);
    const sb = FsSandbox.fromRequest(params.sandbox);
    await io(async () => {
      if (!sb) return fsp.writeFile(path, decoded.bytes);
      const file = await openForWriting(sb, await resolveFor(sb, path, true), true);
      try {
        await writeFully(file, decoded.bytes, 0);
      } finally {
        await file.close();
      }
    });
    return {};
  });

  router.on('fs/createDirectory', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    // Omitted `recursive` means `mkdir -p`, as in the reference.
    const recursive = params.recursive ?? true;
    if (sb) await io(async () => mkdirChecked(sb, await resolveFor(sb, path, true), recursive));
    else if (recursive) await io(() => fsp.mkdir(path, { recursive: true }));
    else await io(() => fsp.mkdir(path));
    return {};
  });

  router.on('fs/getMetadata', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    const follow = params.followSymlinks !== false;
    return io(async () => {
      if (sb) sb.checkRead(follow ? await resolveFor(sb, path, true) : await resolveEntryFor(sb, path));
      return follow ? metadataFollowing(path) : metadataNotFollowing(path);
    });
  });

  router.on('fs/readDirectory', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    return { entries: await io(async () => (sb ? listDirectoryChecked(sb, await resolveFor(sb, path, true)) : listDirectory(path))) };
  });

  router.on('fs/canonicalize', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    const real = await io(async () => {
      if (sb) sb.checkRead(await resolveFor(sb, path, true));
      return fsp.realpath(path);
    });
    return { path: uriFromPath(real) };
  });

  router.on('fs/copy', async (params) => {
    const sourceUrl = parsePathUri(params.sourcePath);
    const destinationUrl = parsePathUri(params.destinationPath);
    const source = localPath(sourceUrl);
    const destination = localPath(destinationUrl);
    const sb = FsSandbox.fromRequest(params.sandbox);
    await io(async () => {
      const st = await fsp.lstat(source);
      if (st.isDirectory()) {
        if (!params.recursive) throw RpcError.invalidRequest('fs/copy requires recursive: true when sourcePath is a directory');
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
      if (!sb) return fsp.copyFile(source, destination);
      const from = await resolveFor(sb, source, true);
      sb.checkRead(from);
      const to = await resolveFor(sb, destination, true);
      await checkCreate(sb, to);
      return inParent(to, (child) => copyFileChecked(sb, from, child, to));
    });
    return {};
  });

  router.on('fs/remove', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    // Omitted flags mean `rm -rf`, as in the reference.
    const recursive = params.recursive ?? true;
    const force = params.force ?? true;
    await io(async () => {
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
    });
    return {};
  });

  router.on('fs/walk', async (params) => walk(parsePathUri(params.path), params.options, FsSandbox.fromRequest(params.sandbox)));

  router.on('fs/open', async (params, ctx) => {
    const url = parsePathUri(params.path);
    FileHandleTable.checkId(params.handleId);
    const sb = FsSandbox.fromRequest(params.sandbox);
    // A taken id is refused before the file is touched (a `replace` open must not truncate it).
    ctx.fileHandles.checkCanAdd(params.handleId);
    const path = localPath(url);
    const mode = params.mode ?? 'read';
    const file = await io(async () => {
      if (mode === 'replace') return sb ? openForWriting(sb, await resolveFor(sb, path, true), true) : fsp.open(path, 'w');
      let target = path;
      if (sb) {
        target = await resolveFor(sb, path, true);
        sb.checkRead(target);
      }
      return (await openForReading(target, path, sb)).file;
    });
    await ctx.fileHandles.add(params.handleId, file, mode);
    return { handleId: params.handleId };
  });

  router.on('fs/readBlock', async (params, ctx) => {
    FileHandleTable.checkId(params.handleId);
    if (params.len < 1 || params.len > MAX_READ_BLOCK_BYTES) {
      throw RpcError.invalidRequest(`file read block length must be between 1 and ${MAX_READ_BLOCK_BYTES}`);
    }
    const { file } = ctx.fileHandles.get(params.handleId);
    const bytes = await io(() => readFully(file, params.len, params.offset));
    return { chunk: bytes.toString('base64'), eof: bytes.length < params.len };
  });

  router.on('fs/writeBlock', async (params, ctx) => {
    const decoded = decodeBase64(params.chunk);
    if (!decoded.ok) throw RpcError.invalidParams(decoded.message);
    FileHandleTable.checkId(params.handleId);
    const { file } = ctx.fileHandles.get(params.handleId);
    await io(() => writeFully(file, decoded.bytes, params.offset));
    return {};
  });

  router.on('fs/close', async (params, ctx) => {
    FileHandleTable.checkId(params.handleId);
    await ctx.fileHandles.close(params.handleId);
    return {};
  });
}
