import {
  BINARY_OUTPUT_FIELD,
  ErrorCode,
  requests,
  FS_WATCH_FIELD,
  InitializeResult,
  SESSION_TAKEN_OVER,
  SESSION_TTL_FIELD,
} from '../protocol';
import type { EnvironmentInfo, FsWatchLimits } from '../protocol';
import { RpcError, RpcPeer } from '../rpc';
import { backoffDelay, Deferred, DisposableStore, Emitter, formatDuration, errorMessage } from '../util';
import type { Clock, TimerHandle, Event } from '../util';
import { AbortedError, DisconnectedError } from './errors';
import { SessionExpiredError } from './processAttach';
import { startKeepalive } from './keepalive';
import type { Connection, ConnectionState, Connector } from './types';

/** One connection generation: its transport, its RPC peer, and what is bound to it. */
export interface Live {
  gen: number;
  conn: Connection;
  peer: RpcPeer;
  store: DisposableStore;
}

/** What our client asks an executor to keep a detached session by default: a night away (10 h). */
export const DEFAULT_SESSION_TTL_MS = 10 * 3600_000;
/** Recovery's deadline when the server tells no TTL (codex: its sessions live ~30–80 s). */
export const CODEX_DEADLINE_MS = 25_000;
/** How long after the start of an outage attempts stay at most `backoff.maxMs` apart (then `longMaxMs`). */
const SHORT_OUTAGE_MS = 30_000;

export interface LinkSettings {
  clientName: string;
  /** undefined: the session's TTL (+1 min), or CODEX_DEADLINE_MS; 0: never. */
  deadlineMs: number | undefined;
  /** Asked in `initialize` (`execBridgeSessionTtlMs`); null: not asked. */
  sessionTtlMs: number | null;
  attemptTimeoutMs: number;
  backoff: { stepMs: number; maxMs: number; longMaxMs?: number };
  keepalive: { intervalMs: number; timeoutMs: number } | false;
  /** Per-client factor in [0, 0.3) on the back-off: clients of one server do not retry in lock-step. */
  jitter: number;
  /** Ask for binary output frames in `initialize` (a server that does not know them ignores the field). */
  binaryOutput?: boolean;
  /** Ask for spooled output in `initialize` (`execBridgeOutputSpool`; default yes; other servers ignore the field). */
  outputSpool?: boolean | { processBytes: number };
  /** Ask for file watches in `initialize` (`execBridgeFsWatch`; default yes; other servers ignore the field). */
  fsWatch?: boolean;
}

/** What the link asks of the client that owns it. */
export interface LinkHooks {
  /** A notification from the current connection generation. */
  onNotification(method: string, params: unknown): void;
  /** A binary output frame from the current connection generation (src/protocol/binaryOutput.ts). */
  onBinary?(frame: Buffer): void;
  /** The current connection closed; calls sent on generation `gen` lost their answers. */
  onConnectionLost(gen: number): void;
  /** On a resumed connection, before it counts as connected: bring every process up to date. */
  catchUp(live: Live): Promise<void>;
  /** The session failed for good: everything waiting on it must end with `error`. */
  onFailed(error: DisconnectedError): void;
}

/**
 * The connection state machine of one session: connect, `initialize`, keepalive, and on a drop
 * `recovering` → resume (`initialize {resumeSessionId}`, back-off, deadline) → `connected`, or
 * `failed` for good. Only a close of the *current* generation starts recovery.
 */
export class SessionLink {
  private readonly stateEmitter = new Emitter<ConnectionState>();
  private stateValue: ConnectionState = { kind: 'recovering', since: 0, attempt: 0, cause: 'connecting' };
  private failedValue: DisconnectedError | undefined;

  /** The current connection; undefined while recovering or failed. */
  private live: Live | undefined;
  private genCounter = 0;
  /** Notifications are taken only from this generation (the current or the one being set up). */
  private acceptGen = 0;
  /** A generation declared wedged: its in-flight calls fail instead of being retried. */
  private wedgedGen = -1;
  private attempt: { abort: AbortController; live?: Live } | undefined;
  private cancelSleep: (() => void) | undefined;
  private incomingPaused = false;
  private deadlineTimer: TimerHandle | undefined;
  private readonly waiters = new Set<Deferred<Live>>();

  private session = '';
  /** The TTL the server applies to this session once detached (its `initialize` answer); undefined: it did not say. */
  private ttl: number | undefined;
  private envInfo: EnvironmentInfo | undefined;
  private spool: InitializeResult['execBridgeOutputSpool'];
  private watchLimits: FsWatchLimits | undefined;
  private caps: Record<string, boolean> = {};

