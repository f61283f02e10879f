import { BinaryResult, ErrorCode, FS_CHANGED } from '../protocol';
import type { EnvironmentInfo, FsWatchLimits, ParamsOf, RequestMethod, ResultOf } from '../protocol';
import { ConnectionClosedError, RpcError, MAX_ANSWER_BYTES } from '../rpc';
import { systemClock, errorMessage, Emitter, type Clock, type Disposable, type Event } from '../util';
import { Admission, type Permit } from './callPermits';
import { abortable, parseResult, toUri } from './callHelpers';
import { connectorFor } from './connectors';
import { inheritAllEnv } from './envPolicy';
import { HttpStreams, type HttpStreamRequest, type HttpStreamResponse } from './httpStream';
import { AbortedError, AnswerTooLargeError, ConnectFailedError, ExecClientError, OutcomeUnknownError, RemoteError } from './errors';
import { adoptRead, replaySpool, SessionExpiredError, type AttachedProcess } from './processAttach';
import { ProcessCalls } from './processCalls';
import { ProcessHandleImpl, type HandleHost, type ProcessHandle } from './processHandle';
import { ProcessTable } from './processTable';
import { DEFAULT_SESSION_TTL_MS, SessionLink } from './sessionLink';
import { TypedCalls } from './typedCalls';
import type { CallOptions, ClientOptions, ConnectionState, StartProcessOptions } from './types';

const HTTP_BODY_DELTA = 'http/request/bodyDelta';

/** Calls whose answer has no size bound but the file's: the only ones an oversized answer can be. */
const UNBOUNDED_ANSWER: ReadonlySet<RequestMethod> = new Set<RequestMethod>(['fs/readFile']);

/** Calls that may simply be sent again after a reconnect: reads, and writes (made idempotent by `writeId`). */
const RETRYABLE: ReadonlySet<RequestMethod> = new Set<RequestMethod>([
  'process/read',
  'process/write',
  'process/resize',
  'process/pause',
  'process/resume',
  'process/ack',
  'fs/readFile',
  'fs/getMetadata',
  'fs/readDirectory',
  'fs/canonicalize',
  'fs/readBlock',
  'environment/info',
  'environment/status',
]);
/** Teardown calls: they may take the reserved permit. */
const CLEANUP: ReadonlySet<RequestMethod> = new Set<RequestMethod>(['process/terminate', 'fs/close']);

/**
 * The resilient exec-server client: one session on one executor, kept across connection drops.
 * Build it with `ExecServerClient.connect(options)`. The connection state machine (connect,
 * keepalive, resume) is `SessionLink`; the tracked processes are a `ProcessTable`; this class is
 * the request API and the in-flight rules (file and environment calls: `TypedCalls`; the calls of
 * process handles: `ProcessCalls`).
 *
 * Invariants: only a close of the *current* connection generation starts recovery; calls made
 * while recovering wait for the replacement; catch-up (`process/read afterSeq`) for every live
 * process completes before the state returns to `connected`; once `failed`, every call and handle
 * ends with the same `DisconnectedError`.
 */
export class ExecServerClient extends TypedCalls implements Disposable {
  /** Connects, sends `initialize`/`initialized`; rejects with `ConnectFailedError`. */
  static async connect(options: ClientOptions): Promise<ExecServerClient> {
    const client = new ExecServerClient(options);
    try {
      await client.link.connectFirst(options.resumeSessionId, options.takeOverSession === true);
    } catch (e) {
      client.dispose();
      if (e instanceof ConnectFailedError || e instanceof SessionExpiredError) throw e;
      throw new ConnectFailedError(`cannot connect to the exec-server: ${errorMessage(e)}`, { cause: e });
    }
    return client;
  }

  private readonly clock: Clock;
  private readonly log: (line: string) => void;
  private readonly cleanupStallMs: number;
  private readonly admission: Admission;
  private readonly link: SessionLink;
  private readonly processes = new ProcessTable();
  /** Prefix of generated process and write ids: unique per client within a session's lifetime. */
  private readonly tag: string;
  private idCounter = 0;
  private readonly host: HandleHost;
  private readonly tracking: ClientOptions['onProcessTracking'];
  private readonly maxAnswerBytes: number;
  private readonly fsChanged = new Emitter<unknown>();
  private readonly httpStreams: HttpStreams;
  /** `execBridge/fsChanged` notifications of the current connection, unparsed (FsWatchClient, ./fsWatch.ts, reads them). */
  readonly onFsChanged: Event<unknown> = this.fsChanged.event;

