/**
 * An in-memory stand-in for an exec-server, for the client's unit tests: it speaks the wire
 * protocol over `MemoryTransport` pairs (one per connect), keeps one session with processes whose
 * events carry seqs like the real server's, and lets a test script the awkward cases — cuts,
 * refused connects, `-32010`, held answers, eviction, missing pongs.
 */
import type { Connection, Connector } from '../../src/client';
import { encodeError, encodeNotification, encodeResult, parseMessage, type RequestId } from '../../src/rpc/message';
import type { Disposable } from '../../src/util/disposable';
import { Emitter } from '../../src/util/emitter';
import { MemoryTransport } from './memoryTransport';

/** Client end of a memory pair, with keepalive probes answered by the fake server. */
class PingableTransport extends MemoryTransport implements Connection {
  readonly pongs = new Emitter<void>();
  answerPings = true;
  ping(): void {
    if (!this.isClosed && this.answerPings) queueMicrotask(() => this.pongs.fire());
  }
  onPong(listener: () => void): Disposable {
    return this.pongs.event(listener);
  }
}

export interface FakeConn {
  n: number;
  client: PingableTransport;
  server: MemoryTransport;
}

export interface HeldRequest {
  conn: FakeConn;
  id: RequestId;
  method: string;
  params: Record<string, unknown>;
}

interface Proc {
  seq: number;
  /** Retained events by seq (outputs; exit and close are flags). */
  chunks: Map<number, { stream: string; chunk: string }>;
  exitSeq?: number;
  exitCode?: number;
  closedSeq?: number;
  sandboxDenied: boolean;
  writeIds: Set<string>;
  stdin: Buffer[];
}

export class FakeExecServer {
  readonly sessionId = 'session-1';
  readonly conns: FakeConn[] = [];
  attached: FakeConn | undefined;
  readonly procs = new Map<string, Proc>();
  /** Every request received, in order. */
  readonly log: HeldRequest[] = [];
  /** Requests of these methods are not answered until the test calls `answer`. */
  readonly holdMethods = new Set<string>();
  readonly held: HeldRequest[] = [];
  /** Connect attempts fail while true (server unreachable). */
  refuse = false;
  /** Answer this many resume attempts with -32010. */
  attachedErrors = 0;
  /** Resume answers `unknown session id`. */
  forgetSession = false;
  /** Omit `sandboxDenied` from exit events (an older server). */
  omitSandboxDenied = false;
  /** Do not push notifications (e.g. to simulate events produced while detached). */
  mute = false;
  capabilities: Record<string, boolean> = { concurrentRequests: true };
  /** Set: the server knows `execBridgeSessionTtlMs` and caps an ask at this (our server); unset: codex. */
  maxSessionTtlMs: number | undefined;
  /** Unanswered requests right now, and the most at once. */
  inFlight = 0;
  peakInFlight = 0;
  connectAttempts = 0;

  readonly connector: Connector = (signal) => {
    this.connectAttempts++;
    if (this.refuse) return Promise.reject(new Error('connect ECONNREFUSED'));
    if (signal.aborted) return Promise.reject(new Error('aborted'));
    const client = new PingableTransport();
    const server = new MemoryTransport();
    client.peer = server;
    server.peer = client;
    const conn: FakeConn = { n: this.conns.length + 1, client, server };
    this.conns.push(conn);
    server.onMessage((text) => this.receive(conn, text));
    server.onClose(() => {
      if (this.attached === conn) this.attached = undefined;
    });
    return Promise.resolve(client);
  };

  /** The connection that currently owns the session. */
  get current(): FakeConn {
    if (!this.attached) throw new Error('no connection attached');
    return this.attached;
  }

  /** Drops the attached connection (both ends see the close). */
  cut(): void {
    this.attached?.server.close('cut');
  }

  requests(method: string): HeldRequest[] {
    return this.log.filter((r) => r.method === method);
  }

  // ── process events (assign the next seq, like the real server) ──

  start(processId: string): Proc {
    const p: Proc = { seq: 0, chunks: new Map(), sandboxDenied: false, writeIds: new Set(), stdin: [] };
    this.procs.set(processId, p);
    return p;
  }

  output(processId: string, text: string, stream = 'stdout'): number {
    const p = this.proc(processId);
    const seq = ++p.seq;
    const chunk = Buffer.from(text).toString('base64');
    p.chunks.set(seq, { stream, chunk });
    this.push('process/output', { processId, seq, stream, chunk });
    return seq;
  }

  exit(processId: string, exitCode: number, sandboxDenied = false): number {
    const p = this.proc(processId);
    const seq = ++p.seq;
    p.exitSeq = seq;
    p.exitCode = exitCode;
    p.sandboxDenied = sandboxDenied;
    this.push('process/exited', this.omitSandboxDenied ? { processId, seq, exitCode } : { processId, seq, exitCode, sandboxDenied });
    return seq;
  }

  close(processId: string): number {
    const p = this.proc(processId);
    const seq = ++p.seq;
    p.closedSeq = seq;
    this.push('process/closed', { processId, seq });
    return seq;
  }

