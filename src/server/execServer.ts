import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { Router, MAX_FRAME_BYTES, WebSocketTransport, type Transport } from '../rpc';
import { systemClock, socketAccepts, type Clock } from '../util';
import { ServerConnection, type ConnectionOptions, type RequestContext } from './connection';
import { environmentInfo } from './environment';
import { FifoPool } from './fifoPool';
import { SandboxPrewarmer } from './prewarm';
import { registerProcessMethods } from './processMethods';
import { registerFsMethods } from './fsMethods';
import type { FsWatchLimits } from '../protocol';
import { registerFsWatchMethods, WatchBudget } from './fsWatch';
import { registerHttpMethods } from './httpRequest';
import { treesKilled } from './processTree';
import { SessionRegistry } from './sessionRegistry';
import { PendingSockets, pendingSocketCap } from './socketBudget';
import { SpoolStore } from './spoolStore';
import { planUnsandboxed, type SpawnPlanner } from './spawnPlan';

export interface ExecServerOptions {
  /** Required bearer token for WebSocket clients (none: no auth, only sensible on loopback). */
  token?: string;
  /** Browser origins allowed to connect; any other request carrying `Origin` is refused. */
  allowOrigins?: string[];
  /** Detached-session TTL of clients that ask for none, and exited-process retention (default 30 s, codex's). */
  sessionTtlMs?: number;
  /** The most a client may ask a detached session to be kept (`execBridgeSessionTtlMs`; default 7 days). */
  maxSessionTtlMs?: number;
  planner?: SpawnPlanner;
  /** Output a process keeps for replay, memory window included: beyond the window it is spooled to disk (default 64 MiB; 0: no spool). */
  spoolProcessBytes?: number;
  /** Spooled output of all processes of this server (default 1 GiB): over it, finished processes' oldest bytes go first. */
  spoolTotalBytes?: number;
  /** `capabilities.execBridgeSandbox`: can sandboxed starts run here (asked at each `environment/info`). */
  sandboxAvailable?: boolean | (() => boolean);
  /** How long a sandbox built ahead of time waits for its start (default 30 s; 0: build none). */
  sandboxPrewarmMs?: number;
  clock?: Clock;
  log?: (line: string) => void;
  /** An authenticated WebSocket must `initialize` and send `initialized` within this of its upgrade (default 20 s). */
  handshakeTimeoutMs?: number;
  /** A socket must send a complete HTTP request head within this, or it is closed (default 5 s). */
  headerTimeoutMs?: number;
  /** Authenticated WebSocket connections served at once; more are refused with 503 (default 256). */
  maxConnections?: number;
  /**
   * Sockets not yet an authenticated WebSocket, at once (default 512, at most a quarter of the file
   * descriptor limit); the oldest is closed to make room for a new one (./socketBudget.ts).
   */
  maxPendingSockets?: number;
  /** WebSocket pings this often (default 30 s, as codex). */
  keepaliveIntervalMs?: number;
  /** A connection whose session another one resumes must answer a ping within this (default 5 s). */
  probeTimeoutMs?: number;
  /** Bounds of each connection's file watches (`execBridge/fsWatch`; default DEFAULT_FS_WATCH_LIMITS). */
  fsWatchLimits?: FsWatchLimits;
  /** Directories the file watches of all connections may watch together (default SERVER_WATCH_DIRECTORIES). */
  fsWatchDirectories?: number;
}

const HANDSHAKE_MS = 20_000;
const HEADER_MS = 5_000;
const MAX_CONNECTIONS = 256;
const MAX_PENDING_SOCKETS = 512;
const KEEPALIVE_MS = 30_000;

/** `localhost`, an IPv4 literal in 127.0.0.0/8, or `::1` in any spelling; a name like `127.x.example` is not. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (/^127(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(h)) return true;
  if (!h.includes(':') || !/^[0-9a-f:]+$/.test(h)) return false;
  try {
    return new URL(`http://[${h}]/`).hostname === '[::1]';
  } catch {
    return false;
  }
}

/**
 * The exec-server core: a session registry and a router, served over any number of transports
 * (WebSocket listener or a single stdio connection).
 */
export class ExecServer {
  readonly registry: SessionRegistry;
  readonly router = new Router<RequestContext>();
  private readonly connections = new Set<ServerConnection>();
  private http: Server | undefined;
  private wss: WebSocketServer | undefined;
  private readonly envInfo: () => ReturnType<typeof environmentInfo>;
  private readonly fifos = new FifoPool();
  private readonly prewarm: SandboxPrewarmer;
  private readonly websockets = new Map<ServerConnection, WebSocketTransport>();
  private keepalive: NodeJS.Timeout | undefined;
  private pending: PendingSockets | undefined;
  private refusals = { count: 0, since: 0 };
  /** Output the windows evict, for clients that ask (`execBridgeOutputSpool`). */
  readonly spool: SpoolStore;
  /** Directories watched (`execBridge/fsWatch`) by all connections together. */
  private readonly watchBudget: WatchBudget;

