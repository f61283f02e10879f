import {
  BINARY_OUTPUT_FIELD,
  ErrorCode,
  describeZodError,
  FS_WATCH_FIELD,
  InitializeParams,
  OutputSpoolAsk,
  SESSION_TAKEN_OVER,
  SESSION_TTL_FIELD,
} from '../protocol';
import type { FsWatchLimits, InitializeResult, EnvironmentInfo } from '../protocol';
import { RpcError, encodeNotification, RpcPeer, type Router, type Transport } from '../rpc';
import {
  ANSWER_RESERVE_MIN,
  Admission,
  ByteMeter,
  CONNECTION_REQUEST_BYTES,
  SMALL_REQUEST_BYTES,
  processServerBudgets,
  type ServerBudgets,
} from './requestAdmission';
import type { FileHandleTable } from './fileHandles';
import { ConnectionWatches, DEFAULT_FS_WATCH_LIMITS, type WatchBudget } from './fsWatch';
import type { Session, SessionConnection } from './session';
import type { SessionRegistry } from './sessionRegistry';

/** What every request handler gets: the session, and a way to notify this connection. */
export interface RequestContext {
  session: Session;
  fileHandles: FileHandleTable;
  notify(method: string, params: unknown): void;
  /** Streaming `http/request` ids active on this connection (unique while active). */
  activeHttpStreams: Set<string>;
  /** How to end each of them early (`execBridge/httpCancel`). */
  httpCancels: Map<string, () => void>;
  /** Aborted when this connection ends (streamed HTTP bodies stop). */
  signal: AbortSignal;
  /**
   * Waits until an answer carrying `dataBytes` of data may be built (the server's answer budget; one
   * large answer of this connection at a time, none while it is congested). Held until the request ends.
   */
  reserveAnswer?(dataBytes: number): Promise<void>;
  /** True while this connection's outgoing buffer is over its high-water mark. */
  congested(): boolean;
  /** Calls `cb` once the congestion clears, or the connection ends. */
  whenUncongested(cb: () => void): void;
  /** This connection negotiated `execBridgeOutputSpool`: `process/read` serves spooled output. */
  outputSpool?: boolean;
  /** This connection negotiated `execBridgeFsWatch`: its file watches (ended with it). */
  fsWatches?: ConnectionWatches;
}

export interface ConnectionOptions {
  registry: SessionRegistry;
  router: Router<RequestContext>;
  environmentInfo: () => EnvironmentInfo;
  /** Above this many buffered bytes, processes stop reading their output (backpressure). */
  highWaterMark?: number;
  lowWaterMark?: number;
  /** Requests a connection may have in flight; more are refused (a flood must not exhaust memory). */
  maxInFlight?: number;
  /** The connection is closed unless `initialize` and `initialized` arrive within this (default: no bound). */
  handshakeTimeoutMs?: number;
  /** Sends a keepalive probe (a WebSocket ping); its answer must reach `heard()`. */
  ping?: () => void;
  /** How long a probed connection has to show a sign of life (default 5 s). */
  probeTimeoutMs?: number;
  log?: (line: string) => void;
  /** What this connection's unfinished requests may hold (their JSON text; default 64 MiB). */
  maxRequestBytes?: number;
  /** Shared by the connections of one server (default: this process's). */
  budgets?: ServerBudgets;
  /** Bounds of one connection's file watches (`execBridge/fsWatch`), and the directories all connections may watch together. */
  fsWatchLimits?: FsWatchLimits;
  fsWatchBudget?: WatchBudget;
}

const HIGH_WATER = 8 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/**
 * Child output stops being read (and large answers wait) above this much unsent: each unsent output
 * frame holds a pooled buffer, and at 8 MiB a stream kept the server ~20 MiB larger (bench/RESULTS.md,
 * Session 5). Requests are still read up to HIGH_WATER, so a client's pause or acknowledgement gets in.
 */
const OUTPUT_HIGH_WATER = 2 * 1024 * 1024;

function family(method: string): string {
  if (method.startsWith('fs/')) return 'filesystem';
  if (method.startsWith('http/')) return 'http';
  if (method.startsWith('environment/')) return `environment ${method.slice('environment/'.length)}`;
  return 'exec';
}

/**
 * One client connection: the initialize/initialized handshake and its gatekeeping, session
 * attach/resume/detach, concurrent dispatch through the router, and the protocol-violation rules
 * of the real server (a stray notification or an unsolicited response drops the connection).
 */
