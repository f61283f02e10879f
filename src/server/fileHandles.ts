import type { FileHandle } from 'node:fs/promises';
import { RpcError } from '../rpc';

export type FileHandleMode = 'read' | 'replace';

export interface OpenFile {
  readonly file: FileHandle;
  readonly mode: FileHandleMode;
}

/** The reference refuses longer ids (-32600) on every handle method. */
export const MAX_HANDLE_ID_BYTES = 32;
const DEFAULT_MAX_HANDLES = 1024;

/**
 * A session's open files for `fs/open`/`readBlock`/`writeBlock`/`close`, keyed by the
 * client-chosen `handleId`. Bounded, so that a client cannot exhaust the server's descriptors;
 * `closeAll()` runs when the session ends.
 */
export class FileHandleTable {
  private readonly files = new Map<string, OpenFile>();
  private closed = false;

  constructor(private readonly maxHandles = DEFAULT_MAX_HANDLES) {}

  get size(): number {
    return this.files.size;
  }

  /** Refuses ids the reference refuses; call before touching the file system. */
  static checkId(handleId: string): void {
    if (Buffer.byteLength(handleId) > MAX_HANDLE_ID_BYTES) {
      throw RpcError.invalidRequest(`file handle ID must not exceed ${MAX_HANDLE_ID_BYTES} bytes`);
    }
  }

  /** Fails fast (before opening anything) when the id is taken or the table is full. */
  checkCanAdd(handleId: string): void {
    if (this.closed) throw RpcError.invalidRequest('the session is closed; its file handles are gone');
    if (this.files.has(handleId)) throw RpcError.invalidRequest(`file handle \`${handleId}\` already exists`);
    if (this.files.size >= this.maxHandles) {
      throw RpcError.invalidRequest(`too many open file handles (limit ${this.maxHandles}); close some with fs/close first`);
    }
  }

  /**
   * Takes ownership of an opened file. The checks are repeated because two `fs/open` calls with
   * the same id can race while their files are being opened; the loser's file is closed.
   */
  async add(handleId: string, file: FileHandle, mode: FileHandleMode): Promise<void> {
    try {
      this.checkCanAdd(handleId);
    } catch (e) {
      await file.close().catch(() => undefined);
      throw e;
    }
    this.files.set(handleId, { file, mode });
  }

  get(handleId: string): OpenFile {
    const f = this.files.get(handleId);
    if (!f) throw RpcError.notFound(`unknown file handle \`${handleId}\``);
    return f;
  }

  /** Closing an unknown (or already closed) id is fine, as in the reference. */
  async close(handleId: string): Promise<void> {
    const f = this.files.get(handleId);
    if (!f) return;
    this.files.delete(handleId);
    // FileHandle.close() waits for reads and writes still in flight on it.
    await f.file.close().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    const all = [...this.files.values()];
    this.files.clear();
    await Promise.all(all.map((f) => f.file.close().catch(() => undefined)));
  }
}
