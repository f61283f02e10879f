import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ExecServerClient } from '../client';
import type { FsDirectoryEntry, FsMetadata } from '../protocol';
import { classifyFsError, ExecutorFsError } from './fsErrors';

/** Files up to this size are read with one `fs/readFile`; larger ones in blocks of this size (the servers' `fs/readBlock` bound). */
export const BLOCK_SIZE = 1024 * 1024;
/** Blocks of one file read or written at once (each up to 1.4 MB of base64 in flight). */
const BLOCKS_AHEAD = 4;

/** The fs calls the provider makes: the resilient client, or anything with its shape. */
export type FsClient = Pick<
  ExecServerClient,
  'readFile' | 'writeFile' | 'getMetadata' | 'readDirectory' | 'createDirectory' | 'copy' | 'remove' | 'call'
>;

export type FileKind = 'file' | 'directory' | 'other';

export interface FileStat {
  kind: FileKind;
  symlink: boolean;
  size: number;
  ctimeMs: number;
  mtimeMs: number;
}

function toStat(m: FsMetadata): FileStat {
  return {
    kind: m.isDirectory ? 'directory' : m.isFile ? 'file' : 'other',
    symlink: m.isSymlink,
    size: m.size,
    ctimeMs: m.createdAtMs || m.modifiedAtMs,
    mtimeMs: m.modifiedAtMs,
  };
}