  constructor(private readonly options: ExecServerOptions = {}) {
    this.fifos.warm();
    this.watchBudget = new WatchBudget(options.fsWatchDirectories);
    this.prewarm = new SandboxPrewarmer(this.fifos, { idleMs: options.sandboxPrewarmMs, log: options.log });
    this.spool = new SpoolStore({ processBytes: options.spoolProcessBytes, totalBytes: options.spoolTotalBytes }, options.log);
    this.registry = new SessionRegistry({
      ttlMs: options.sessionTtlMs ?? 30_000,
      maxTtlMs: options.maxSessionTtlMs,
      clock: options.clock ?? systemClock,
      planner: options.planner ?? planUnsandboxed,
      fifos: this.fifos,
      prewarm: this.prewarm,
      spool: this.spool,
    });
    registerProcessMethods(this.router);
    registerFsMethods(this.router);
    registerFsWatchMethods(this.router);
    registerHttpMethods(this.router);
    this.router.on('execBridge/sessions', () => ({ now: this.registry.clock.now(), sessions: this.registry.summaries() }));
    this.router.on('environment/info', () => this.envInfo()).on('environment/status', () => ({ status: 'ready' }));
    const sandbox = options.sandboxAvailable ?? false;
    const info = environmentInfo({ sandbox: typeof sandbox === 'boolean' ? sandbox : sandbox() });
    this.envInfo =
      typeof sandbox === 'boolean' ? () => info : () => ({ ...info, capabilities: { ...info.capabilities, execBridgeSandbox: sandbox() } });
  }

  /** Directories the file watches of all connections watch now (`execBridge/fsWatch`). */
  get watchedDirectories(): number {
    return this.watchBudget.inUse;
  }

  /** Serves one connection over a transport (stdio, or a WebSocket accepted elsewhere). */
  serve(transport: Transport, extra: Partial<ConnectionOptions> = {}): ServerConnection {
    const conn = new ServerConnection(transport, {
      registry: this.registry,
      router: this.router,
      environmentInfo: this.envInfo,
      log: this.options.log,
      fsWatchBudget: this.watchBudget,
      ...(this.options.fsWatchLimits ? { fsWatchLimits: this.options.fsWatchLimits } : {}),
      ...extra,
    });
    this.connections.add(conn);
    transport.onClose(() => this.connections.delete(conn));
    return conn;
  }

  /** Listens for WebSocket clients on host:port (port 0 picks a free one); resolves the bound `ws://` URL. */
  async listen(host: string, port: number): Promise<string> {
    const http = this.createListener();
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    const addr = http.address() as AddressInfo;
    const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `ws://${h}:${addr.port}`;
  }

