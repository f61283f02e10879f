import { readFileSync } from 'node:fs';

/*
 * How many connections the managed network's listeners (our proxy, ./netProxy.ts, and the relays
 * to codex's, ./netRelay.ts) serve at once, and how long a connection may sit idle. Each start
 * has its own listener with its own bound; every listener of this server process also draws on
 * one shared budget, sized from the process's file limit, so no command (nor all of them
 * together) can take the descriptors the rest of the server needs: a connection costs two (the
 * client's and the upstream one). Over either bound a connection is refused at once, with a
 * reply in its own protocol where there is one, and the refusal is logged.
 */

export interface NetLimits {
  /** Connections one listener (so one start) serves at once. */
  perListener: number;
  /** A connection must have sent its whole request (HTTP head, SOCKS5 greeting and request) within this. */
  headerMs: number;
  /** A tunnel (or forwarded request) in which no byte moved either way for this long is closed. */
  idleMs: number;
  /** The connect to the destination must succeed within this. */
  connectMs: number;
}

export const DEFAULT_NET_LIMITS: NetLimits = {
  perListener: 256,
  headerMs: 30_000,
  idleMs: 5 * 60_000,
  connectMs: 30_000,
};

/** Connections over budget waiting for their first byte to be refused in their protocol; past this they are just closed. */
const MAX_REFUSING = 64;

/** A count shared by every managed-network listener of one process (or of one test). */
export class ConnectionBudget {
  private used = 0;
  private refusingNow = 0;

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes one connection's share; false when the budget is spent. */
  take(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }

  give(): void {
    if (this.used > 0) this.used--;
  }

  /** A slot for a refusal that is still being answered; false: close the connection without a word. */
  takeRefusal(): boolean {
    if (this.refusingNow >= MAX_REFUSING) return false;
    this.refusingNow++;
    return true;
  }

  giveRefusal(): void {
    if (this.refusingNow > 0) this.refusingNow--;
  }
}

/** The soft limit on open files of this process (Node raises it to the hard limit at start), or undefined. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'latin1')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const n = Number(/^Max open files\s+(\d+)/.exec(line ?? '')?.[1]);
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined; // not Linux
  }
}

/** Connections every listener of this process may hold together: 1024, or a quarter of the file limit if that is less. */
export function serverConnectionMax(fileLimit = openFileLimit()): number {
  return fileLimit === undefined ? 1024 : Math.max(16, Math.min(1024, Math.floor(fileLimit / 4)));
}

let shared: ConnectionBudget | undefined;

/** The budget of this server process (made on first use). */
export function serverBudget(): ConnectionBudget {
  return (shared ??= new ConnectionBudget(serverConnectionMax()));
}

/**
 * Runs at most `max` jobs at once, the others in arrival order. The system resolver (getaddrinfo)
 * runs on libuv's thread pool, 4 threads that every fs call of every client shares: slow lookups
 * (a name whose DNS server never answers) must not hold them all.
 */
export class Gate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {}

  /** Jobs waiting for a slot. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running < this.max) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await job();
    } finally {
      // The slot passes straight to the next in line, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** Lookups one proxy runs at once (more wait in that proxy's line, so one start's flood cannot queue ahead of the others). */
export const LOOKUPS_PER_LISTENER = 2;

let lookups: Gate | undefined;

/** The process's lookups: 2 at once, leaving the thread pool's other 2 threads to fs calls. */
export function serverLookups(): Gate {
  return (lookups ??= new Gate(2));
}
