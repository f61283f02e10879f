import { fileURLToPath, pathToFileURL } from 'node:url';
import { ErrorCode } from '../protocol/common';
import type { EnvironmentInfo, EnvironmentStatusResult } from '../protocol/environment';
import type { FsDirectoryEntry, FsMetadata } from '../protocol/fs';
import { requests, type ParamsOf, type RequestMethod, type ResultOf } from '../protocol/methods';
import { ProcessClosedNotification, ProcessExitedNotification, ProcessReadResult } from '../protocol/process';
import { InitializeResult } from '../protocol/session';
import { ConnectionClosedError, RpcError } from '../rpc/errors';
import { RpcPeer } from '../rpc/peer';
import { backoffDelay } from '../util/backoff';
import { systemClock, type Clock, type TimerHandle } from '../util/clock';
import { Deferred } from '../util/deferred';
import { DisposableStore, type Disposable } from '../util/disposable';
import { Emitter, type Event } from '../util/emitter';
import { Admission, type Permit } from './admission';
import { connectorFor } from './connectors';
import { inheritAllEnv } from './envPolicy';
import {
  AbortedError,
  ConnectFailedError,
  DisconnectedError,
  NotStartedError,
  OutcomeUnknownError,
  OutputLostError,
  RemoteError,
  UnsupportedError,
  WriteRejectedError,
} from './errors';
import { ProcessHandleImpl, type HandleHost, type ProcessHandle } from './processHandle';
import type { CallOptions, ClientOptions, Connection, ConnectionState, Connector, StartProcessOptions } from './types';

/** Calls that may simply be sent again after a reconnect: reads, and writes (made idempotent by `writeId`). */
const RETRYABLE = new Set<string>([
  'process/read',
  'process/write',
  'process/resize',
  'fs/readFile',
  'fs/getMetadata',
  'fs/readDirectory',
  'fs/canonicalize',
  'fs/readBlock',
  'environment/info',
  'environment/status',
]);
/** Teardown calls: they may take the reserved permit. */
const CLEANUP = new Set<string>(['process/terminate', 'fs/close']);

/** Bytes per `process/write`: keeps frames far below the 16 MiB limit after base64. */
const WRITE_PIECE = 1024 * 1024;
/** `starting` answers to a write are retried this many times, `STARTING_RETRY_MS` apart. */
const STARTING_RETRIES = 50;
const STARTING_RETRY_MS = 20;
/** Catch-up reads in parallel after a resume. */
const CATCH_UP_PARALLEL = 8;

interface Live {
  gen: number;
  conn: Connection;
  peer: RpcPeer;
  store: DisposableStore;
}

interface Settings {
  clientName: string;
  deadlineMs: number;
  attemptTimeoutMs: number;
  backoff: { stepMs: number; maxMs: number };
  keepalive: { intervalMs: number; timeoutMs: number } | false;
  cleanupStallMs: number;
}

/**
 * The resilient exec-server client: one session on one executor, kept across connection drops.
 * Build it with `ExecServerClient.connect(options)`.
 *
 * Invariants: only a close of the *current* connection generation starts recovery; calls made
 * while recovering wait for the replacement; catch-up (`process/read afterSeq`) for every live
 * process completes before the state returns to `connected`; once `failed`, every call and handle
 * ends with the same `DisconnectedError`.
 */
export class ExecServerClient implements Disposable {
  /** Connects, sends `initialize`/`initialized`; rejects with `ConnectFailedError`. */
  static async connect(options: ClientOptions): Promise<ExecServerClient> {
    const client = new ExecServerClient(options);
    try {
      await client.connectFirst();
    } catch (e) {
      client.dispose();
      if (e instanceof ConnectFailedError) throw e;
      throw new ConnectFailedError(`cannot connect to the exec-server: ${describe(e)}`, { cause: e });
    }
    return client;
  }

  private readonly settings: Settings;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: (line: string) => void;
  private readonly connector: Connector;
  private readonly admission: Admission;
  /** Per-client jitter factor in [0, 0.3): clients of one server do not retry in lock-step. */
  private readonly jitter: number;
  /** Prefix of generated process and write ids: unique per client within a session's lifetime. */
  private readonly tag: string;
  private idCounter = 0;

