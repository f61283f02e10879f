import { constants as fsConstants, type BigIntStats, type Dirent } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { FsDirectoryEntry, FsMetadata, FsWalkEntry, FsWalkOptions, FsWalkResult } from '../protocol/fs';
import { RpcError } from '../rpc/errors';
import type { Router } from '../rpc/router';
import { FileHandleTable } from './fileHandles';
import { isWithin } from './sandbox/policy';
import { decodeBase64, describeIoError, ioErrorToRpc } from './rustCompat';
import { uriFromPath } from './uri';

/**
 * The `fs/*` methods, matching `codex exec-server` 0.171.0 (docs/protocol.md §6) down to
 * error codes and messages: missing path → -32004, permission denied / invalid input → -32600,
 * other OS errors → -32603 `<description> (os error N)`. Behaviours below that the reference
 * doc does not spell out were observed on the real binary.
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

function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
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
async function walk(rootUrl: URL, options: FsWalkOptions): Promise<FsWalkResult> {
  if (options.maxDirectories === 0 || options.maxEntries === 0) throw RpcError.invalidRequest('filesystem walk limits must be greater than zero');
  if (options.maxDepth > MAX_WALK_DEPTH || options.maxDirectories > MAX_WALK_DIRECTORIES || options.maxEntries > MAX_WALK_ENTRIES) {
    throw RpcError.invalidRequest(
      `filesystem walk limits exceed maximums: depth=${MAX_WALK_DEPTH}, directories=${MAX_WALK_DIRECTORIES}, entries=${MAX_WALK_ENTRIES}`,
    );
  }
  const rootPath = localPath(rootUrl);
  const follow = options.followDirectorySymlinks;
  const outcome: FsWalkResult = { entries: [], errors: [], truncated: false };
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
      listing = await listDirectory(next.path);
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

export function registerFsMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  router.on('fs/readFile', async (params) => {
    const path = toPath(params.path);
    const data = await io(async () => {
      const st = await fsp.stat(path);
      if (!st.isFile()) throw RpcError.invalidRequest(`path \`${path}\` is not a file`);
      if (st.size > MAX_READ_FILE_BYTES) throw RpcError.invalidRequest(`file is too large to read: limit is ${MAX_READ_FILE_BYTES} bytes`);
      if (st.size > MAX_READ_FILE_BYTES_HERE) {
        throw RpcError.internal(
          `file is too large to return in one message (${st.size} bytes; this server's limit is ${MAX_READ_FILE_BYTES_HERE} bytes, and clients usually accept frames of 16 MiB): read it in blocks with fs/open and fs/readBlock`,
        );
      }
      return fsp.readFile(path);
    });
    return { dataBase64: data.toString('base64') };
  });

  router.on('fs/writeFile', async (params) => {
    const url = parsePathUri(params.path);
    const decoded = decodeBase64(params.dataBase64);
    if (!decoded.ok) throw RpcError.invalidRequest(`fs/writeFile requires valid base64 dataBase64: ${decoded.message}`);
    const path = localPath(url);
    await io(() => fsp.writeFile(path, decoded.bytes));
    return {};
  });

  router.on('fs/createDirectory', async (params) => {
    const path = toPath(params.path);
    // Omitted `recursive` means `mkdir -p`, as in the reference.
    if (params.recursive ?? true) await io(() => fsp.mkdir(path, { recursive: true }));
    else await io(() => fsp.mkdir(path));
    return {};
  });

  router.on('fs/getMetadata', async (params) => {
    const path = toPath(params.path);
    return io(() => (params.followSymlinks === false ? metadataNotFollowing(path) : metadataFollowing(path)));
  });

  router.on('fs/readDirectory', async (params) => {
    const path = toPath(params.path);
    return { entries: await io(() => listDirectory(path)) };
  });

  router.on('fs/canonicalize', async (params) => {
    const path = toPath(params.path);
    return { path: uriFromPath(await io(() => fsp.realpath(path))) };
  });

  router.on('fs/copy', async (params) => {
    const sourceUrl = parsePathUri(params.sourcePath);
    const destinationUrl = parsePathUri(params.destinationPath);
    const source = localPath(sourceUrl);
    const destination = localPath(destinationUrl);
    await io(async () => {
      const st = await fsp.lstat(source);
      if (st.isDirectory()) {
        if (!params.recursive) throw RpcError.invalidRequest('fs/copy requires recursive: true when sourcePath is a directory');
        if (isWithin(await resolveExisting(destination), await fsp.realpath(source))) {
          throw RpcError.invalidRequest('fs/copy cannot copy a directory to itself or one of its descendants');
        }
        await copyDirectory(source, destination);
      } else if (st.isSymbolicLink()) {
        await copySymlink(source, destination);
      } else if (st.isFile()) {
        await fsp.copyFile(source, destination);
      } else {
        throw RpcError.invalidRequest('fs/copy only supports regular files, directories, and symlinks');
      }
    });
    return {};
  });

  router.on('fs/remove', async (params) => {
    const path = toPath(params.path);
    // Omitted flags mean `rm -rf`, as in the reference.
    const recursive = params.recursive ?? true;
    const force = params.force ?? true;
    await io(async () => {
      let st;
      try {
        st = await fsp.lstat(path);
      } catch (e) {
        if (force && isErrno(e, 'ENOENT')) return;
        throw e;
      }
      if (!st.isDirectory()) await fsp.unlink(path);
      else if (recursive) await fsp.rm(path, { recursive: true });
      else await fsp.rmdir(path);
    });
    return {};
  });

  router.on('fs/walk', async (params) => walk(parsePathUri(params.path), params.options));

  router.on('fs/open', async (params, ctx) => {
    const url = parsePathUri(params.path);
    FileHandleTable.checkId(params.handleId);
    // A taken id is refused before the file is touched (a `replace` open must not truncate it).
    ctx.fileHandles.checkCanAdd(params.handleId);
    const path = localPath(url);
    const mode = params.mode ?? 'read';
    const file = await io(async () => {
      if (mode === 'replace') return fsp.open(path, 'w');
      // Checked before opening: opening a FIFO for reading would block.
      if (!(await fsp.stat(path)).isFile()) throw RpcError.invalidRequest(`path \`${path}\` is not a file`);
      return fsp.open(path, fsConstants.O_RDONLY);
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