  /**
   * Listens for WebSocket clients on a unix socket (same auth rules as `listen`); the socket is made
   * 0600. A stale socket file (nobody accepting) is replaced; a live one is an error. Resolves the
   * client URL `ws+unix:PATH:/` (the `ws` package's form).
   */
  async listenUnix(path: string): Promise<string> {
    if (path.includes(':')) throw new Error(`a unix socket path must not contain ":" (${path})`);
    if (existsSync(path)) {
      if (await socketAccepts(path)) throw new Error(`${path} is in use by a running server`);
      unlinkSync(path);
    }
    const http = this.createListener();
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(path, () => {
        http.off('error', reject);
        resolve();
      });
    });
    chmodSync(path, 0o600);
    return `ws+unix:${path}:/`;
  }

  /** No connection and no session (attached or detached): what an idle-exit timer waits for. */
  get idle(): boolean {
    return this.connections.size === 0 && this.registry.size === 0;
  }

  private createListener(): Server {
    const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
    this.wss = wss;
    const http = createServer((req, res) => {
      // Served to anyone (it says nothing but "up"), and the socket closes after the answer, so a
      // plain request never keeps a place in the unauthenticated budget.
      const headers = { 'content-type': 'text/plain', connection: 'close' };
      if (req.url === '/readyz') {
        res.writeHead(200, headers).end('ok');
      } else if (req.url === '/' || req.url?.startsWith('/?')) {
        res.writeHead(400, headers).end("Connection header did not include 'upgrade'");
      } else {
        res.writeHead(404, headers).end('not found');
      }
    });
    this.http = http;
    const handshakeMs = this.options.handshakeTimeoutMs ?? HANDSHAKE_MS;
    const maxConnections = this.options.maxConnections ?? MAX_CONNECTIONS;
    // Two budgets: sockets that have not passed the token check (any local user can open them)
    // and authenticated WebSockets; the first never takes room from the second (docs/security.md).
    const pending = new PendingSockets(
      pendingSocketCap(this.options.maxPendingSockets ?? MAX_PENDING_SOCKETS),
      this.options.headerTimeoutMs ?? HEADER_MS,
      this.options.log,
    );
    this.pending = pending;
    http.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      pending.add(socket);
    });
    // Once listening, an error of the listener (an accept that failed) must not end the process.
    http.on('error', (e) => this.options.log?.(`listener: ${e.message}`));
    http.on('upgrade', (req, socket: Socket, head) => {
      // The token first: an unauthenticated request learns nothing, not even that the server is full.
      const refusal =
        this.checkUpgrade(req) ??
        (this.websockets.size >= maxConnections
          ? ([503, `too many connections (limit ${maxConnections})`] as [number, string])
          : undefined);
      if (refusal) {
        const [status, text] = refusal;
        // Closed as soon as the answer is out (the peer may never close its side).
        socket.end(
          `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
          () => socket.destroy(),
        );
        this.logRefusal(socket, status, text);
        return;
      }
      pending.release(socket);
      wss.handleUpgrade(req, socket, head, (ws) => {
        const transport = new WebSocketTransport(ws, socket);
        const conn = this.serve(transport, {
          handshakeTimeoutMs: handshakeMs,
          probeTimeoutMs: this.options.probeTimeoutMs,
          ping: () => {
            if (ws.readyState === ws.OPEN) ws.ping();
          },
        });
        // Pings are WebSocket control frames: the JSON-RPC layer never sees them.
        ws.on('pong', () => conn.heard());
        this.websockets.set(conn, transport);
        transport.onClose(() => this.websockets.delete(conn));
      });
    });
    this.keepalive = setInterval(() => {
      for (const t of this.websockets.values()) {
        if (!t.isClosed && t.socket.readyState === t.socket.OPEN) t.socket.ping();
      }
    }, this.options.keepaliveIntervalMs ?? KEEPALIVE_MS);
    this.keepalive.unref();
    return http;
  }

  /** Every refused upgrade is logged, but a flood of them as one line per 10 s. */
  private logRefusal(socket: Socket, status: number, text: string): void {
    const log = this.options.log;
    if (!log) return;
    const now = Date.now();
    if (now - this.refusals.since >= 10_000) {
      if (this.refusals.count > 0) log(`refused ${this.refusals.count} more upgrade(s) in the last 10 s`);
      this.refusals = { count: 0, since: now };
      log(`refused upgrade from ${socket.remoteAddress ?? 'a unix socket'}: ${status} ${text}`);
    } else {
      this.refusals.count++;
    }
  }

  /** [status, body] when an upgrade must be refused (docs/protocol.md §11, plus Origin). */
  private checkUpgrade(req: IncomingMessage): [number, string] | undefined {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/') return [404, 'not found'];
    const origin = req.headers.origin;
    if (origin !== undefined && !(this.options.allowOrigins ?? []).includes(origin)) {
      // A web page must never be able to drive a local exec-server.
      return [403, `browser origin ${origin} is not allowed (start the server with --allow-origin to permit it)`];
    }
    const token = this.options.token;
    if (token === undefined) return undefined;
    const header = req.headers.authorization;
    if (header === undefined) return [401, 'missing websocket bearer token'];
    const m = /^\s*bearer\s+(.*?)\s*$/i.exec(header);
    if (!m) return [401, 'invalid authorization header'];
    return tokensEqual(m[1]!, token) ? undefined : [401, 'invalid websocket bearer token'];
  }

  /** Kills every session's processes, closes every connection and the listener. */
  async close(): Promise<void> {
    clearInterval(this.keepalive);
    this.registry.dispose();
    this.prewarm.dispose();
    await this.spool.dispose();
    await treesKilled();
    this.fifos.dispose();
    for (const c of this.connections) c.close('server shutting down');
    this.connections.clear();
    this.wss?.close();
    this.pending?.closeAll();
    const http = this.http;
    if (http) {
      http.closeAllConnections?.();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  }
}

const STATUS_TEXT: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' };

function tokensEqual(a: string, b: string): boolean {
  // Compare digests so that the comparison time says nothing about the token's length or prefix.
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}