  private constructor(options: ClientOptions) {
    super();
    this.clock = options.clock ?? systemClock;
    const random = options.random ?? Math.random;
    this.log = options.log ?? (() => undefined);
    this.cleanupStallMs = options.cleanupStallMs ?? 10_000;
    this.maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    const connector = options.connector ?? (options.endpoint ? connectorFor(options.endpoint, this.maxAnswerBytes) : undefined);
    if (!connector) throw new TypeError('ExecServerClient needs an endpoint or a connector');
    this.admission = new Admission(options.maxInFlight ?? 64);
    const jitter = random() * 0.3;
    this.tag = Math.floor(random() * 0xffffffff)
      .toString(16)
      .padStart(8, '0');
    const settings = {
      clientName: options.clientName ?? 'exec-bridge',
      deadlineMs: options.deadlineMs,
      sessionTtlMs: options.sessionTtlMs === undefined ? DEFAULT_SESSION_TTL_MS : options.sessionTtlMs,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 5_000,
      backoff: options.backoff ?? { stepMs: 100, maxMs: 2000, longMaxMs: 30_000 },
      keepalive: options.keepalive ?? { intervalMs: 5_000, timeoutMs: 5_000 },
      jitter,
      binaryOutput: options.binaryOutput ?? true,
      outputSpool: options.outputSpool ?? false,
      fsWatch: options.fsWatch ?? true,
    };
    this.link = new SessionLink(settings, connector, this.clock, this.log, {
      onNotification: (method, params) => {
        // File watch events go to ./fsWatch.ts; everything else is about processes.
        if (method === FS_CHANGED) this.fsChanged.fire(params);
        else if (method === HTTP_BODY_DELTA) this.httpStreams.dispatch(params);
        else this.processes.dispatch(method, params);
      },
      onBinary: (frame) => this.processes.dispatchBinary(frame),
      onConnectionLost: (gen) => {
        this.processes.markStartsLost(gen);
        this.httpStreams.connectionLost(gen);
      },
      catchUp: (live) =>
        this.processes.catchUp(
          live.peer,
          this.link.outputSpool !== undefined ? (h, after) => this.continueSpool(h, after, false) : undefined,
        ),
      onFailed: (error) => {
        this.admission.failAll(error);
        this.processes.failAll(error);
        this.httpStreams.failAll(error);
      },
    });
    this.httpStreams = new HttpStreams({
      invoke: (method, params, o, hooks) => this.invoke(method, params, o, hooks),
      nextId: (kind) => this.nextId(kind),
      capabilities: () => this.link.capabilities,
      currentGen: () => this.link.current?.gen,
    });
    this.onDidChangeState = this.link.onDidChangeState;
    this.host = new ProcessCalls({
      invoke: (method, params, o) => this.invoke(method, params, o),
      capabilities: () => this.link.capabilities,
      sleep: (ms) => this.link.sleep(ms),
      nextId: (kind) => this.nextId(kind),
      untrack: (h) => this.untrack(h),
    });
    this.tracking = options.onProcessTracking;
  }

  // ───────────────────────────── public surface ─────────────────────────────

  /** Current state; see `onDidChangeState`. */
  get state(): ConnectionState {
    return this.link.state;
  }
  /** Fires on every state change (also on each new reconnect attempt while recovering). */
  readonly onDidChangeState: Event<ConnectionState>;
  /** The session kept across reconnects. */
  get sessionId(): string {
    return this.link.sessionId;
  }
  /** From the `initialize` result (or `environment/info` on servers that do not embed it). */
  get environmentInfo(): EnvironmentInfo | undefined {
    return this.link.environmentInfo;
  }
  /** How long the executor keeps this session (and what runs in it) once the connection drops; undefined: it did not say (codex). */
  get sessionTtlMs(): number | undefined {
    return this.link.sessionTtlMs;
  }
  /** How long recovery goes on after a drop before the client fails; undefined: until the executor says the session is gone. */
  get recoveryDeadlineMs(): number | undefined {
    return this.link.recoveryDeadlineMs;
  }
  /**
   * While recovering, try to resume now instead of waiting out the back-off (the network may be
   * back: the window got focus, the user acted on this executor). Returns whether it woke an attempt.
   */
  retryNow(): boolean {
    return this.link.retryNow();
  }
  /** The current connection may watch files (`execBridgeFsWatch`), within these bounds; undefined: it may not (codex). */
  get fsWatchLimits(): FsWatchLimits | undefined {
    return this.link.fsWatch;
  }
  /** Server capabilities (`processResize`, `concurrentRequests`, …); missing ones are false. */
  get capabilities(): Readonly<Record<string, boolean>> {
    return this.link.capabilities;
  }
  /**
   * While true the client stops reading from the connection, so the server (and in the end the
   * command's output pipe) is held back by TCP instead of this process buffering without bound.
   * For a consumer slower than the stream, e.g. a full stdout pipe. Keepalive is suspended
   * meanwhile; calls still go out, but their answers wait too. Applies to later connections.
   */
  setIncomingPaused(paused: boolean): void {
    this.link.setIncomingPaused(paused);
  }

