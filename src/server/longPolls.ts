import { Deferred } from '../util';

/** Node timers overflow above 2^31-1 ms (and then fire at once): a longer wait goes in slices. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Long polls (`process/read` with `waitMs`): each waits until its condition holds or its time is
 * up; `wake` (new output, the exit, the close) makes every waiting poll look again.
 */
export class LongPolls {
  private waiters = new Set<() => void>();

  /** Resolves once `ready()` holds or `waitMs` has passed since the call. */
  async until(ready: () => boolean, waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (let round = 0; round < 1_000_000; round++) {
      const done = ready();
      const left = deadline - Date.now();
      if (done || left <= 0) return;
      const d = new Deferred<void>();
      const wake = () => d.resolve();
      this.waiters.add(wake);
      const timer = setTimeout(wake, Math.min(left, MAX_TIMER_MS));
      await d.promise;
      clearTimeout(timer);
      this.waiters.delete(wake);
    }
  }

  wake(): void {
    if (this.waiters.size === 0) return; // the common case on the output path: nobody long-polls
    const ws = this.waiters;
    this.waiters = new Set();
    for (const w of ws) w();
  }
}