  private readonly stateEmitter = new Emitter<ConnectionState>();
  private stateValue: ConnectionState = { kind: 'recovering', since: 0, attempt: 0, cause: 'connecting' };
  private failedError: DisconnectedError | undefined;

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
  private readonly processes = new Map<string, ProcessHandleImpl>();
  private session = '';
  private envInfo: EnvironmentInfo | undefined;
  private caps: Record<string, boolean> = {};
  private readonly host: HandleHost;

  private constructor(options: ClientOptions) {
    this.settings = {
      clientName: options.clientName ?? 'exec-bridge',
      deadlineMs: options.deadlineMs ?? 25_000,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 5_000,
      backoff: options.backoff ?? { stepMs: 100, maxMs: 200 },
      keepalive: options.keepalive ?? { intervalMs: 5_000, timeoutMs: 5_000 },
      cleanupStallMs: options.cleanupStallMs ?? 10_000,
    };
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.log = options.log ?? (() => undefined);
    const connector = options.connector ?? (options.endpoint ? connectorFor(options.endpoint) : undefined);
    if (!connector) throw new TypeError('ExecServerClient needs an endpoint or a connector');
    this.connector = connector;
    this.admission = new Admission(options.maxInFlight ?? 64);
    this.jitter = this.random() * 0.3;
    this.tag = Math.floor(this.random() * 0xffffffff)
      .toString(16)
      .padStart(8, '0');
    this.host = {
      writeStdin: (h, data, o) => this.writeStdin(h, data, o),
      interrupt: async (h, o) => {
        await this.invoke('process/signal', { processId: h.processId, signal: 'interrupt' }, o);
      },
      terminate: (h, o) => this.terminateProcess(h.processId, o),
      resize: (h, cols, rows, o) => this.resizeProcess(h, cols, rows, o),
      sandboxDeniedAfterExit: (h, seq) => this.sandboxDeniedAfterExit(h, seq),
      forget: (h) => {
        if (this.processes.get(h.processId) === h) this.processes.delete(h.processId);
      },
    };
  }

  // ───────────────────────────── public surface ─────────────────────────────

  /** Current state; see `onDidChangeState`. */
  get state(): ConnectionState {
    return this.stateValue;
  }
  /** Fires on every state change (also on each new reconnect attempt while recovering). */
  readonly onDidChangeState: Event<ConnectionState> = this.stateEmitter.event;
  /** The session kept across reconnects. */
  get sessionId(): string {
    return this.session;
  }
  /** From the `initialize` result (or `environment/info` on servers that do not embed it). */
  get environmentInfo(): EnvironmentInfo | undefined {
    return this.envInfo;
  }
  /** Server capabilities (`processResize`, `concurrentRequests`, …); missing ones are false. */
  get capabilities(): Readonly<Record<string, boolean>> {
    return this.caps;
  }
  /**
   * While true the client stops reading from the connection, so the server (and in the end the
   * command's output pipe) is held back by TCP instead of this process buffering without bound.
   * For a consumer slower than the stream, e.g. a full stdout pipe. Keepalive is suspended
   * meanwhile; calls still go out, but their answers wait too. Applies to later connections.
   */
  setIncomingPaused(paused: boolean): void {
    if (this.incomingPaused === paused) return;
    this.incomingPaused = paused;
    const conn = this.live?.conn;
    if (paused) conn?.pause?.();
    else conn?.resume?.();
  }

  /** Calls holding an admission permit right now, and the most seen at once (diagnostics, tests). */
  get inFlight(): { now: number; peak: number } {
    return { now: this.admission.inFlight, peak: this.admission.peakInFlight };
  }

