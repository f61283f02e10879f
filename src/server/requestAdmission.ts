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

/**
 * Bytes held at once for one purpose, counted by whoever holds them; `take` refuses what would go
 * over the limit. What a connection's unfinished requests hold (process/write data, fs/writeFile
 * contents), per connection and per server.
 */
export class ByteMeter {
  private held = 0;

  constructor(readonly limit: number) {}

  get heldBytes(): number {
    return this.held;
  }

  /** Counts `bytes` unless that would pass the limit (then false, nothing counted). */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  /** Counts `bytes` whatever the limit (a small request is always let in). */
  add(bytes: number): void {
    this.held += bytes;
  }

  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }
}

interface BudgetWaiter {
  bytes: number;
  ready: () => boolean;
  go(release: () => void): void;
}

/**
 * Bytes a server spends at once on answers being built (a 250 MiB file read whole is 250 MiB, and
 * 583 MiB as base64 JSON): shared by its connections. Waiters are served in arrival order among the
 * ready ones (a waiter is not ready while its own connection is congested: it would only add to what
 * that client does not read); one that does not fit holds back those behind it, so a large answer is
 * not starved by small ones. An answer larger than the whole budget runs alone: it waits, it is never
 * refused.
 */
export class ByteBudget {
  private used = 0;
  private waiting: BudgetWaiter[] = [];
  private pumpScheduled = false;

  constructor(readonly limit: number) {}

  get usedBytes(): number {
    return this.used;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with a release function once `bytes` may be spent and `ready()` holds; rejects when
   * `signal` aborts first (the connection ended). Call the release once the answer is handed on.
   */
  acquire(bytes: number, ready: () => boolean = () => true, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error('aborted'));
    return new Promise((resolve, reject) => {
      const waiter: BudgetWaiter = {
        bytes,
        ready,
        go: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        this.waiting = this.waiting.filter((w) => w !== waiter);
        reject(new Error('aborted'));
        this.pump();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.pump();
    });
  }

  /** Grants what may be granted now (call when a waiter may have become ready: its connection drained). */
  pump(): void {
    const still: BudgetWaiter[] = [];
    let full = false;
    for (const w of this.waiting) {
      if (full || !w.ready()) {
        still.push(w);
        continue;
      }
      if (this.used > 0 && this.used + w.bytes > this.limit) {
        full = true;
        still.push(w);
        continue;
      }
      this.used += w.bytes;
      w.go(this.releaser(w.bytes));
    }
    this.waiting = still;
  }

  private releaser(bytes: number): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.used -= bytes;
      // On a later turn: the answer just handed on must be counted as its connection's buffered
      // bytes before that connection's next waiter is asked whether it is ready.
      if (this.pumpScheduled || this.waiting.length === 0) return;
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    };
  }
}

/** A connection's unfinished requests may hold this much (their JSON text), the server's all together this. */
export const CONNECTION_REQUEST_BYTES = 64 * 1024 * 1024;
export const SERVER_REQUEST_BYTES = 256 * 1024 * 1024;
/** Requests this small are always let in (terminate, pause, ack, status: how a client gets out of trouble). */
export const SMALL_REQUEST_BYTES = 4096;
/** Answers being built at once, server-wide; answers of less data than `ANSWER_RESERVE_MIN` do not count. */
export const SERVER_ANSWER_BYTES = 512 * 1024 * 1024;
export const ANSWER_RESERVE_MIN = 1024 * 1024;

/** The budgets the connections of one server share. */
export interface ServerBudgets {
  requests: ByteMeter;
  answers: ByteBudget;
}

let processBudgets: ServerBudgets | undefined;

/** The budgets of this process's server (`serve` and the daemon run one server per process). */
export function processServerBudgets(): ServerBudgets {
  processBudgets ??= { requests: new ByteMeter(SERVER_REQUEST_BYTES), answers: new ByteBudget(SERVER_ANSWER_BYTES) };
  return processBudgets;
}
