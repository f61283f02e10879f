import {
  decodeBinaryOutput,
  ErrorCode,
  ProcessClosedNotification,
  ProcessExitedNotification,
  ProcessReadResult,
  SANDBOX_BLOCKED,
  SandboxBlockedNotification,
} from '../protocol';
import { RpcError, type RpcPeer } from '../rpc';
import { NotStartedError, OutputLostError, type DisconnectedError } from './errors';
import type { ProcessHandleImpl } from './processHandle';

/** Catch-up reads in parallel after a resume. */
const CATCH_UP_PARALLEL = 8;

/**
 * The processes a client tracks, by id: where server notifications land, what a resume brings up
 * to date, and what a failed client fails. Finished processes are dropped by their handles.
 */
export class ProcessTable {
  private readonly handles = new Map<string, ProcessHandleImpl>();

  get(processId: string): ProcessHandleImpl | undefined {
    return this.handles.get(processId);
  }
  has(processId: string): boolean {
    return this.handles.has(processId);
  }
  get size(): number {
    return this.handles.size;
  }
  add(handle: ProcessHandleImpl): void {
    this.handles.set(handle.processId, handle);
  }
  /** Drops `handle` if it is still the one tracked under its id. */
  forget(handle: ProcessHandleImpl): void {
    if (this.handles.get(handle.processId) === handle) this.handles.delete(handle.processId);
  }

  /** A server notification: routed to the handle it names (unknown ones are dropped). */
  dispatch(method: string, params: unknown): void {
    const p = params as Record<string, unknown> | undefined;
    const handle = typeof p?.processId === 'string' ? this.handles.get(p.processId) : undefined;
    if (!handle) return; // unknown, finished, or started by another client of the session
    switch (method) {
      case 'process/output': {
        // Hot path: checked by hand instead of through zod.
        const { seq, stream, chunk } = p as { seq: unknown; stream: unknown; chunk: unknown };
        if (typeof seq !== 'number' || typeof chunk !== 'string' || (stream !== 'stdout' && stream !== 'stderr' && stream !== 'pty'))
          return;
        handle.receive({ type: 'output', seq, stream, data: Buffer.from(chunk, 'base64') });
        return;
      }
      case 'process/exited': {
        const n = ProcessExitedNotification.safeParse(params);
        if (!n.success) return;
        handle.receive(
          {
            type: 'exited',
            seq: n.data.seq,
            exitCode: n.data.exitCode,
            sandboxDenied: n.data.sandboxDenied ?? false,
            ...(n.data.sandboxDeniedTarget ? { sandboxDeniedTarget: n.data.sandboxDeniedTarget } : {}),
          },
          n.data.sandboxDenied === undefined,
        );
        return;
      }
      case SANDBOX_BLOCKED: {
        const n = SandboxBlockedNotification.safeParse(params);
        if (n.success) handle.receiveBlocked(n.data.target, n.data.reason);
        return;
      }
      case 'process/closed': {
        const n = ProcessClosedNotification.safeParse(params);
        if (!n.success) return;
        handle.receive({ type: 'closed', seq: n.data.seq ?? handle.orderer.seqForUnnumberedClosed() });
        return;
      }
      default:
        return;
    }
  }

  /** A binary output frame: the same as a `process/output` notification, without base64. */
  dispatchBinary(frame: Buffer): void {
    const out = decodeBinaryOutput(frame);
    if (!out) return;
    const handle = this.handles.get(out.processId);
    if (handle) handle.receive({ type: 'output', seq: out.seq, stream: out.stream, data: out.data });
  }

  /** Starts whose answer died with connection generation `gen`: recovery must ask the server about them. */
  markStartsLost(gen: number): void {
    for (const h of this.handles.values()) {
      if (h.phase === 'starting' && h.startGen === gen) {
        h.phase = 'startLost';
        void h.awaitAdoption();
      }
    }
  }

  /**
   * Before declaring the connection recovered: `process/read afterSeq=<last published>` for every
   * live process, merged with the live notifications already flowing on the new connection. Lost
   * starts are adopted (or fail cleanly); evicted output fails only its own process.
   */
  async catchUp(peer: RpcPeer, continueSpool?: (h: ProcessHandleImpl, afterSeq: number) => void): Promise<void> {
    const targets = [...this.handles.values()].filter((h) => !h.isFinished && (h.phase === 'started' || h.phase === 'startLost'));
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const h = targets[next++]!;
        if (h.spoolReplay) {
          // Its replay reads on (its read is sent again on this connection) and catches up.
          h.reassertPause();
          continue;
        }
        const afterSeq = h.orderer.lastPublished;
        let raw: unknown;
        try {
          const room = continueSpool ? h.creditRoom : undefined;
          raw = await peer.request('process/read', {
            processId: h.processId,
            afterSeq,
            ...(room !== undefined ? { execBridgeSpoolMaxBytes: room } : {}),
          });
        } catch (e) {
          if (e instanceof RpcError && e.code === ErrorCode.InvalidRequest) {
            // `unknown process id`.
            if (h.phase === 'startLost') {
              h.adoption?.reject(new NotStartedError(h.processId));
              this.forget(h);
            } else {
              h.fail(new OutputLostError(h.processId, afterSeq + 1, undefined));
            }
            continue;
          }
          throw e;
        }
        const read = ProcessReadResult.safeParse(raw);
        if (!read.success) throw new Error(`unexpected process/read result for ${h.processId}`);
        if (h.phase === 'startLost') {
          h.phase = 'started';
          h.adoption?.resolve({ processId: h.processId });
        }
        // A server that spools answers what the window no longer holds page by page (`execBridgeSpooled`):
        // this first page now, the rest as the consumer draws (after the recovery).
        if (read.data.execBridgeSpooled && continueSpool) {
          const o = h.orderer.mergeSpooled(read.data, false);
          h.publish(o.events);
          if (o.lost) h.fail(new OutputLostError(h.processId, o.lost.fromSeq, o.lost.toSeq));
          else {
            continueSpool(h, read.data.nextSeq - 1);
            h.reassertPause();
          }
          continue;
        }
        const outcome = h.orderer.mergeRead(read.data);
        h.publish(outcome.events);
        if (outcome.lost) h.fail(new OutputLostError(h.processId, outcome.lost.fromSeq, outcome.lost.toSeq));
        // Not awaited: it goes out once the recovered connection takes calls.
        else h.reassertPause();
      }
    };
    await Promise.all(Array.from({ length: Math.min(CATCH_UP_PARALLEL, targets.length) }, worker));
  }

  /** The client failed: every handle ends with `error` and none is tracked any more. */
  failAll(error: DisconnectedError): void {
    for (const h of [...this.handles.values()]) h.fail(error);
    this.handles.clear();
  }
}
