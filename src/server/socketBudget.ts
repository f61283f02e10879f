import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

/**
 * Sockets of the WebSocket listener that are not (yet) an authenticated WebSocket: accepted, not
 * upgraded, not past the token check. Anyone who can reach the port can open them, so they get a
 * budget of their own that authenticated connections never share (docs/security.md, "One client
 * cannot take the server down"): at most `max` at once, the oldest closed to make room for a new
 * one, and each closed unless its request head is complete within `headMs` (an upgrade that passes
 * the check leaves the budget at once; a plain HTTP request is answered and the socket closed).
 *
 * Refusing the newest instead would let a flood of idle sockets lock every new client out until
 * they time out; closing the oldest means a client whose head arrives within the time it takes
 * the flood to open `max` more sockets gets in. Authenticated WebSockets are never touched.
 */
export class PendingSockets {
  /** Insertion order is age: the first entry is the oldest. */
  private readonly sockets = new Map<Socket, NodeJS.Timeout>();
  private evicted = 0;
  private lastReport = 0;

  constructor(
    readonly max: number,
    private readonly headMs: number,
    private readonly log?: (line: string) => void,
  ) {}

  get size(): number {
    return this.sockets.size;
  }

  /** A socket was accepted: counted, timed, and room made for it. */
  add(socket: Socket): void {
    for (let i = 0; this.sockets.size >= this.max && i < this.max; i++) {
      const oldest = this.sockets.keys().next().value;
      if (!oldest) break;
      this.drop(oldest);
      this.evicted++;
    }
    // Node keeps a socket that sends nothing (or half a request) open indefinitely.
    const timer = setTimeout(() => this.drop(socket), this.headMs);
    timer.unref();
    this.sockets.set(socket, timer);
    socket.once('close', () => this.release(socket));
    this.report();
  }

  /** The socket became an authenticated WebSocket (or is gone): no longer counted or timed. */
  release(socket: Socket): void {
    const timer = this.sockets.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.sockets.delete(socket);
  }

  /** Closes every pending socket (the listener stops). */
  closeAll(): void {
    for (const s of [...this.sockets.keys()]) this.drop(s);
  }

  private drop(socket: Socket): void {
    this.release(socket);
    socket.destroy();
  }

  /** One log line per 10 s at most while sockets are being closed to make room. */
  private report(): void {
    if (this.evicted === 0 || !this.log) return;
    const now = Date.now();
    if (now - this.lastReport < 10_000) return;
    this.lastReport = now;
    this.log(
      `${this.evicted} unauthenticated socket(s) closed to make room (at most ${this.max} sockets may wait for their upgrade); someone may be flooding the listener`,
    );
    this.evicted = 0;
  }
}

/**
 * How many pending sockets to allow: `wanted`, but at most a quarter of the process's file
 * descriptor limit, so a flood never takes the descriptors that processes, files and the
 * authenticated connections need (an accept past the limit is dropped by libuv, a spawn fails).
 */
export function pendingSocketCap(wanted: number, fdLimit = openFileLimit()): number {
  if (fdLimit === undefined) return wanted;
  return Math.max(8, Math.min(wanted, Math.floor(fdLimit / 4)));
}

/** The soft RLIMIT_NOFILE of this process (Linux: /proc/self/limits), or undefined when unknown or unlimited. */
export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
