import { constants as fsConstants, type BigIntStats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { BinaryResult, type FsDirectoryEntry, type FsMetadata } from '../protocol';
import { RpcError } from '../rpc';
import { errnoError, openDirectory, realPathOfHandle, type FsSandbox } from './fsSandbox';

/* The reading side of `fs/*`: metadata, directory listings, whole files and blocks. */

/** The reference refuses to read bigger files whole (-32600). */
const MAX_READ_FILE_BYTES = 512 * 1024 * 1024;
/**
 * Below the reference's bound, but a JS string (the base64 text, then the JSON frame) cannot hold
 * much more; bigger files must be read in blocks.
 */
const MAX_READ_FILE_BYTES_HERE = 256 * 1024 * 1024;
export const MAX_READ_BLOCK_BYTES = 1024 * 1024;
/** `fs/readFile` reads in chunks (multiples of 8 bytes: /proc/self/pagemap refuses anything else). */
const FIRST_READ_CHUNK = 64 * 1024;
const READ_CHUNK = 1024 * 1024;
/** Parallel stats while listing a directory (ordered results; bounded so a huge directory cannot flood the thread pool). */
const STAT_BATCH = 64;

/** Milliseconds since the epoch, truncated, or 0 before it (Rust's `duration_since` fails then). */
function unixMs(ns: bigint): number {
  return ns < 0n ? 0 : Number(ns / 1_000_000n);
}

export async function metadataFollowing(path: string): Promise<FsMetadata> {
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
export async function metadataNotFollowing(path: string): Promise<FsMetadata> {
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
export async function listDirectory(path: string): Promise<FsDirectoryEntry[]> {
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
export async function listDirectoryChecked(sb: FsSandbox, real: string): Promise<FsDirectoryEntry[]> {
  sb.checkRead(real);
  const dir = await openDirectory(real);
  try {
    sb.checkRead(dir.real);
    return await listDirectory(dir.path);
  } finally {
    await dir.close();
  }
}

export async function readFully(file: fsp.FileHandle, len: number, position: number): Promise<Buffer> {
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

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

export async function metadataOfAll(paths: string[]): Promise<Array<Outcome<FsMetadata>>> {
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
 * Reads a whole regular file from an open handle, counting the bytes actually read: procfs and
 * sysfs files report size 0 but can be endless (/proc/self/pagemap), so `stat` alone bounds nothing.
 */
export async function readWhole(file: fsp.FileHandle, size: number, headroom = 0): Promise<BinaryResult> {
  if (size > MAX_READ_FILE_BYTES) throw RpcError.invalidRequest(`file is too large to read: limit is ${MAX_READ_FILE_BYTES} bytes`);
  if (size > MAX_READ_FILE_BYTES_HERE) throw tooLargeHere(`${size} bytes`);
  const chunks: Buffer[] = [];
  let total = 0;
  if (size > READ_CHUNK) {
    // A large file of known size goes straight into one buffer (concatenating 1 MiB chunks was a
    // second full copy, ~1/3 of a 64 MiB read's server time), after `headroom` free bytes where a
    // binary frame's header goes (copying it into a frame was another). Whatever follows the stat
    // size is read below.
    const whole = Buffer.allocUnsafeSlow(headroom + size);
    const buf = whole.subarray(headroom);
    while (total < size) {
      const { bytesRead } = await file.read(buf, total, size - total, null);
      if (bytesRead === 0) return new BinaryResult(buf.subarray(0, total), headroom);
      total += bytesRead;
    }
    // One byte past the stat size: did it grow after the stat?
    const probe = Buffer.allocUnsafe(1);
    if ((await file.read(probe, 0, 1, null)).bytesRead === 0) return new BinaryResult(buf, headroom);
    // It did: the probed byte and the rest follow.
    chunks.push(buf, probe);
    total += 1;
  }
  let chunk = size > 0 && total === 0 ? Math.min(Math.max(size + 1, FIRST_READ_CHUNK), READ_CHUNK) : FIRST_READ_CHUNK;
  const maxReads = Math.ceil(MAX_READ_FILE_BYTES_HERE / FIRST_READ_CHUNK) + 2;
  for (let reads = 0; reads < maxReads; reads++) {
    const buf = Buffer.allocUnsafe(chunk);
    // Sequential reads (position null): some pseudo-files do not support positioned ones.
    const { bytesRead } = await file.read(buf, 0, chunk, null);
    if (bytesRead === 0) return new BinaryResult(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
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
export async function openForReading(
  path: string,
  shownPath: string,
  sb: FsSandbox | undefined,
): Promise<{ file: fsp.FileHandle; size: number }> {
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
