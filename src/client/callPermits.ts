import { AbortedError } from './errors';

export interface Permit {
  release(): void;
}

interface Waiter {
  cleanup: boolean;
  grant(permit: Permit): void;
  fail(error: unknown): void;
}

/**
 * Bounds the calls one client has on the wire: `regular` permits for ordinary calls plus one
 * reserved permit that only cleanup calls (`process/terminate`, `fs/close`) may take, so that
 * teardown is never queued behind a full window of stuck calls. A permit is held from send until
 * the answer (or final failure); waiters are served first come, first served.
 */
export class Admission {
  private regularInUse = 0;
  private reservedInUse = false;
  private readonly waiters: Waiter[] = [];
  private failure: unknown;
  private peak = 0;

  constructor(private readonly regular: number) {}

  /** Calls holding a permit right now. */
  get inFlight(): number {
    return this.regularInUse + (this.reservedInUse ? 1 : 0);
  }

  /** Highest `inFlight` seen. */
  get peakInFlight(): number {
    return this.peak;
  }

  /** Waiters that want a cleanup permit and cannot get one. */
  get cleanupWaiting(): number {
    return this.waiters.filter((w) => w.cleanup).length;
  }

  acquire(cleanup: boolean, signal: AbortSignal | undefined, method: string): Promise<Permit> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (signal?.aborted) return Promise.reject(new AbortedError(method, { cause: signal.reason }));
    const now = this.tryTake(cleanup);
    if (now) return Promise.resolve(now);
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new AbortedError(method, { cause: signal?.reason }));
      };
      const waiter: Waiter = {
        cleanup,
        grant: (p) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(p);
        },
        fail: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Rejects every waiter and every later `acquire` with `error` (the client failed). */
  failAll(error: unknown): void {
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.fail(error);
  }

  private tryTake(cleanup: boolean): Permit | undefined {
    if (this.regularInUse < this.regular) {
      this.regularInUse++;
      this.notePeak();
      return this.permit(false);
    }
    if (cleanup && !this.reservedInUse) {
      this.reservedInUse = true;
      this.notePeak();
      return this.permit(true);
    }
    return undefined;
  }

  private notePeak(): void {
    this.peak = Math.max(this.peak, this.inFlight);
  }

  private permit(reserved: boolean): Permit {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        if (reserved) this.reservedInUse = false;
        else this.regularInUse--;
        this.pump();
      },
    };
  }

  private pump(): void {
    // FIFO; a cleanup waiter may pass regular waiters when only the reserved permit is free.
    for (let i = 0; i < this.waiters.length;) {
      const w = this.waiters[i]!;
      const p = this.tryTake(w.cleanup);
      if (!p) {
        i++;
        continue;
      }
      this.waiters.splice(i, 1);
      w.grant(p);
    }
  }
}
