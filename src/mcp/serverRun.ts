import type { Client } from '@modelcontextprotocol/client';
import { Deferred, DisposableStore } from '../util';
import type { ExecProcessTransport } from './execProcessTransport';
import type { RemoteMcpTransport } from './remoteTransport';
import type { McpExecutor } from './executorHost';

/** One start of a server, from `starting` to its final state: what it holds and who owns its end. */
export interface Run {
  readonly id: number;
  readonly abort: AbortController;
  executor?: McpExecutor;
  transport?: ExecProcessTransport | RemoteMcpTransport;
  sdk?: Client;
  /** Set once a stop was asked for: the stop owns the final state from then on. */
  stopping?: { reason: string; final: 'stopped' | 'crashed' };
  timedOut?: boolean;
  finalized: boolean;
  /** Resolved when the run is ready or final: what `start()` callers wait for. */
  readonly settled: Deferred<void>;
  /** Resolved when the run reached its final state. */
  readonly done: Deferred<void>;
  readonly subscriptions: DisposableStore;
}

/** Aborts with this reason when a stop interrupts a start (so the start knows not to report it). */
export class StopRequested extends Error {}

let runCounter = 0;

export function newRun(): Run {
  return {
    id: ++runCounter,
    abort: new AbortController(),
    finalized: false,
    settled: new Deferred<void>(),
    done: new Deferred<void>(),
    subscriptions: new DisposableStore(),
  };
}

/** Between the steps of a start: a stop asked for meanwhile ends it here. */
export function throwIfStopped(run: Run): void {
  if (run.stopping || run.abort.signal.aborted) throw run.abort.signal.reason ?? new StopRequested('stopped');
}

/** Closes the SDK client, then the transport, and waits until the process end is known (or given up on). */
export async function closeRun(run: Run): Promise<void> {
  if (run.sdk) await run.sdk.close().catch(() => undefined);
  if (run.transport) {
    await run.transport.close();
    await run.transport.closed;
  }
}