  constructor(
    private readonly settings: LinkSettings,
    private readonly connector: Connector,
    private readonly clock: Clock,
    private readonly log: (line: string) => void,
    private readonly hooks: LinkHooks,
  ) {}

  get state(): ConnectionState {
    return this.stateValue;
  }
  readonly onDidChangeState: Event<ConnectionState> = this.stateEmitter.event;
  /** Set once the link failed (final). */
  get failedError(): DisconnectedError | undefined {
    return this.failedValue;
  }
  get sessionId(): string {
    return this.session;
  }
  /** How long the executor keeps this session once the connection drops (undefined: it did not say, e.g. codex). */
  get sessionTtlMs(): number | undefined {
    return this.ttl;
  }
  /** How long recovery goes on after a drop before it fails (undefined: until the executor says the session is gone). */
  get recoveryDeadlineMs(): number | undefined {
    const d = this.settings.deadlineMs;
    if (d === 0) return undefined;
    if (d !== undefined) return d;
    return this.ttl !== undefined ? this.ttl + 60_000 : CODEX_DEADLINE_MS;
  }
  /**
   * Recovering: stop waiting out the back-off and try now (the network may be back: the window got
   * focus, the user asked for something on this executor). Returns whether an attempt was woken.
   */
  retryNow(): boolean {
    if (this.stateValue.kind !== 'recovering' || !this.cancelSleep) return false;
    this.log('retrying now');
    this.cancelSleep();
    return true;
  }
  get environmentInfo(): EnvironmentInfo | undefined {
    return this.envInfo;
  }
  /** The current connection's `process/read` serves spooled output, with these caps (undefined: only the server's window). */
  get outputSpool(): InitializeResult['execBridgeOutputSpool'] {
    return this.spool;
  }
  /** The current connection may watch files (`execBridge/fsWatch`) within these bounds (undefined: it may not, e.g. codex). */
  get fsWatch(): FsWatchLimits | undefined {
    return this.watchLimits;
  }
  get capabilities(): Readonly<Record<string, boolean>> {
    return this.caps;
  }
  /** The current connection, if connected. */
  get current(): Live | undefined {
    return this.live;
  }

  isWedged(gen: number): boolean {
    return gen === this.wedgedGen;
  }

  /** Closes the current connection as wedged: its calls fail instead of being sent again after the resume. */
  dropWedged(live: Live, reason: string): void {
    this.wedgedGen = live.gen;
    live.peer.close(reason);
  }

  setIncomingPaused(paused: boolean): void {
    if (this.incomingPaused === paused) return;
    this.incomingPaused = paused;
    const conn = this.live?.conn;
    if (paused) conn?.pause?.();
    else conn?.resume?.();
  }

