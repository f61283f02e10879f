import { ErrorCode, type SessionSummary } from '../protocol';
import { RpcError } from '../rpc';
import type { Clock, TimerHandle } from '../util';
import { Session, type SessionConnection, type SessionOptions } from './session';

/** The longest a client may ask a detached session to be kept, unless the server says otherwise: 7 days. */
export const MAX_SESSION_TTL_MS = 7 * 24 * 3600_000;

export interface RegistryOptions extends SessionOptions {
  /** The cap on a TTL a client asks for (`execBridgeSessionTtlMs`); default MAX_SESSION_TTL_MS. */
  maxTtlMs?: number;
}

/**
 * All sessions of a server. `initialize` creates one; a dropped connection detaches it; a
 * `resumeSessionId` reattaches it (-32010 while another connection holds it); a detached session
 * expires after its TTL — what its client asked (`execBridgeSessionTtlMs`, capped), else the
 * server's default — and its processes are killed then.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();
  private readonly expiry = new Map<string, { timer: TimerHandle; at: number; since: number }>();

  constructor(private readonly options: RegistryOptions) {}

  /** The TTL that applies to an ask: a positive integer up to the cap, else the default. */
  ttlFor(asked: unknown): number {
    if (typeof asked !== 'number' || !Number.isSafeInteger(asked) || asked <= 0) return this.options.ttlMs;
    return Math.min(asked, this.options.maxTtlMs ?? MAX_SESSION_TTL_MS);
  }

  get clock(): Clock {
    return this.options.clock;
  }

  get size(): number {
    return this.sessions.size;
  }

  all(): Session[] {
    return [...this.sessions.values()];
  }

  /** `askedTtl`: the client's `execBridgeSessionTtlMs` (anything else: the default). */
  create(conn: SessionConnection, askedTtl?: unknown, clientName = ''): Session {
    const s = new Session(this.options);
    s.ttlMs = this.ttlFor(askedTtl);
    s.clientName = clientName;
    this.sessions.set(s.id, s);
    s.attach(conn);
    return s;
  }

  /**
   * `takeOver`: a connection still holding the session is told and let go, instead of -32010.
   * A resume that asks for a TTL replaces the session's; one that does not keeps it.
   */
  resume(id: string, conn: SessionConnection, takeOver = false, askedTtl?: unknown): Session {
    const s = this.sessions.get(id);
    if (!s) throw RpcError.invalidRequest(`unknown session id ${id}`);
    if (askedTtl !== undefined) s.ttlMs = this.ttlFor(askedTtl);
    if (s.isAttached && takeOver) {
      s.takeOver(conn);
      return s;
    }
    if (s.isAttached) {
      // A frozen holder lets go within the probe time; the client's retry of -32010 then succeeds.
      s.probeConnection();
      throw new RpcError(ErrorCode.SessionAttached, `session ${id} is already attached to another connection`);
    }
    const pending = this.expiry.get(id);
    if (pending) {
      this.options.clock.clearTimeout(pending.timer);
      this.expiry.delete(id);
    }
    s.attach(conn);
    return s;
  }

  detach(s: Session, conn: SessionConnection): void {
    if (!s.detach(conn) || s.isDisposed) return;
    const since = this.options.clock.now();
    const timer = this.options.clock.setTimeout(() => this.expire(s.id), s.ttlMs);
    timer.unref?.();
    this.expiry.set(s.id, { timer, at: since + s.ttlMs, since });
  }

  /** Every session, for `execBridge/sessions` (times in ms since the epoch, by the registry's clock). */
  summaries(): SessionSummary[] {
    return this.all().map((s) => {
      const pending = this.expiry.get(s.id);
      return {
        sessionId: s.id,
        clientName: s.clientName,
        attached: s.isAttached,
        ttlMs: s.ttlMs,
        detachedAt: pending ? pending.since : null,
        expiresAt: pending ? pending.at : null,
        processes: s.processCount,
      };
    });
  }

  private expire(id: string): void {
    this.expiry.delete(id);
    const s = this.sessions.get(id);
    if (!s || s.isAttached) return;
    this.sessions.delete(id);
    s.dispose();
  }

  /** Server shutdown: every session's processes are killed. */
  dispose(): void {
    for (const t of this.expiry.values()) this.options.clock.clearTimeout(t.timer);
    this.expiry.clear();
    for (const s of this.sessions.values()) s.dispose();
    this.sessions.clear();
  }
}
