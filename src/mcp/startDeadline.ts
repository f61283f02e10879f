import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Clock, TimerHandle } from '../util';
import type { Run } from './serverRun';
import { formatMs } from './serverState';

/**
 * A start's time limit (`startupTimeoutMs`, for initialize and the list requests) and the signal of
 * its requests. Those follow the run's abort only until the server is ready: the SDK never removes
 * its abort listeners, so a later stop would "cancel" initialize and the list requests answered
 * long before (notifications to a server that is going away, and on an http server, requests cut
 * off by the close: error lines in a normal stop's log).
 */
export class StartDeadline {
  /** The options of every request of the start. */
  readonly request: RequestOptions;
  private timer: TimerHandle | undefined;
  private readonly forward: () => void;

  constructor(
    private readonly run: Run,
    private readonly clock: Clock,
    timeoutMs: number,
  ) {
    this.timer = clock.setTimeout(() => {
      run.timedOut = true;
      run.abort.abort(new Error(`did not become ready within ${formatMs(timeoutMs)}`));
    }, timeoutMs);
    const startAbort = new AbortController();
    const forward = () => startAbort.abort(run.abort.signal.reason);
    this.forward = forward;
    if (run.abort.signal.aborted) forward();
    else run.abort.signal.addEventListener('abort', forward, { once: true });
    run.subscriptions.add({ dispose: () => run.abort.signal.removeEventListener('abort', forward) });
    this.request = { signal: startAbort.signal, timeout: timeoutMs, maxTotalTimeout: timeoutMs };
  }

  /** The server is ready: the limit is met, and a stop no longer reaches the start's requests. */
  met(): void {
    this.clear();
    this.run.abort.signal.removeEventListener('abort', this.forward);
  }

  /** The start ended (ready or failed): no timeout fires any more. */
  clear(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