  /** Calls holding an admission permit right now, and the most seen at once (diagnostics, tests). */
  get inFlight(): { now: number; peak: number } {
    return { now: this.admission.inFlight, peak: this.admission.peakInFlight };
  }

  /** Starts a process; events that arrive before the answer are kept for the handle. */
  async startProcess(options: StartProcessOptions): Promise<ProcessHandle> {
    if (this.link.failedError) throw this.link.failedError;
    const processId = options.processId ?? this.nextId('p');
    if (this.processes.has(processId)) {
      throw new RemoteError('process/start', ErrorCode.InvalidRequest, `process ${processId} already exists`);
    }
    const tty = options.tty ?? false;
    const pipeStdin = !tty && (options.pipeStdin ?? false);
    const handle = new ProcessHandleImpl(this.host, processId, tty, tty || pipeStdin);
    const credit = options.creditWindow && this.link.capabilities.execBridgeProcessCredit === true ? options.creditWindow : undefined;
    if (credit) handle.enableCredit(credit);
    this.processes.add(handle);
    this.tracking?.({ processId, tracked: true, tty, stdinWritable: handle.stdinWritable });
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
      ...(options.managedNetwork ? { enforceManagedNetwork: true, managedNetwork: options.managedNetwork } : {}),
      ...(options.managedNetwork && options.reportBlocked ? { execBridgeReportBlocked: true } : {}),
      ...(tty && options.ptySize ? { ptySize: options.ptySize } : {}),
      ...(credit ? { execBridgeCreditWindow: credit } : {}),
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
      this.untrack(handle);
      if (e instanceof AbortedError && wasSent && !this.link.failedError) {
        // The caller gave up but the process may exist: do not leave it running unobserved.
        this.invoke('process/terminate', { processId }).catch(() => undefined);
      }
      throw e;
    }
  }

  /**
   * Follows a process of this session that this client did not start (a resumed session's, after a
   * window reload): its retained output first (what the executor still holds, from the start), then
   * live, in seq order. `tty`/`stdinWritable` as it was started. On a server with credit windows
   * the process gets `creditWindow` (the consumer then reports `outputConsumed`) or none: a credit
   * its earlier client set never holds it for a consumer that does not acknowledge. `afterSeq`:
   * the replay starts after that seq instead (what came before is skipped, as output the executor
   * no longer holds is: a reopened terminal that shows only the newest part, core/terminalReplayRange.ts).
   */
  async attachProcess(
    processId: string,
    o: { tty: boolean; stdinWritable: boolean; creditWindow?: number; afterSeq?: number },
  ): Promise<{ handle: ProcessHandle } & AttachedProcess> {
    const known = this.processes.get(processId);
    if (known) return { handle: known, evictedBefore: 0 };
    const handle = new ProcessHandleImpl(this.host, processId, o.tty, o.stdinWritable);
    handle.phase = 'started';
    this.processes.add(handle);
    try {
      const credit = this.link.capabilities.execBridgeProcessCredit === true;
      if (credit && o.creditWindow) handle.enableCredit(o.creditWindow);
      // The retained output first, while an earlier client's credit still holds the process: turned
      // off (or changed) before the read, the server would read on and could evict what it retains.
      const spool = this.link.outputSpool !== undefined;
      // A first spool page no larger than the terminal's window (the rest follows as it draws).
      const first = await this.invoke('process/read', {
        processId,
        afterSeq: o.afterSeq ?? 0,
        ...(spool && credit && o.creditWindow ? { execBridgeSpoolMaxBytes: o.creditWindow } : {}),
      });
      const attached = adoptRead(handle, first);
      // What comes before `afterSeq` is not replayed: acknowledged at once, or it would hold the process.
      if (credit) await this.invoke('process/ack', { processId, seq: o.afterSeq ?? 0, window: o.creditWindow ?? null });
      if (first.execBridgeSpooled) {
        // The rest of the spool, page by page as the consumer takes it; then the window, merged with live output.
        this.continueSpool(handle, first.nextSeq - 1, true);
      }
      const cap = this.link.outputSpool?.processBytes;
      return { handle, ...attached, ...(cap !== undefined ? { spoolCapBytes: cap } : {}) };
    } catch (e) {
      this.untrack(handle);
      throw e;
    }
  }

  /** Reads the rest of a process's spooled output in the background, as its consumer draws (`replaySpool`). */
  private continueSpool(handle: ProcessHandleImpl, afterSeq: number, skipDropped: boolean): void {
    const processId = handle.processId;
    const read = (after: number, spoolMaxBytes: number | undefined) =>
      this.invoke('process/read', {
        processId,
        afterSeq: after,
        ...(spoolMaxBytes !== undefined ? { execBridgeSpoolMaxBytes: spoolMaxBytes } : {}),
      });
    replaySpool(handle, afterSeq, read, skipDropped).catch((e: unknown) =>
      handle.fail(e instanceof ExecClientError ? e : new RemoteError('process/read', ErrorCode.Internal, errorMessage(e))),
    );
  }

  /** Drops a finished handle; the owner hears of it unless the whole client failed (the session may be resumed). */
  private untrack(handle: ProcessHandleImpl): void {
    if (this.processes.get(handle.processId) !== handle) return;
    this.processes.forget(handle);
    if (!this.link.failedError)
      this.tracking?.({ processId: handle.processId, tracked: false, tty: handle.tty, stdinWritable: handle.stdinWritable });
  }

  /** How many processes this client still tracks (started or starting, not yet finished). */
  get trackedProcessCount(): number {
    return this.processes.size;
  }

  /** A handle this client is still tracking (finished processes are dropped). */
  getProcess(processId: string): ProcessHandle | undefined {
    return this.processes.get(processId);
  }

  /**
   * An HTTP(S) request made by the executor (`http/request`), its body streamed back as it arrives
   * (SSE streams too). Rejects with the executor's error when it could not send the request.
   */
  httpRequestStream(request: HttpStreamRequest): Promise<HttpStreamResponse> {
    return this.httpStreams.request(request);
  }

  /**
   * Escape hatch: a typed raw call (method table in src/protocol/methods.ts), with the same
   * admission, recovery and in-flight rules as the typed helpers. Avoid long `waitMs` polls on
   * servers without capability `concurrentRequests`: they block every later call.
   */
  override call<M extends RequestMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<ResultOf<M>> {
    return this.invoke(method, params, options);
  }

  /**
   * Ends the client: state `failed` (reason `disposed`, with `message` as its words for the user),
   * closes the connection; processes keep running on the executor.
   */
  dispose(message?: string): void {
    this.link.dispose(message);
    this.fsChanged.dispose();
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
    if (this.link.failedError) throw this.link.failedError;
    const { signal } = options;
    const permit = await this.acquirePermit(method, signal);
    try {
      // Each turn needs a new connection generation; the recovery deadline bounds the turns.
      for (;;) {
        const live = await this.link.waitConnected(signal, method);
        hooks.onSent?.(live.gen);
        let raw: unknown;
        try {
          raw = await live.peer.request(method, params, { signal });
        } catch (e) {
          if (this.link.failedError) throw this.link.failedError;
          if (e instanceof RpcError) throw new RemoteError(method, e.code, e.message, e.data);
          if (e instanceof ConnectionClosedError) {
            if (this.link.isWedged(live.gen)) throw new OutcomeUnknownError(method);
            // Sent again, the same answer would only reset the next connection too.
            if (e.messageTooLarge && UNBOUNDED_ANSWER.has(method)) throw new AnswerTooLargeError(method, this.maxAnswerBytes);
            if (hooks.onLost) return await hooks.onLost();
            if (RETRYABLE.has(method)) continue;
            throw new OutcomeUnknownError(method);
          }
          if (signal?.aborted) throw new AbortedError(method, { cause: signal.reason });
          throw e;
        }
        // A binary file result (src/protocol/binaryOutput.ts) is already typed: its bytes, no base64.
        if (raw instanceof BinaryResult) return raw as unknown as ResultOf<M>;
        return parseResult(method, raw);
      }
    } finally {
      permit.release();
    }
  }

  private async acquirePermit(method: RequestMethod, signal: AbortSignal | undefined): Promise<Permit> {
    const cleanup = CLEANUP.has(method);
    const pending = this.admission.acquire(cleanup, signal, method);
    if (!cleanup) return pending;
    // If even the reserved permit stays taken, the connection is wedged (e.g. calls stuck behind
    // long polls): close it so that its calls fail and teardown can go on after the resume.
    const timer = this.clock.setTimeout(() => {
      const live = this.link.current;
      if (!live || this.admission.cleanupWaiting === 0) return;
      this.log(`cleanup call ${method} could not get a permit for ${this.cleanupStallMs} ms; resetting the connection`);
      this.link.dropWedged(live, 'connection wedged: cleanup calls could not be admitted');
    }, this.cleanupStallMs);
    try {
      return await pending;
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  private nextId(kind: string): string {
    return `${this.tag}-${kind}${++this.idCounter}`;
  }
}