/** Absolute, normalized POSIX path; a relative one is refused (the URI's path is always absolute). */
export function executorFilePath(path: string): string {
  if (!path.startsWith('/')) throw new ExecutorFsError('FileNotFound', `not an absolute path on the executor: ${path}`);
  const p = posix.normalize(path);
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

const uri = (p: string) => pathToFileURL(p).href;

/**
 * The file operations of `execbridge://` (docs/architecture.md), over `fs/*` only, so they work
 * against our server and `codex exec-server` alike. Neither has `fs/rename`: a rename is a copy
 * followed by a remove of the source (not atomic; said in the README). Big files go in 1 MiB blocks
 * through `fs/open` / `fs/readBlock` / `fs/writeBlock`, never as one giant frame.
 */
export class ExecutorFiles {
  constructor(private readonly client: () => Promise<FsClient>) {}

  async stat(path: string): Promise<FileStat> {
    const c = await this.client();
    return toStat(await c.getMetadata(executorFilePath(path)));
  }

  async readDirectory(path: string): Promise<FsDirectoryEntry[]> {
    const c = await this.client();
    const entries = await c.readDirectory(executorFilePath(path));
    return [...entries].sort((a, b) => (a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0));
  }

  async createDirectory(path: string): Promise<void> {
    const c = await this.client();
    const p = executorFilePath(path);
    const parent = posix.dirname(p);
    // VS Code wants FileNotFound for a missing parent and FileExists for an existing target.
    if (await this.exists(c, p)) throw new ExecutorFsError('FileExists', `${p} already exists`);
    if (!(await this.exists(c, parent))) throw new ExecutorFsError('FileNotFound', `${parent} does not exist`);
    await c.createDirectory(p, { recursive: false });
  }

  async readFile(path: string): Promise<Uint8Array> {
    const c = await this.client();
    const p = executorFilePath(path);
    const m = await c.getMetadata(p);
    if (m.isDirectory) throw new ExecutorFsError('FileIsADirectory', `${p} is a directory`);
    if (m.size <= BLOCK_SIZE) return c.readFile(p);
    return this.readBlocks(c, p, m.size);
  }

  /**
   * Handle ids are at most 32 bytes (both servers). Reads until `eof`; `sizeHint` only presizes the
   * work (the file may change meanwhile). Up to BLOCKS_AHEAD blocks are asked for at once within the
   * size the file had, so a remote executor costs about one round trip per BLOCKS_AHEAD blocks
   * instead of one per block (a server that answers one request at a time still has the next one
   * queued); beyond that size, one at a time.
   */
  private async readBlocks(c: FsClient, p: string, sizeHint: number): Promise<Uint8Array> {
    const handleId = `ebr-${randomUUID().slice(0, 24)}`;
    await c.call('fs/open', { handleId, path: uri(p), mode: 'read' });
    const parts: Buffer[] = [];
    let total = 0;
    /** Answers of the blocks asked for, in offset order (the first is at `total`). */
    let asked: Array<Promise<{ chunk: string; eof: boolean }>> = [];
    let next = 0;
    const ask = () => {
      const answer = c.call('fs/readBlock', { handleId, offset: next, len: BLOCK_SIZE });
      // One that is given up (after a short block or a failure) must not become unhandled.
      answer.catch(() => undefined);
      asked.push(answer);
      next += BLOCK_SIZE;
    };
    try {
      // Bounded by the file: each turn either reads a block or ends; a file that grows forever stops at 16× its size.
      for (let turn = 0; turn <= Math.ceil(sizeHint / BLOCK_SIZE) * 16 + 1; turn++) {
        while (asked.length === 0 || (asked.length < BLOCKS_AHEAD && next < sizeHint)) ask();
        const r = await asked.shift()!;
        const chunk = Buffer.from(r.chunk, 'base64');
        parts.push(chunk);
        total += chunk.length;
        if (r.eof || chunk.length === 0) break;
        if (chunk.length < BLOCK_SIZE) {
          // A short block before the end: the blocks asked beyond it start too late; go on from here.
          asked = [];
          next = total;
        }
      }
    } finally {
      await c.call('fs/close', { handleId }).catch(() => undefined);
    }
    return Buffer.concat(parts, total);
  }

  async writeFile(path: string, content: Uint8Array, options: { create: boolean; overwrite: boolean }): Promise<void> {
    const c = await this.client();
    const p = executorFilePath(path);
    const existing = await this.metadataOrUndefined(c, p);
    if (existing?.isDirectory) throw new ExecutorFsError('FileIsADirectory', `${p} is a directory`);
    if (!existing && !options.create) throw new ExecutorFsError('FileNotFound', `${p} does not exist`);
    if (existing && !options.overwrite) throw new ExecutorFsError('FileExists', `${p} already exists`);
    if (!existing && !(await this.exists(c, posix.dirname(p))))
      throw new ExecutorFsError('FileNotFound', `${posix.dirname(p)} does not exist`);
    const data = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    if (data.length <= BLOCK_SIZE) {
      await c.writeFile(p, data);
      return;
    }
    const handleId = `ebw-${randomUUID().slice(0, 24)}`;
    await c.call('fs/open', { handleId, path: uri(p), mode: 'replace' });
    // Like reads, a few blocks at once (each names its offset, so the order they land in does not matter).
    const writing: Promise<unknown>[] = [];
    try {
      for (let offset = 0; offset < data.length; offset += BLOCK_SIZE) {
        if (writing.length >= BLOCKS_AHEAD) await writing.shift();
        const chunk = data.subarray(offset, offset + BLOCK_SIZE).toString('base64');
        const written = c.call('fs/writeBlock', { handleId, offset, chunk });
        // Awaited in order below; one failing first must not leave the others unhandled.
        written.catch(() => undefined);
        writing.push(written);
      }
      for (const w of writing) await w;
    } finally {
      // Nothing of this file is still on its way when the handle closes (after a failure too).
      await Promise.allSettled(writing);
      await c.call('fs/close', { handleId }).catch(() => undefined);
    }
  }

  async delete(path: string, options: { recursive: boolean }): Promise<void> {
    const c = await this.client();
    const p = executorFilePath(path);
    if (p === '/') throw new ExecutorFsError('NoPermissions', 'refusing to delete / on the executor');
    const m = await c.getMetadata(p);
    if (m.isDirectory && !options.recursive && (await c.readDirectory(p)).length > 0) {
      throw new ExecutorFsError('Unknown', `${p} is a directory that is not empty`);
    }
    await c.remove(p, { recursive: m.isDirectory, force: false });
  }

  /** `fs/copy` (file, or a directory with `recursive`). */
  async copy(source: string, destination: string, options: { overwrite: boolean }): Promise<void> {
    const c = await this.client();
    const [src, dst] = [executorFilePath(source), executorFilePath(destination)];
    const m = await c.getMetadata(src);
    await this.clearDestination(c, src, dst, options.overwrite);
    await c.copy(src, dst, { recursive: m.isDirectory });
  }

  /** Copy, then remove the source: neither server has `fs/rename`. */
  async rename(source: string, destination: string, options: { overwrite: boolean }): Promise<void> {
    const c = await this.client();
    const [src, dst] = [executorFilePath(source), executorFilePath(destination)];
    if (src === dst) return;
    if (dst.startsWith(`${src}/`)) throw new ExecutorFsError('NoPermissions', `cannot move ${src} into itself`);
    const m = await c.getMetadata(src);
    await this.clearDestination(c, src, dst, options.overwrite);
    await c.copy(src, dst, { recursive: m.isDirectory });
    await c.remove(src, { recursive: m.isDirectory, force: false });
  }

  private async clearDestination(c: FsClient, src: string, dst: string, overwrite: boolean): Promise<void> {
    if (src === dst) throw new ExecutorFsError('FileExists', `${dst} is the source`);
    const existing = await this.metadataOrUndefined(c, dst);
    if (existing && !overwrite) throw new ExecutorFsError('FileExists', `${dst} already exists`);
    if (!(await this.exists(c, posix.dirname(dst)))) throw new ExecutorFsError('FileNotFound', `${posix.dirname(dst)} does not exist`);
    if (existing) await c.remove(dst, { recursive: existing.isDirectory, force: true });
  }

  private async metadataOrUndefined(c: FsClient, p: string): Promise<FsMetadata | undefined> {
    try {
      return await c.getMetadata(p);
    } catch (e) {
      if (classifyFsError(e).code === 'FileNotFound') return undefined;
      throw e;
    }
  }

  private async exists(c: FsClient, p: string): Promise<boolean> {
    return (await this.metadataOrUndefined(c, p)) !== undefined;
  }
}
