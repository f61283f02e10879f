/**
 * Which requests of one connection may run now. A request whose answer can be large (file
 * contents, retained output, HTTP bodies) is a "bulky" one: a few of each kind run at once, and
 * none starts while the connection's outgoing buffer is over its high-water mark. So a client that
 * sends hundreds of `fs/readFile` and reads no answer costs the server a few answers' worth of
 * memory, not hundreds. Other requests (small answers) always run at once.
 */
export const BULKY_METHODS: Readonly<Record<string, string>> = {
  'fs/readFile': 'files',
  'fs/readBlock': 'files',
  'fs/readDirectory': 'files',
  'fs/walk': 'files',
  'process/read': 'reads',
  'http/request': 'http',
};

/** How many bulky requests of each kind may be in progress on one connection. */
export const BULKY_LIMITS: Readonly<Record<string, number>> = { files: 4, reads: 32, http: 8 };

interface Waiter {
  kind: string;
  go(): void;
}

export class Admission {
  private readonly running = new Map<string, number>();
  private waiting: Waiter[] = [];
  private pumpScheduled = false;
  private closed = false;

  constructor(
    /** True while nothing bulky may start (the connection is congested). */
    private readonly blocked: () => boolean,
    private readonly limits: Readonly<Record<string, number>> = BULKY_LIMITS,
    private readonly kinds: Readonly<Record<string, string>> = BULKY_METHODS,
  ) {}

  get waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with a release function once `method` may run (at once for a small one). The
   * release must be called when its answer has been handed to the transport.
   */
  enter(method: string): Promise<() => void> | undefined {
    const kind = this.kinds[method];
    if (kind === undefined) return undefined;
    return new Promise((resolve) => {
      this.waiting.push({ kind, go: () => resolve(this.releaser(kind)) });
      this.pump();
    });
  }

  /** Starts what may start now (call when the congestion clears). */
  pump(): void {
    const still: Waiter[] = [];
    for (const w of this.waiting) {
      const n = this.running.get(w.kind) ?? 0;
      if (!this.closed && (this.blocked() || n >= (this.limits[w.kind] ?? 1))) {
        still.push(w);
        continue;
      }
      this.running.set(w.kind, n + 1);
      w.go();
    }
    this.waiting = still;
  }

  /** The connection ended: everything waiting runs (and finds the connection closed). */
  close(): void {
    this.closed = true;
    this.pump();
  }

  private releaser(kind: string): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running.set(kind, (this.running.get(kind) ?? 1) - 1);
      // On a later turn: the answer this frees must be counted as buffered before the next starts.
      if (this.pumpScheduled || this.waiting.length === 0) return;
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    };
  }
}