export class ServerConnection implements SessionConnection {
  private readonly peer: RpcPeer;
  private session: Session | undefined;
  /** Set once another connection took the session over (`takenOver`): why calls here fail. */
  private lostTo: string | undefined;
  private initializeDone = false;
  private initializing = false;
  private initializedReceived = false;
  private inFlight = 0;
  private readonly activeHttpStreams = new Set<string>();
  private readonly httpCancels = new Map<string, () => void>();
  private readonly abort = new AbortController();
  private readonly highWater: number;
  private readonly admission: Admission;
  /** Bytes of this connection's requests not yet answered (process/write data, fs/writeFile contents). */
  private readonly requestBytes: ByteMeter;
  private readonly budgets: ServerBudgets;
  /** Settles when this connection's last large answer was handed on (they are built one at a time). */
  private answerTurn: Promise<void> = Promise.resolve();
  private handshakeTimer: NodeJS.Timeout | undefined;
  /** When a frame, a pong or a drain last proved the peer is there. */
  private lastHeard = Date.now();
  private probing = false;
  /** This client asked for binary output frames in `initialize` and the transport carries them. */
  private binary = false;
  /** This client asked for spooled output in `initialize` and the server spools. */
  private outputSpool = false;
  /** This client asked for file watches in `initialize`; they end with the connection. */
  private fsWatches: ConnectionWatches | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly options: ConnectionOptions,
  ) {
    this.highWater = options.highWaterMark ?? HIGH_WATER;
    transport.lowWaterMark = options.lowWaterMark ?? LOW_WATER;
    // Every outgoing frame counts: over the mark, no more requests are read from this client.
    transport.highWaterMark = this.highWater;
    this.admission = new Admission(() => this.congested());
    this.requestBytes = new ByteMeter(options.maxRequestBytes ?? CONNECTION_REQUEST_BYTES);
    this.budgets = options.budgets ?? processServerBudgets();
    this.peer = new RpcPeer(transport, {
      onRequest: (method, params, _id, bytes) => this.handle(method, params, bytes),
      onNotification: (method) => this.onNotification(method),
      onUnexpectedResponse: () => this.drop('client sent a response nobody asked for'),
    });
    transport.onMessage(() => this.heard());
    transport.onDrain(() => {
      this.heard();
      this.admission.pump();
      this.budgets.answers.pump();
    });
    if (options.handshakeTimeoutMs !== undefined) {
      const ms = options.handshakeTimeoutMs;
      this.handshakeTimer = setTimeout(() => this.drop(`no initialize and initialized within ${ms} ms`), ms);
      this.handshakeTimer.unref();
    }
    this.peer.onClose(() => {
      clearTimeout(this.handshakeTimer);
      this.abort.abort();
      this.admission.close();
      this.fsWatches?.dispose();
      if (this.session) options.registry.detach(this.session, this);
    });
  }

  /** A sign of life from the peer (any frame, a pong, a drained buffer). */
  heard(): void {
    this.lastHeard = Date.now();
  }

  /**
   * Another connection wants this one's session: ping, and close this connection unless the
   * peer shows a sign of life in time. A frozen peer (a stopped proxy, a half-open socket) thus
   * gives its session up within the probe time instead of holding it until TCP gives up.
   */
  probe(): void {
    const ping = this.options.ping;
    if (!ping || this.probing || this.peer.isClosed) return;
    this.probing = true;
    const since = Date.now();
    const ms = this.options.probeTimeoutMs ?? 5000;
    ping();
    setTimeout(() => {
      this.probing = false;
      if (this.lastHeard < since && !this.peer.isClosed)
        this.drop(`no sign of life within ${ms} ms while another connection resumes its session`);
    }, ms).unref();
  }

  get isClosed(): boolean {
    return this.peer.isClosed;
  }

  /**
   * Another connection took this one's session over: calls on this connection fail from now on
   * (their session is gone from it), the client is told, and the connection closes once that
   * notification is written (or after a second).
   */
  takenOver(sessionId: string): void {
    this.session = undefined;
    this.lostTo = `session ${sessionId} was taken over by another connection`;
    this.abort.abort();
    this.fsWatches?.dispose();
    this.options.log?.(`session ${sessionId} taken over by another connection`);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.drop(this.lostTo ?? 'session taken over');
    };
    this.peer.notifyFrame(Buffer.from(encodeNotification(SESSION_TAKEN_OVER, { sessionId })), close);
    setTimeout(close, 1000).unref();
  }

  // SessionConnection
  notify(method: string, params: unknown): void {
    this.peer.notify(method, params);
  }

  notifyFrame(frame: Buffer, sent?: () => void): void {
    this.peer.notifyFrame(frame, sent);
  }

  binaryOutput(): boolean {
    return this.binary;
  }

  notifyBinary(frame: Buffer, sent?: () => void): void {
    this.peer.sendBinary(frame, sent);
  }

  congested(): boolean {
    return this.transport.bufferedBytes > Math.min(this.highWater, OUTPUT_HIGH_WATER);
  }

  whenUncongested(cb: () => void): void {
    if (!this.congested() || this.transport.isClosed) {
      cb();
      return;
    }
    const subs = [this.transport.onDrain(() => done()), this.transport.onClose(() => done())];
    const done = () => {
      for (const s of subs) s.dispose();
      cb();
    };
  }

  close(reason: string): void {
    this.peer.close(reason);
  }

  private drop(reason: string): void {
    this.options.log?.(`dropping connection: ${reason}`);
    this.peer.close(reason);
  }

  private onNotification(method: string): void {
    if (method === 'initialized' && this.initializeDone) {
      this.initializedReceived = true;
      clearTimeout(this.handshakeTimer);
      return;
    }
    // As the real server does: `initialized` before `initialize`, or any other notification, ends the connection.
    this.drop(method === 'initialized' ? '`initialized` before `initialize`' : `unexpected notification \`${method}\``);
  }

  private async handle(method: string, params: unknown, bytes: number): Promise<unknown> {
    const max = this.options.maxInFlight ?? 4096;
    if (this.inFlight >= max) {
      throw RpcError.internal(`too many requests in flight on this connection (limit ${max}); wait for answers before sending more`);
    }
    this.holdRequestBytes(bytes);
    this.inFlight++;
    let release: (() => void) | undefined;
    let answerRelease: (() => void) | undefined;
    try {
      if (method === 'initialize') return this.initialize(params);
      if (!this.options.router.has(method)) return this.options.router.dispatch(method, params, undefined as never);
      if (this.lostTo) throw RpcError.invalidRequest(this.lostTo);
      if (!this.initializeDone || !this.session)
        throw RpcError.invalidRequest(`client must call initialize before using ${family(method)} methods`);
      if (!this.initializedReceived) throw RpcError.invalidRequest(`client must send initialized before using ${family(method)} methods`);
      const admitted = this.admission.enter(method);
      if (admitted) release = await admitted;
      if (this.peer.isClosed) throw RpcError.internal('connection closed');
      const ctx: RequestContext = {
        session: this.session,
        fileHandles: this.session.fileHandles,
        notify: (m, p) => this.notify(m, p),
        activeHttpStreams: this.activeHttpStreams,
        httpCancels: this.httpCancels,
        signal: this.abort.signal,
        reserveAnswer: async (dataBytes) => {
          answerRelease ??= await this.reserveAnswer(dataBytes);
        },
        congested: () => this.congested(),
        whenUncongested: (cb) => this.whenUncongested(cb),
        outputSpool: this.outputSpool,
        ...(this.fsWatches ? { fsWatches: this.fsWatches } : {}),
      };
      return await this.options.router.dispatch(method, params, ctx);
    } finally {
      this.inFlight--;
      this.requestBytes.give(bytes);
      this.budgets.requests.give(bytes);
      answerRelease?.();
      // The answer is sent right after this (before the admission looks again).
      release?.();
    }
  }

  /**
   * Counts a request's bytes until it is answered, or refuses it (-32001, the connection stays up)
   * when this connection's or the server's unfinished requests would hold more than their budget.
   * Refused, not left unread: a held write may be waiting for a child that waits for this client's
   * next request (an ack, a resume), so not reading would deadlock. Small requests always get in.
   */
  private holdRequestBytes(bytes: number): void {
    if (bytes <= SMALL_REQUEST_BYTES) {
      this.requestBytes.add(bytes);
      this.budgets.requests.add(bytes);
      return;
    }
    const mine = this.requestBytes;
    const all = this.budgets.requests;
    const over = !mine.take(bytes) ? mine : !all.take(bytes) ? all : undefined;
    if (!over) return;
    if (over === all) mine.give(bytes);
    const whose = over === mine ? "this connection's" : "the server's";
    const mib = (n: number) => Math.ceil(n / (1024 * 1024));
    throw new RpcError(
      ErrorCode.Overloaded,
      `server overloaded: ${whose} unfinished requests already hold ${mib(over.heldBytes)} MiB (limit ${mib(over.limit)} MiB); wait for their answers (writes to a process that reads its stdin, files written) before sending more large requests`,
      { kind: 'requestBudget', scope: over === mine ? 'connection' : 'server', limitBytes: over.limit, heldBytes: over.heldBytes },
    );
  }

  /**
   * Waits for the turn of a large answer (`dataBytes` of data; smaller ones need none): after this
   * connection's previous large answer was handed on, once the connection is not congested (that
   * answer went out) and the server's answer budget has room. Resolves with the release.
   */
  private async reserveAnswer(dataBytes: number): Promise<(() => void) | undefined> {
    if (dataBytes < ANSWER_RESERVE_MIN) return undefined;
    // In place as a binary frame; as base64 JSON the data plus a text 4/3 its size.
    const cost = this.binary ? dataBytes : Math.ceil((dataBytes * 7) / 3);
    const previous = this.answerTurn;
    let next!: () => void;
    this.answerTurn = new Promise<void>((r) => (next = r));
    // On a later turn: the answer must be handed to the transport (and counted as buffered) first.
    const passOn = () => setImmediate(next);
    await previous;
    try {
      const release = await this.budgets.answers.acquire(cost, () => !this.congested(), this.abort.signal);
      return () => {
        release();
        passOn();
      };
    } catch {
      passOn();
      throw RpcError.internal('connection closed');
    }
  }

  private initialize(raw: unknown): InitializeResult {
    if (this.initializeDone || this.initializing) throw RpcError.invalidRequest('initialize may only be sent once per connection');
    const parsed = InitializeParams.safeParse(raw ?? {}, { reportInput: true });
    if (!parsed.success) throw new RpcError(ErrorCode.InvalidParams, describeZodError(parsed.error));
    const { resumeSessionId } = parsed.data;
    const binary = parsed.data.execBridgeBinaryOutput === true && this.transport.sendBinary !== undefined;
    // A failed initialize (unknown session, -32010) may be retried on the same connection.
    const takeOver = parsed.data.execBridgeTakeOver === true;
    const askedTtl = parsed.data[SESSION_TTL_FIELD];
    const session = resumeSessionId
      ? this.options.registry.resume(resumeSessionId, this, takeOver, askedTtl)
      : this.options.registry.create(this, askedTtl, parsed.data.clientName);
    if (this.peer.isClosed) {
      this.options.registry.detach(session, this);
      throw RpcError.internal('connection closed during initialize');
    }
    this.session = session;
    this.initializeDone = true;
    // Set before the answer is sent; output produced meanwhile is binary already (the client asked for it).
    this.binary = binary;
    this.peer.binaryResults = binary;
    this.options.log?.(`${resumeSessionId ? 'resumed' : 'created'} session ${session.id}`);
    const result: InitializeResult = { sessionId: session.id, environmentInfo: this.options.environmentInfo() };
    if (binary) result[BINARY_OUTPUT_FIELD] = true;
    const askedSpool = spoolAsk(parsed.data.execBridgeOutputSpool);
    const spool = askedSpool ? session.enableSpool(askedSpool.processBytes) : undefined;
    if (spool) {
      this.outputSpool = true;
      result.execBridgeOutputSpool = { processBytes: spool.processBytes, totalBytes: spool.totalBytes };
    }
    // Only to a client that asked: codex-style clients see codex's answer.
    if (askedTtl !== undefined) result[SESSION_TTL_FIELD] = session.ttlMs;
    if (parsed.data[FS_WATCH_FIELD] === true) {
      const limits = this.options.fsWatchLimits ?? DEFAULT_FS_WATCH_LIMITS;
      this.fsWatches = new ConnectionWatches((m, p) => this.notify(m, p), limits, this.options.fsWatchBudget);
      result[FS_WATCH_FIELD] = { ...limits };
    }
    return result;
  }
}

/** The client's `execBridgeOutputSpool` (`OutputSpoolAsk`); anything else asks for nothing, as codex ignores fields it does not know. */
function spoolAsk(value: unknown): { processBytes?: number } | undefined {
  const parsed = OutputSpoolAsk.safeParse(value);
  if (!parsed.success) return undefined;
  return parsed.data === true ? {} : parsed.data;
}