  /** Forgets retained output up to and including `seq` (the 1 MiB window moved on). */
  evict(processId: string, uptoSeq: number): void {
    for (const s of [...this.proc(processId).chunks.keys()]) if (s <= uptoSeq) this.proc(processId).chunks.delete(s);
  }

  /** Sends any notification as is (for ordering tests with hand-picked seqs). */
  notify(method: string, params: unknown): void {
    const c = this.attached;
    if (c && !c.server.isClosed) c.server.send(encodeNotification(method, params));
  }

  answer(req: HeldRequest, result?: unknown): void {
    this.removeHeld(req);
    this.inFlight--;
    if (!req.conn.server.isClosed) req.conn.server.send(encodeResult(req.id, result ?? this.result(req)));
  }

  fail(req: HeldRequest, code: number, message: string): void {
    this.removeHeld(req);
    this.inFlight--;
    if (!req.conn.server.isClosed) req.conn.server.send(encodeError(req.id, { code, message }));
  }

  /** Answers every held request normally. */
  releaseAll(): void {
    for (const r of [...this.held]) this.answer(r);
  }

  private removeHeld(req: HeldRequest): void {
    const i = this.held.indexOf(req);
    if (i >= 0) this.held.splice(i, 1);
  }

  private proc(processId: string): Proc {
    const p = this.procs.get(processId);
    if (!p) throw new Error(`no process ${processId}`);
    return p;
  }

  private push(method: string, params: unknown): void {
    if (!this.mute) this.notify(method, params);
  }

  private receive(conn: FakeConn, text: string): void {
    const msg = parseMessage(text);
    if (msg.kind !== 'request') return;
    const req: HeldRequest = { conn, id: msg.id, method: msg.method, params: (msg.params ?? {}) as Record<string, unknown> };
    this.log.push(req);
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    if (req.method === 'initialize') return this.initialize(req);
    if (this.holdMethods.has(req.method)) {
      this.held.push(req);
      return;
    }
    try {
      this.answer(req, this.result(req));
    } catch (e) {
      const err = e as { code?: number; message: string };
      this.fail(req, err.code ?? -32603, err.message);
    }
  }

  private initialize(req: HeldRequest): void {
    const resume = req.params.resumeSessionId as string | undefined;
    if (resume !== undefined) {
      if (this.forgetSession || resume !== this.sessionId) return this.fail(req, -32600, `unknown session id ${resume}`);
      if (this.attachedErrors > 0 || (this.attached && !this.attached.server.isClosed && this.attached !== req.conn)) {
        if (this.attachedErrors > 0) this.attachedErrors--;
        return this.fail(req, -32010, `session ${resume} is already attached to another connection`);
      }
    }
    this.attached = req.conn;
    const asked = req.params.execBridgeSessionTtlMs;
    this.answer(req, {
      sessionId: this.sessionId,
      environmentInfo: { shell: { name: 'bash', path: '/bin/bash' }, capabilities: this.capabilities },
      ...(this.maxSessionTtlMs !== undefined && typeof asked === 'number'
        ? { execBridgeSessionTtlMs: Math.min(asked, this.maxSessionTtlMs) }
        : {}),
    });
  }

  /** The normal answer of each method. */
  private result(req: HeldRequest): unknown {
    const p = req.params;
    const id = p.processId as string;
    switch (req.method) {
      case 'process/start':
        if (this.procs.has(id)) throw Object.assign(new Error(`process ${id} already exists`), { code: -32600 });
        this.start(id);
        return { processId: id, sandboxType: 'none' };
      case 'process/read': {
        const proc = this.procs.get(id);
        if (!proc) throw Object.assign(new Error(`unknown process id ${id}`), { code: -32600 });
        const after = (p.afterSeq as number | undefined) ?? 0;
        const chunks = [...proc.chunks].filter(([s]) => s > after).map(([seq, c]) => ({ seq, ...c }));
        return {
          chunks,
          nextSeq: proc.seq + 1,
          exited: proc.exitSeq !== undefined,
          exitCode: proc.exitCode ?? null,
          closed: proc.closedSeq !== undefined,
          failure: null,
          ...(this.omitSandboxDenied ? {} : { sandboxDenied: proc.sandboxDenied }),
        };
      }
      case 'process/write': {
        const proc = this.procs.get(id);
        if (!proc) return { status: 'unknownProcess' };
        const writeId = p.writeId as string;
        if (!proc.writeIds.has(writeId)) {
          proc.writeIds.add(writeId);
          proc.stdin.push(Buffer.from(p.chunk as string, 'base64'));
        }
        return { status: 'accepted' };
      }
      case 'process/signal':
      case 'process/resize':
        return {};
      case 'process/terminate':
        return { running: this.procs.has(id) && this.procs.get(id)!.exitSeq === undefined };
      case 'fs/readFile':
        return { dataBase64: Buffer.from(`contents of ${String(p.path)}`).toString('base64') };
      case 'environment/status':
        return { status: 'ready' };
      default:
        return {};
    }
  }
}

/** Lets queued microtasks and immediate callbacks (memory transport deliveries) run. */
export async function flush(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