  /** The current connection, or the next one once recovered; rejects when failed or aborted. */
  waitConnected(signal: AbortSignal | undefined, method: string): Promise<Live> {
    if (this.failedValue) return Promise.reject(this.failedValue);
    if (this.live && this.stateValue.kind === 'connected') return Promise.resolve(this.live);
    if (signal?.aborted) return Promise.reject(new AbortedError(method, { cause: signal.reason }));
    const waiter = new Deferred<Live>();
    this.waiters.add(waiter);
    if (!signal) return waiter.promise;
    const onAbort = () => {
      this.waiters.delete(waiter);
      waiter.reject(new AbortedError(method, { cause: signal.reason }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return waiter.promise.finally(() => signal.removeEventListener('abort', onAbort));
  }

  /**
   * The first connection: a new session, or `resumeSessionId`'s (then `SessionExpiredError` if the
   * executor no longer has it; while the previous connection still holds it, -32010, retried ≤ 5 s).
   */
  async connectFirst(resumeSessionId?: string, takeOver = false): Promise<void> {
    let opened: { live: Live; init: InitializeResult };
    for (let attempt = 1; ; attempt++) {
      try {
        opened = await this.openAttempt(resumeSessionId, takeOver);
        break;
      } catch (e) {
        if (!resumeSessionId || !(e instanceof RpcError)) throw e;
        if (e.code === ErrorCode.InvalidRequest) throw new SessionExpiredError(resumeSessionId, e.message);
        if (e.code !== ErrorCode.SessionAttached || attempt >= 25) throw e;
        await this.sleep(200);
      }
    }
    const { live, init } = opened;
    this.session = init.sessionId;
    this.ttl = init[SESSION_TTL_FIELD];
    this.envInfo = init.environmentInfo;
    if (!this.envInfo) {
      try {
        this.envInfo = requests['environment/info'].result.parse(await live.peer.request('environment/info', {}));
      } catch {
        // Very old servers: no info, no capabilities.
      }
    }
    this.caps = { ...(this.envInfo?.capabilities ?? {}) };
    if (live.peer.isClosed) throw new Error('the connection closed right after initialize');
    this.becomeConnected(live);
  }

  /** Final: every waiting or future call ends with `error`; the owner fails the rest (`onFailed`). */
  fail(error: DisconnectedError): void {
    if (this.failedValue) return;
    this.failedValue = error;
    if (this.deadlineTimer !== undefined) this.clock.clearTimeout(this.deadlineTimer);
    this.cancelSleep?.();
    const attempt = this.attempt;
    this.attempt = undefined;
    attempt?.abort.abort(error);
    attempt?.live?.peer.close(error.message);
    const live = this.live;
    this.live = undefined;
    live?.peer.close(error.message);
    this.hooks.onFailed(error);
    for (const w of this.waiters) w.reject(error);
    this.waiters.clear();
    if (error.reason !== 'disposed') this.log(`failed: ${error.message}`);
    this.setState({ kind: 'failed', error });
  }

  /** Another client took this session over (`execBridge/sessionTakenOver`): failed for good, no resume (it would take it back). */
  private takenOver(): void {
    this.fail(
      new DisconnectedError(
        'takenOver',
        'another window resumed this executor session (this workspace after a reload, or a second window on it); this one no longer follows its processes — Reconnect starts a new session',
      ),
    );
  }

  /** `reason`: what the user is told in-flight calls and processes ended with. */
  dispose(reason = 'the connection to the exec-server was closed'): void {
    this.fail(new DisconnectedError('disposed', reason));
    this.stateEmitter.dispose();
  }

  /** Waits `ms`, or less if the link fails meanwhile. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.cancelSleep = undefined;
        resolve();
      }, ms);
      this.cancelSleep = () => {
        this.cancelSleep = undefined;
        this.clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  /** One connect + `initialize` (+ `initialized`), bounded by `attemptTimeoutMs`. */
  /** `takeOver` only on the first connection: in recovery the holder is our own dead connection, which the probe frees. */
  private async openAttempt(resumeSessionId: string | undefined, takeOver = false): Promise<{ live: Live; init: InitializeResult }> {
    const abort = new AbortController();
    const attempt: { abort: AbortController; live?: Live } = { abort };
    this.attempt = attempt;
    const timer = this.clock.setTimeout(() => abort.abort(new Error('attempt timed out')), this.settings.attemptTimeoutMs);
    try {
      const conn = await this.connector(abort.signal);
      if (abort.signal.aborted || this.failedValue) {
        conn.close('attempt abandoned');
        throw this.failedValue ?? new Error(`connect timed out after ${this.settings.attemptTimeoutMs} ms`);
      }
      const live = this.attach(conn);
      attempt.live = live;
      let raw: unknown;
      try {
        raw = await live.peer.request(
          'initialize',
          {
            clientName: this.settings.clientName,
            ...(resumeSessionId ? { resumeSessionId } : {}),
            ...(resumeSessionId && takeOver ? { execBridgeTakeOver: true } : {}),
            ...(this.settings.outputSpool !== false
              ? { execBridgeOutputSpool: this.settings.outputSpool === true ? true : this.settings.outputSpool }
              : {}),
            ...(this.settings.sessionTtlMs !== null ? { [SESSION_TTL_FIELD]: this.settings.sessionTtlMs } : {}),
            ...(this.settings.fsWatch !== false ? { [FS_WATCH_FIELD]: true } : {}),
            // Only a connection that delivers binary messages may ask for them (a wrapper without `onBinary` would drop them).
            ...(this.settings.binaryOutput !== false && conn.onBinary ? { [BINARY_OUTPUT_FIELD]: true } : {}),
          },
          { signal: abort.signal },
        );
      } catch (e) {
        live.peer.close('initialize failed');
        if (abort.signal.aborted && !(e instanceof RpcError))
          throw new Error(`initialize timed out after ${this.settings.attemptTimeoutMs} ms`);
        throw e;
      }
      const init = InitializeResult.safeParse(raw);
      if (!init.success) {
        live.peer.close('bad initialize result');
        throw new Error('the server answered initialize with an unexpected result');
      }
      live.peer.notify('initialized', {});
      // Per connection: a resume on a server that does not spool (a restarted older one) reads its window only.
      this.spool = init.data.execBridgeOutputSpool;
      this.watchLimits = init.data[FS_WATCH_FIELD];
      return { live, init: init.data };
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  /** Wraps a fresh connection: its own peer, keepalive, and a close handler bound to its generation. */
  private attach(conn: Connection): Live {
    const gen = ++this.genCounter;
    this.acceptGen = gen;
    const peer = new RpcPeer(conn, {
      replyToMalformed: false,
      acceptBinaryResults: true,
      onNotification: (method, params) => {
        if (gen !== this.acceptGen) return;
        if (method === SESSION_TAKEN_OVER) this.takenOver();
        else this.hooks.onNotification(method, params);
      },
      onBinary: (frame) => {
        if (gen === this.acceptGen) this.hooks.onBinary?.(frame);
      },
    });
    const store = new DisposableStore();
    const live: Live = { gen, conn, peer, store };
    const ka = this.settings.keepalive;
    if (ka) {
      const probes = startKeepalive(conn, {
        ...ka,
        clock: this.clock,
        log: this.log,
        readingPaused: () => this.incomingPaused && this.live === live,
      });
      for (const d of probes ?? []) store.add(d);
    }
    const closed = (reason: string | undefined) => this.onConnectionClosed(live, reason ?? 'connection closed');
    if (peer.isClosed) queueMicrotask(() => closed('closed while connecting'));
    else store.add(peer.onClose(closed));
    return live;
  }

  private onConnectionClosed(live: Live, reason: string): void {
    live.store.dispose();
    if (this.failedValue) return;
    if (this.live !== live) return; // an old generation, or a recovery attempt (its own loop sees it)
    this.live = undefined;
    this.hooks.onConnectionLost(live.gen);
    this.log(`connection lost (${reason}); resuming session`);
    void this.recover(reason);
  }

  private async recover(cause: string): Promise<void> {
    const since = this.clock.now();
    const deadlineMs = this.recoveryDeadlineMs;
    const until = deadlineMs !== undefined ? since + deadlineMs : undefined;
    this.setState({ kind: 'recovering', since, attempt: 0, cause, until });
    if (deadlineMs !== undefined) {
      this.deadlineTimer = this.clock.setTimeout(() => {
        this.fail(
          new DisconnectedError(
            'recoveryDeadline',
            `lost the connection to the exec-server and could not resume within ${formatDuration(deadlineMs)} (${cause}); processes may still be running on the executor`,
          ),
        );
      }, deadlineMs);
      this.deadlineTimer.unref?.();
    }
    for (let attempt = 1; !this.failedValue; attempt++) {
      this.setState({ kind: 'recovering', since, attempt, cause, until });
      let live: Live | undefined;
      try {
        const opened = await this.openAttempt(this.session);
        live = opened.live;
        // A resume says the TTL that applies now (the ask may have changed, or the server capped it).
        this.ttl = opened.init[SESSION_TTL_FIELD] ?? this.ttl;
        await this.hooks.catchUp(live);
        if (live.peer.isClosed) throw new Error('the connection closed during catch-up');
        if (this.failedValue) return;
        if (this.deadlineTimer !== undefined) this.clock.clearTimeout(this.deadlineTimer);
        this.deadlineTimer = undefined;
        this.log(`resumed session after ${this.clock.now() - since} ms (attempt ${attempt})`);
        this.becomeConnected(live);
        return;
      } catch (e) {
        live?.peer.close('recovery attempt failed');
        if (this.failedValue) return;
        if (e instanceof RpcError && e.code === ErrorCode.InvalidRequest) {
          // `unknown session id`: the executor forgot the session (expired or restarted).
          this.fail(
            new DisconnectedError(
              'sessionLost',
              `the exec-server no longer knows this session (${e.message}); processes started through it are gone or unreachable`,
            ),
          );
          return;
        }
        this.log(`resume attempt ${attempt} failed: ${errorMessage(e)}`);
        // Doubling steps (stepMs, 2×, 4×, … up to maxMs; after 30 s of outage up to longMaxMs): a
        // blip resumes at once, a night away is not hammered; `retryNow` cuts a wait short.
        const { stepMs, maxMs, longMaxMs = 30_000 } = this.settings.backoff;
        const cap = this.clock.now() - since < SHORT_OUTAGE_MS ? maxMs : Math.max(maxMs, longMaxMs);
        await this.sleep(backoffDelay(2 ** Math.min(attempt - 1, 20), { stepMs, maxMs: cap, jitter: this.settings.jitter }));
      }
    }
  }

  private becomeConnected(live: Live): void {
    this.live = live;
    if (this.incomingPaused) live.conn.pause?.();
    this.attempt = undefined;
    this.setState({ kind: 'connected', sessionId: this.session });
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w.resolve(live);
  }

  private setState(state: ConnectionState): void {
    this.stateValue = state;
    this.stateEmitter.fire(state);
  }
}
