import { ErrorCode } from '../protocol/common';
import { RpcError } from '../rpc/errors';
import type { Clock, TimerHandle } from '../util/clock';
import { Session, type SessionConnection, type SessionOptions } from './session';

/**
 * All sessions of a server. `initialize` creates one; a dropped connection detaches it; a
 * `resumeSessionId` reattaches it (-32010 while another connection holds it); a detached session
 * expires after the TTL, and its processes are killed then.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();
  private readonly expiry = new Map<string, TimerHandle>();

  constructor(private readonly options: SessionOptions) {}

  get clock(): Clock {
    return this.options.clock;
  }

  get size(): number {
    return this.sessions.size;
  }

  all(): Session[] {
    return [...this.sessions.values()];
  }

  create(conn: SessionConnection): Session {
    const s = new Session(this.options);
    this.sessions.set(s.id, s);
    s.attach(conn);
    return s;
  }

  /** `takeOver`: a connection still holding the session is told and let go, instead of -32010. */
  resume(id: string, conn: SessionConnection, takeOver = false): Session {
    const s = this.sessions.get(id);
    if (!s) throw RpcError.invalidRequest(`unknown session id ${id}`);
    if (s.isAttached && takeOver) {
      s.takeOver(conn);
      return s;
    }
    if (s.isAttached) {
      // A frozen holder lets go within the probe time; the client's retry of -32010 then succeeds.
      s.probeConnection();
      throw new RpcError(ErrorCode.SessionAttached, `session ${id} is already attached to another connection`);
    }
    const timer = this.expiry.get(id);
    if (timer) {
      this.options.clock.clearTimeout(timer);
      this.expiry.delete(id);
    }
    s.attach(conn);
    return s;
  }

  detach(s: Session, conn: SessionConnection): void {
    if (!s.detach(conn) || s.isDisposed) return;
    const timer = this.options.clock.setTimeout(() => this.expire(s.id), this.options.ttlMs);
    timer.unref?.();
    this.expiry.set(s.id, timer);
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
    for (const t of this.expiry.values()) this.options.clock.clearTimeout(t);
    this.expiry.clear();
    for (const s of this.sessions.values()) s.dispose();
    this.sessions.clear();
  }
}