  /** Starts a process; events that arrive before the answer are kept for the handle. */
  async startProcess(options: StartProcessOptions): Promise<ProcessHandle> {
    if (this.failedError) throw this.failedError;
    const processId = options.processId ?? this.nextId('p');
    if (this.processes.has(processId)) {
      throw new RemoteError('process/start', ErrorCode.InvalidRequest, `process ${processId} already exists`);
    }
    const tty = options.tty ?? false;
    const pipeStdin = !tty && (options.pipeStdin ?? false);
    const handle = new ProcessHandleImpl(this.host, processId, tty, tty || pipeStdin);
    this.processes.set(processId, handle);
    const envPolicy = options.envPolicy !== undefined ? options.envPolicy : options.env === undefined ? inheritAllEnv() : null;
    const params: ParamsOf<'process/start'> = {
      processId,
      argv: options.argv,
      cwd: toUri(options.cwd),
      env: options.env ?? {},
      tty,
      pipeStdin,
      arg0: options.arg0 ?? null,
      ...(envPolicy ? { envPolicy } : {}),
      ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
      ...(tty && options.ptySize ? { ptySize: options.ptySize } : {}),
    };
    try {
      const result = await this.invoke('process/start', params, options, {
        onSent: (gen) => {
          handle.phase = 'starting';
          handle.startGen = gen;
        },
        // The answer was lost with the connection: recovery asks the server and settles this.
        onLost: () => abortable(handle.awaitAdoption(), options.signal, 'process/start'),
      });
      handle.markStarted(result);
      return handle;
    } catch (e) {
      const wasSent = handle.phase !== 'unsent';
      if (this.processes.get(processId) === handle) this.processes.delete(processId);
      if (e instanceof AbortedError && wasSent && !this.failedError) {
        // The caller gave up but the process may exist: do not leave it running unobserved.
        this.invoke('process/terminate', { processId }).catch(() => undefined);
      }
      throw e;
    }
  }

  /** A handle this client is still tracking (finished processes are dropped). */
  getProcess(processId: string): ProcessHandle | undefined {
    return this.processes.get(processId);
  }

