import { ErrorCode, type ParamsOf, type RequestMethod, type ResultOf } from '../protocol';
import { OutcomeUnknownError, RemoteError, UnsupportedError, WriteRejectedError } from './errors';
import type { HandleHost, ProcessHandleImpl } from './processHandle';
import type { CallOptions } from './types';

/** Bytes per `process/write`: keeps frames far below the 16 MiB limit after base64. */
const WRITE_PIECE = 1024 * 1024;
/** `starting` answers to a write are retried this many times, `STARTING_RETRY_MS` apart. */
const STARTING_RETRIES = 50;
const STARTING_RETRY_MS = 20;

/** What the process calls need of their client (./execServerClient.ts). */
export interface ProcessCallsClient {
  /** One call under the client's in-flight rules. */
  invoke<M extends RequestMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<ResultOf<M>>;
  /** The current connection's capabilities. */
  capabilities(): Readonly<Record<string, boolean>>;
  sleep(ms: number): Promise<void>;
  /** A new id, unique for this client within the session (`w`: a write). */
  nextId(kind: string): string;
  /** The handle is finished: the client drops it. */
  untrack(handle: ProcessHandleImpl): void;
}

/**
 * The calls a process handle makes through its client (`HandleHost`): stdin in pieces, each with
 * its own `writeId` and sent again while the process is still `starting`; ^C, terminate (asked
 * again when the answer was lost), resize, pause and acknowledgements.
 */
export class ProcessCalls implements HandleHost {
  constructor(private readonly client: ProcessCallsClient) {}

  async writeStdin(handle: ProcessHandleImpl, data: Buffer, options: CallOptions | undefined): Promise<void> {
    for (let offset = 0; offset < data.length; offset += WRITE_PIECE) {
      const piece = data.subarray(offset, offset + WRITE_PIECE);
      // One id per logical write, reused only when the same write is sent again after a reconnect.
      const writeId = this.client.nextId('w');
      for (let attempt = 0; ; attempt++) {
        let status;
        try {
          status = (
            await this.client.invoke('process/write', { processId: handle.processId, chunk: piece.toString('base64'), writeId }, options)
          ).status;
        } catch (e) {
          // The real server answers a write to an exited process's pipe with -32603.
          if (e instanceof RemoteError && e.code === ErrorCode.Internal) throw new WriteRejectedError(handle.processId, 'processExited');
          throw e;
        }
        if (status === 'accepted') break;
        if (status === 'starting' && attempt < STARTING_RETRIES) {
          await this.client.sleep(STARTING_RETRY_MS);
          continue;
        }
        throw new WriteRejectedError(handle.processId, status === 'starting' ? 'unknownProcess' : status);
      }
    }
  }

  async interrupt(handle: ProcessHandleImpl, options: CallOptions | undefined): Promise<void> {
    await this.client.invoke('process/signal', { processId: handle.processId, signal: 'interrupt' }, options);
  }

  async terminate(handle: ProcessHandleImpl, options: CallOptions | undefined): Promise<boolean> {
    const processId = handle.processId;
    try {
      return (await this.client.invoke('process/terminate', { processId }, options)).running;
    } catch (e) {
      // Killing twice is harmless; only the `running` answer of the lost call is unknown.
      if (e instanceof OutcomeUnknownError) return (await this.client.invoke('process/terminate', { processId }, options)).running;
      throw e;
    }
  }

  async resize(handle: ProcessHandleImpl, cols: number, rows: number, options: CallOptions | undefined): Promise<void> {
    if (!this.client.capabilities().processResize)
      throw new UnsupportedError('this exec-server cannot resize a PTY (no capability `processResize`)');
    if (!handle.tty) throw new UnsupportedError(`process ${handle.processId} has no PTY to resize`);
    await this.client.invoke('process/resize', { processId: handle.processId, cols, rows }, options);
  }

  canPause(): boolean {
    return this.client.capabilities().execBridgeProcessPause === true;
  }

  async holdOutput(handle: ProcessHandleImpl, paused: boolean): Promise<void> {
    await this.client.invoke(paused ? 'process/pause' : 'process/resume', { processId: handle.processId }, undefined);
  }

  async ackOutput(handle: ProcessHandleImpl, seq: number): Promise<void> {
    await this.client.invoke('process/ack', { processId: handle.processId, seq }, undefined);
  }

  async sandboxDeniedAfterExit(handle: ProcessHandleImpl, exitSeq: number): Promise<boolean> {
    try {
      return (await this.client.invoke('process/read', { processId: handle.processId, afterSeq: exitSeq })).sandboxDenied;
    } catch {
      return false;
    }
  }

  forget(handle: ProcessHandleImpl): void {
    this.client.untrack(handle);
  }
}
