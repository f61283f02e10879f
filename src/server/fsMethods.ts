import * as fsp from 'node:fs/promises';
import { BINARY_RESULT_HEADROOM } from '../protocol';
import { RpcError, type Router } from '../rpc';
import { FileHandleTable } from './fileHandles';
import { io, localPath, parsePathUri, resolveEntryFor, resolveFor, toPath } from './fsPaths';
import {
  listDirectory,
  listDirectoryChecked,
  MAX_READ_BLOCK_BYTES,
  metadataFollowing,
  metadataNotFollowing,
  openForReading,
  readFully,
  readWhole,
} from './fsRead';
import { FsSandbox } from './fsSandbox';
import { copyEntry, removeEntry } from './fsTree';
import { walk } from './fsWalk';
import { mkdirChecked, openForWriting, openRegularForWriting, writeFully, writeWholeFile } from './fsWrite';
import { decodeBase64 } from './rustCompat';
import { uriFromPath } from './uri';

/**
 * The `fs/*` methods, matching `codex exec-server` 0.171.0 (docs/protocol.md §6) down to
 * error codes and messages: missing path → -32004, permission denied / invalid input → -32600,
 * other OS errors → -32603 `<description> (os error N)`. Behaviours below that the reference
 * doc does not spell out were observed on the real binary. A request's `sandbox` is enforced by
 * ./fsSandbox.ts: every path is checked (as a real path) against the layout that sandbox gives a
 * command, and the operation runs on directories opened by those real paths.
 *
 * Here: the method table. Paths and errors: ./fsPaths.ts; reads: ./fsRead.ts; writes: ./fsWrite.ts;
 * copy and remove: ./fsTree.ts; walk: ./fsWalk.ts.
 */
export interface FsContext {
  fileHandles: FileHandleTable;
  /** Waits for room to build an answer of that many bytes (./connection.ts, the answer budget). */
  reserveAnswer?(dataBytes: number): Promise<void>;
}

export function registerFsMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  registerReadMethods(router);
  registerChangeMethods(router);
  registerHandleMethods(router);
}

/** Whole-file reads and what a path is: `readFile`, `getMetadata`, `readDirectory`, `canonicalize`, `walk`. */
function registerReadMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  router.on('fs/readFile', async (params, ctx) => {
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
        await ctx.reserveAnswer?.(size);
        return await readWhole(file, size, BINARY_RESULT_HEADROOM);
      } finally {
        await file.close();
      }
    });
    // JSON-encoded as {dataBase64}; sent as raw bytes to a client with binary frames (src/protocol/binaryOutput.ts).
    return data;
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

  router.on('fs/walk', async (params) => walk(parsePathUri(params.path), params.options, FsSandbox.fromRequest(params.sandbox)));
}

/** Changes by path: `writeFile`, `createDirectory`, `copy`, `remove`. */
function registerChangeMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  router.on('fs/writeFile', async (params) => {
    const url = parsePathUri(params.path);
    const decoded = decodeBase64(params.dataBase64);
    if (!decoded.ok) throw RpcError.invalidRequest(`fs/writeFile requires valid base64 dataBase64: ${decoded.message}`);
    const path = localPath(url);
    const sb = FsSandbox.fromRequest(params.sandbox);
    await io(async () => {
      if (!sb) return writeWholeFile(path, decoded.bytes);
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

  router.on('fs/copy', async (params) => {
    const sourceUrl = parsePathUri(params.sourcePath);
    const destinationUrl = parsePathUri(params.destinationPath);
    const source = localPath(sourceUrl);
    const destination = localPath(destinationUrl);
    const sb = FsSandbox.fromRequest(params.sandbox);
    await io(() => copyEntry(source, destination, params.recursive, sb));
    return {};
  });

  router.on('fs/remove', async (params) => {
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    // Omitted flags mean `rm -rf`, as in the reference.
    const recursive = params.recursive ?? true;
    const force = params.force ?? true;
    await io(() => removeEntry(path, recursive, force, sb));
    return {};
  });
}

/** Open files by handle id (./fileHandles.ts): `open`, `readBlock`, `writeBlock`, `close`. */
function registerHandleMethods<Ctx extends FsContext>(router: Router<Ctx>): void {
  router.on('fs/open', async (params, ctx) => {
    const url = parsePathUri(params.path);
    FileHandleTable.checkId(params.handleId);
    const sb = FsSandbox.fromRequest(params.sandbox);
    // A taken id is refused before the file is touched (a `replace` open must not truncate it).
    ctx.fileHandles.checkCanAdd(params.handleId);
    const path = localPath(url);
    const mode = params.mode ?? 'read';
    const file = await io(async () => {
      if (mode === 'replace')
        return sb
          ? openForWriting(sb, await resolveFor(sb, path, true), true)
          : openRegularForWriting(path, path, { noFollow: false, truncate: true });
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