  async readFile(path: string, options?: CallOptions): Promise<Buffer> {
    const r = await this.invoke('fs/readFile', { path: toUri(path) }, options);
    return Buffer.from(r.dataBase64, 'base64');
  }
  async writeFile(path: string, data: Buffer | string, options?: CallOptions): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await this.invoke('fs/writeFile', { path: toUri(path), dataBase64: bytes.toString('base64') }, options);
  }
  async createDirectory(path: string, options?: CallOptions & { recursive?: boolean }): Promise<void> {
    await this.invoke('fs/createDirectory', { path: toUri(path), recursive: options?.recursive ?? true }, options);
  }
  getMetadata(path: string, options?: CallOptions): Promise<FsMetadata> {
    return this.invoke('fs/getMetadata', { path: toUri(path) }, options);
  }
  async readDirectory(path: string, options?: CallOptions): Promise<FsDirectoryEntry[]> {
    return (await this.invoke('fs/readDirectory', { path: toUri(path) }, options)).entries;
  }
  /** Resolves symlinks and `..`; returns a plain path. */
  async canonicalize(path: string, options?: CallOptions): Promise<string> {
    return fromUri((await this.invoke('fs/canonicalize', { path: toUri(path) }, options)).path);
  }
  async copy(source: string, destination: string, options?: CallOptions & { recursive?: boolean }): Promise<void> {
    await this.invoke('fs/copy', { sourcePath: toUri(source), destinationPath: toUri(destination), recursive: options?.recursive ?? false }, options);
  }
  async remove(path: string, options?: CallOptions & { recursive?: boolean; force?: boolean }): Promise<void> {
    await this.invoke('fs/remove', { path: toUri(path), recursive: options?.recursive ?? true, force: options?.force ?? true }, options);
  }
  getEnvironmentInfo(options?: CallOptions): Promise<EnvironmentInfo> {
    return this.invoke('environment/info', {}, options);
  }
  getEnvironmentStatus(options?: CallOptions): Promise<EnvironmentStatusResult> {
    return this.invoke('environment/status', {}, options);
  }

  /**
   * Escape hatch: a typed raw call (method table in src/protocol/methods.ts), with the same
   * admission, recovery and in-flight rules as the typed helpers. Avoid long `waitMs` polls on
   * servers without capability `concurrentRequests`: they block every later call.
   */
  call<M extends RequestMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<ResultOf<M>> {
    return this.invoke(method, params, options);
  }

  /** Ends the client: state `failed` (reason `disposed`), closes the connection; processes keep running on the executor. */
  dispose(): void {
    this.fail(new DisconnectedError('disposed', 'the exec client was disposed'));
    this.stateEmitter.dispose();
  }

  // ───────────────────────────── calls ─────────────────────────────

  /**
   * One call under the in-flight rules: it holds an admission permit until its answer; it waits
   * for a connection while recovering; if the connection dies with the call on the wire, a
   * retryable call is sent again on the next connection, `hooks.onLost` decides for a start, and
   * anything else fails with `OutcomeUnknownError`.
   */
  private async invoke<M extends RequestMethod>(
    method: M,
    params: ParamsOf<M>,
    options: CallOptions = {},
    hooks: { onSent?(gen: number): void; onLost?(): Promise<ResultOf<M>> } = {},
  ): Promise<ResultOf<M>> {
    if (this.failedError) throw this.failedError;
    const { signal } = options;
    const permit = await this.acquirePermit(method, signal);
    try {
      // Each turn needs a new connection generation; the recovery deadline bounds the turns.
      for (;;) {
        const live = await this.waitConnected(signal, method);
        hooks.onSent?.(live.gen);
        let raw: unknown;
        try {
          raw = await live.peer.request(method, params, { signal });
        } catch (e) {
          if (this.failedError) throw this.failedError;
          if (e instanceof RpcError) throw new RemoteError(method, e.code, e.message, e.data);
          if (e instanceof ConnectionClosedError) {
            if (live.gen === this.wedgedGen) throw new OutcomeUnknownError(method);
            if (hooks.onLost) return await hooks.onLost();
            if (RETRYABLE.has(method)) continue;
            throw new OutcomeUnknownError(method);
          }
          if (signal?.aborted) throw new AbortedError(method, { cause: signal.reason });
          throw e;
        }
        return parseResult(method, raw);
      }
    } finally {
      permit.release();
    }
  }

  private async acquirePermit(method: string, signal: AbortSignal | undefined): Promise<Permit> {
    const cleanup = CLEANUP.has(method);
    const pending = this.admission.acquire(cleanup, signal, method);
    if (!cleanup) return pending;
    // If even the reserved permit stays taken, the connection is wedged (e.g. calls stuck behind
    // long polls): close it so that its calls fail and teardown can go on after the resume.
    const timer = this.clock.setTimeout(() => {
      const live = this.live;
      if (!live || this.admission.cleanupWaiting === 0) return;
      this.log(`cleanup call ${method} could not get a permit for ${this.settings.cleanupStallMs} ms; resetting the connection`);
      this.wedgedGen = live.gen;
      live.peer.close('connection wedged: cleanup calls could not be admitted');
    }, this.settings.cleanupStallMs);
    try {
      return await pending;
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  private waitConnected(signal: AbortSignal | undefined, method: string): Promise<Live> {
    if (this.failedError) return Promise.reject(this.failedError);
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

  private async writeStdin(handle: ProcessHandleImpl, data: Buffer, options: CallOptions | undefined): Promise<void> {
    for (let offset = 0; offset < data.length; offset += WRITE_PIECE) {
      const piece = data.subarray(offset, offset + WRITE_PIECE);
      // One id per logical write, reused only when the same write is sent again after a reconnect.
      const writeId = this.nextId('w');
      for (let attempt = 0; ; attempt++) {
        let status;
        try {
          status = (await this.invoke('process/write', { processId: handle.processId, chunk: piece.toString('base64'), writeId }, options)).status;
        } catch (e) {
          // The real server answers a write to an exited process's pipe with -32603.
          if (e instanceof RemoteError && e.code === ErrorCode.Internal) throw new WriteRejectedError(handle.processId, 'processExited');
          throw e;
        }
        if (status === 'accepted') break;
        if (status === 'starting' && attempt < STARTING_RETRIES) {
          await this.sleep(STARTING_RETRY_MS);
          continue;
        }
        throw new WriteRejectedError(handle.processId, status === 'starting' ? 'unknownProcess' : status);
      }
    }
  }

  private async terminateProcess(processId: string, options: CallOptions | undefined): Promise<boolean> {
    try {
      return (await this.invoke('process/terminate', { processId }, options)).running;
    } catch (e) {
      // Killing twice is harmless; only the `running` answer of the lost call is unknown.
      if (e instanceof OutcomeUnknownError) return (await this.invoke('process/terminate', { processId }, options)).running;
      throw e;
    }
  }

  private async resizeProcess(handle: ProcessHandleImpl, cols: number, rows: number, options: CallOptions | undefined): Promise<void> {
    if (!this.caps.processResize) throw new UnsupportedError('this exec-server cannot resize a PTY (no capability `processResize`)');
    if (!handle.tty) throw new UnsupportedError(`process ${handle.processId} has no PTY to resize`);
    await this.invoke('process/resize', { processId: handle.processId, cols, rows }, options);
  }

  private async sandboxDeniedAfterExit(handle: ProcessHandleImpl, exitSeq: number): Promise<boolean> {
    try {
      return (await this.invoke('process/read', { processId: handle.processId, afterSeq: exitSeq })).sandboxDenied;
    } catch {
      return false;
    }
  }

  // ───────────────────────────── connections ─────────────────────────────

  private async connectFirst(): Promise<void> {
    const { live, init } = await this.openAttempt(undefined);
    this.session = init.sessionId;
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

  /** One connect + `initialize` (+ `initialized`), bounded by `attemptTimeoutMs`. */
  private async openAttempt(resumeSessionId: string | undefined): Promise<{ live: Live; init: InitializeResult }> {
    const abort = new AbortController();
    const attempt: { abort: AbortController; live?: Live } = { abort };
    this.attempt = attempt;
    const timer = this.clock.setTimeout(() => abort.abort(new Error('attempt timed out')), this.settings.attemptTimeoutMs);
    try {
      const conn = await this.connector(abort.signal);
      if (abort.signal.aborted || this.failedError) {
        conn.close('attempt abandoned');
        throw this.failedError ?? new Error(`connect timed out after ${this.settings.attemptTimeoutMs} ms`);
      }
      const live = this.attach(conn);
      attempt.live = live;
      let raw: unknown;
      try {
        raw = await live.peer.request('initialize', { clientName: this.settings.clientName, ...(resumeSessionId ? { resumeSessionId } : {}) }, { signal: abort.signal });
      } catch (e) {
        live.peer.close('initialize failed');
        if (abort.signal.aborted && !(e instanceof RpcError)) throw new Error(`initialize timed out after ${this.settings.attemptTimeoutMs} ms`);
        throw e;
      }
      const init = InitializeResult.safeParse(raw);
      if (!init.success) {
        live.peer.close('bad initialize result');
        throw new Error('the server answered initialize with an unexpected result');
      }
      live.peer.notify('initialized', {});
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
      onNotification: (method, params) => {
        if (gen === this.acceptGen) this.onNotification(method, params);
      },
    });
    const store = new DisposableStore();
    const live: Live = { gen, conn, peer, store };
    this.startKeepalive(live);
    const closed = (reason: string | undefined) => this.onConnectionClosed(live, reason ?? 'connection closed');
    if (peer.isClosed) queueMicrotask(() => closed('closed while connecting'));
    else store.add(peer.onClose(closed));
    return live;
  }

  private startKeepalive(live: Live): void {
    const ka = this.settings.keepalive;
    const { conn } = live;
    if (!ka || !conn.ping || !conn.onPong) return;
    let probe: TimerHandle | undefined;
    let deadline: TimerHandle | undefined;
    // Any frame from the server proves the path works; a pong stuck behind a burst of output must
    // not count as a dead connection.
    const alive = () => {
      if (deadline !== undefined) {
        this.clock.clearTimeout(deadline);
        deadline = undefined;
      }
    };
    live.store.add(conn.onPong(alive));
    live.store.add(conn.onMessage(alive));
    const schedule = () => {
      probe = this.clock.setTimeout(() => {
        if (this.incomingPaused && this.live === live) {
          // We are not reading: no pong could be seen. Not a dead connection.
          alive();
          schedule();
          return;
        }
        conn.ping?.();
        deadline ??= this.clock.setTimeout(() => {
          // Paused after the ping went out: its pong is unread, not missing.
          if (this.incomingPaused && this.live === live) return alive();
          this.log(`no pong within ${ka.timeoutMs} ms; dropping the connection`);
          conn.close(`keepalive: no answer within ${ka.timeoutMs} ms`);
        }, ka.timeoutMs);
        deadline.unref?.();
        schedule();
      }, ka.intervalMs);
      probe.unref?.();
    };
    schedule();
    live.store.add({
      dispose: () => {
        if (probe !== undefined) this.clock.clearTimeout(probe);
        if (deadline !== undefined) this.clock.clearTimeout(deadline);
      },
    });
  }

  private onConnectionClosed(live: Live, reason: string): void {
    live.store.dispose();
    if (this.failedError) return;
    if (this.live !== live) return; // an old generation, or a recovery attempt (its own loop sees it)
    this.live = undefined;
    // Starts whose answer died with this connection: recovery must ask the server about them.
    for (const h of this.processes.values()) {
      if (h.phase === 'starting' && h.startGen === live.gen) {
        h.phase = 'startLost';
        void h.awaitAdoption();
      }
    }
    this.log(`connection lost (${reason}); resuming session`);
    void this.recover(reason);
  }

  private async recover(cause: string): Promise<void> {
    const since = this.clock.now();
    this.setState({ kind: 'recovering', since, attempt: 0, cause });
    this.deadlineTimer = this.clock.setTimeout(() => {
      this.fail(
        new DisconnectedError(
          'recoveryDeadline',
          `lost the connection to the exec-server and could not resume within ${Math.round(this.settings.deadlineMs / 1000)} s (${cause}); processes may still be running on the executor`,
        ),
      );
    }, this.settings.deadlineMs);
    for (let attempt = 1; !this.failedError; attempt++) {
      this.setState({ kind: 'recovering', since, attempt, cause });
      let live: Live | undefined;
      try {
        live = (await this.openAttempt(this.session)).live;
        await this.catchUp(live);
        if (live.peer.isClosed) throw new Error('the connection closed during catch-up');
        if (this.failedError) return;
        this.clock.clearTimeout(this.deadlineTimer);
        this.log(`resumed session after ${this.clock.now() - since} ms (attempt ${attempt})`);
        this.becomeConnected(live);
        return;
      } catch (e) {
        live?.peer.close('recovery attempt failed');
        if (this.failedError) return;
        if (e instanceof RpcError && e.code === ErrorCode.InvalidRequest) {
          // `unknown session id`: the executor forgot the session (expired or restarted).
          this.fail(new DisconnectedError('sessionLost', `the exec-server no longer knows this session (${e.message}); processes started through it are gone or unreachable`));
          return;
        }
        this.log(`resume attempt ${attempt} failed: ${describe(e)}`);
        await this.sleep(backoffDelay(attempt, { ...this.settings.backoff, jitter: this.jitter }));
      }
    }
  }

  /**
   * Before declaring the connection recovered: `process/read afterSeq=<last published>` for every
   * live process, merged with the live notifications already flowing on the new connection. Lost
   * starts are adopted (or fail cleanly); evicted output fails only its own process.
   */
  private async catchUp(live: Live): Promise<void> {
    const targets = [...this.processes.values()].filter((h) => !h.isFinished && (h.phase === 'started' || h.phase === 'startLost'));
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const h = targets[next++]!;
        const afterSeq = h.orderer.lastPublished;
        let raw: unknown;
        try {
          raw = await live.peer.request('process/read', { processId: h.processId, afterSeq });
        } catch (e) {
          if (e instanceof RpcError && e.code === ErrorCode.InvalidRequest) {
            // `unknown process id`.
            if (h.phase === 'startLost') {
              h.adoption?.reject(new NotStartedError(h.processId));
              if (this.processes.get(h.processId) === h) this.processes.delete(h.processId);
            } else {
              h.fail(new OutputLostError(h.processId, afterSeq + 1, undefined));
            }
            continue;
          }
          throw e;
        }
        const read = ProcessReadResult.safeParse(raw);
        if (!read.success) throw new Error(`unexpected process/read result for ${h.processId}`);
        if (h.phase === 'startLost') {
          h.phase = 'started';
          h.adoption?.resolve({ processId: h.processId });
        }
        const outcome = h.orderer.mergeRead(read.data);
        h.publish(outcome.events);
        if (outcome.lost) h.fail(new OutputLostError(h.processId, outcome.lost.fromSeq, outcome.lost.toSeq));
      }
    };
    await Promise.all(Array.from({ length: Math.min(CATCH_UP_PARALLEL, targets.length) }, worker));
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

  private onNotification(method: string, params: unknown): void {
    const p = params as Record<string, unknown> | undefined;
    const handle = typeof p?.processId === 'string' ? this.processes.get(p.processId) : undefined;
    if (!handle) return; // unknown, finished, or started by another client of the session
    switch (method) {
      case 'process/output': {
        // Hot path: checked by hand instead of through zod.
        const { seq, stream, chunk } = p as { seq: unknown; stream: unknown; chunk: unknown };
        if (typeof seq !== 'number' || typeof chunk !== 'string' || (stream !== 'stdout' && stream !== 'stderr' && stream !== 'pty')) return;
        handle.receive({ type: 'output', seq, stream, data: Buffer.from(chunk, 'base64') });
        return;
      }
      case 'process/exited': {
        const n = ProcessExitedNotification.safeParse(params);
        if (!n.success) return;
        handle.receive({ type: 'exited', seq: n.data.seq, exitCode: n.data.exitCode, sandboxDenied: n.data.sandboxDenied ?? false }, n.data.sandboxDenied === undefined);
        return;
      }
      case 'process/closed': {
        const n = ProcessClosedNotification.safeParse(params);
        if (!n.success) return;
        handle.receive({ type: 'closed', seq: n.data.seq ?? handle.orderer.seqForUnnumberedClosed() });
        return;
      }
      default:
        return;
    }
  }

  // ───────────────────────────── state ─────────────────────────────

  private setState(state: ConnectionState): void {
    this.stateValue = state;
    this.stateEmitter.fire(state);
  }

  /** Final: every waiting or future call, and every process handle, ends with `error`. */
  private fail(error: DisconnectedError): void {
    if (this.failedError) return;
    this.failedError = error;
    if (this.deadlineTimer !== undefined) this.clock.clearTimeout(this.deadlineTimer);
    this.cancelSleep?.();
    const attempt = this.attempt;
    this.attempt = undefined;
    attempt?.abort.abort(error);
    attempt?.live?.peer.close(error.message);
    const live = this.live;
    this.live = undefined;
    live?.peer.close(error.message);
    this.admission.failAll(error);
    for (const w of this.waiters) w.reject(error);
    this.waiters.clear();
    for (const h of [...this.processes.values()]) h.fail(error);
    this.processes.clear();
    if (error.reason !== 'disposed') this.log(`failed: ${error.message}`);
    this.setState({ kind: 'failed', error });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.cancelSleep = undefined;
        resolve();
      }, ms);
      this.cancelSleep = () => {
        this.clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  private nextId(kind: string): string {
    return `${this.tag}-${kind}${++this.idCounter}`;
  }
}

function parseResult<M extends RequestMethod>(method: M, raw: unknown): ResultOf<M> {
  const parsed = requests[method].result.safeParse(raw);
  if (!parsed.success) throw new RemoteError(method, ErrorCode.Internal, 'the server answered with an unexpected result');
  return parsed.data as ResultOf<M>;
}

function toUri(path: string): string {
  return path.startsWith('file:') ? path : pathToFileURL(path).href;
}

function fromUri(uri: string): string {
  try {
    return fileURLToPath(uri);
  } catch {
    return uri;
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, method: string): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new AbortedError(method, { cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError(method, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
