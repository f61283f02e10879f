import type { Clock, TimerHandle } from '../util';
import type { McpTimings } from './serverContext';
import type { ServerLog } from './serverLog';
import { formatMs, type McpServerState } from './serverState';

/** `restart: onCrash` for one server: the count of automatic restarts, their back-off, the timer. */
export class RestartSchedule {
  private timer: TimerHandle | undefined;
  private attempts = 0;
  private readySince: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly timings: McpTimings,
    private readonly log: ServerLog,
  ) {}

  /** A start begins (a pending restart is dropped); returns its try number. A start by the user counts from 1 again. */
  beginStart(automatic: boolean): number {
    if (!automatic) this.attempts = 0;
    this.cancel();
    return this.attempts + 1;
  }

  markReady(now: number): void {
    this.readySince = now;
  }

  /**
   * After a crash: fills `restartAt` (and schedules `restart`) or `waitingForExecutor`, or says
   * that it gives up. A server that was ready for `stableMs` gets the full count again.
   */
  plan(state: Extract<McpServerState, { kind: 'crashed' }>, waitForExecutor: boolean, restart: () => void): void {
    const now = this.clock.now();
    if (this.readySince !== undefined && now - this.readySince >= this.timings.stableMs) this.attempts = 0;
    this.readySince = undefined;
    if (waitForExecutor) {
      // Not counted as a try: the server did nothing wrong.
      state.waitingForExecutor = true;
      this.log.lifecycle('will restart when the executor is available again');
      return;
    }
    const delays = this.timings.restartDelaysMs;
    if (this.attempts >= delays.length) {
      state.reason += ` — gave up after ${delays.length} automatic restarts`;
      return;
    }
    const delay = delays[this.attempts] ?? 1000;
    this.attempts++;
    state.restartAt = now + delay;
    this.log.lifecycle(`restarting in ${formatMs(delay)} (automatic restart ${this.attempts} of ${delays.length})`);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      restart();
    }, delay);
  }

  cancel(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
