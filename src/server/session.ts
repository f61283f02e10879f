import { randomUUID } from 'node:crypto';
import type { ProcessReadResult, ProcessStartRequest, ProcessStartResult, TerminalModesResult, WriteStatus } from '../protocol';
import { RpcError } from '../rpc';
import type { Clock, TimerHandle } from '../util';
import type { FifoPool } from './fifoPool';
import type { SandboxPrewarmer } from './prewarm';
import { FileHandleTable } from './fileHandles';
import { ManagedProcess, type ProcessSink } from './managedProcess';
import type { SpoolStore } from './spoolStore';
import type { SpawnPlanner } from './spawnPlan';

/** What a session needs from the connection it is attached to: what its processes send through, and a probe. */
export interface SessionConnection extends ProcessSink {
  /** Another connection claims the session: check this one is still there (and give up if not). */
  probe?(): void;
  /** Another connection took the session over: this one no longer has it (say so, then close). */
  takenOver?(sessionId: string): void;
}

export interface SessionOptions {
  /**
   * The server's default TTL (30 s on `serve`): a detached session whose client asked for none is
   * kept this long, and an exited process stays readable this long after `closed` while its
   * session is attached (a detached session keeps its exited processes until it is resumed or ends).
   */
  ttlMs: number;
  clock: Clock;
  planner: SpawnPlanner;
  retainedBytes?: number;
  fifos?: FifoPool;
  prewarm?: SandboxPrewarmer;
  /** The server's output spool (./outputSpool.ts): used for a session once a client of it asks (`execBridgeOutputSpool`). */
  spool?: SpoolStore;
  /** Processes a session may hold at once, running or retained (a bound against floods). */
  maxProcesses?: number;
}

/** A start in progress: a terminate, a pause or an ack that arrived meanwhile (applied once it started). */
type StartingState = { terminate: boolean; held?: boolean; ack?: { seq: number; window: number | null | undefined } };

/**
 * A session owns processes and their retained output. It outlives its connection: detached, it
 * keeps running until resumed or until the TTL expires (then its processes are killed).
 */
export class Session {
  readonly id = randomUUID();
  /** How long this session is kept once detached (the registry sets it from the client's ask). */
  ttlMs: number;
  /** `initialize`'s clientName (for `execBridge/sessions`). */
  clientName = '';
  /** Closed processes waiting for their release (timers run only while attached). */
  private readonly closed = new Map<string, ManagedProcess>();
  private readonly processes = new Map<string, ManagedProcess>();
  /** Ids whose start is in progress, and whether a terminate (or a pause) arrived meanwhile. */
  private readonly starting = new Map<string, StartingState>();
  private readonly retention = new Map<string, TimerHandle>();
  /** Of a closed process: the furthest `afterSeq` read since it closed (a read past it postpones the release). */
  private readonly readTo = new Map<string, number>();
  private connection: SessionConnection | undefined;
  /** A client of this session asked for spooled output: what the windows evict from now on is spooled. */
  private spooling = false;
  /** What each new process of this session may spool (set by `enableSpool`). */
  private spoolProcessBytes: number | undefined;
  private disposed = false;
  private readonly sink: ProcessSink;
  /** Files opened with `fs/open`, closed with the session. */
  readonly fileHandles = new FileHandleTable();

  constructor(private readonly options: SessionOptions) {
    this.ttlMs = options.ttlMs;
    this.sink = {
      notify: (method, params) => this.connection?.notify(method, params),
      notifyFrame: (frame, sent) => {
        if (this.connection) this.connection.notifyFrame(frame, sent);
        else sent?.();
      },
      binaryOutput: () => this.connection?.binaryOutput?.() ?? false,
      notifyBinary: (frame, sent) => {
        if (this.connection?.notifyBinary) this.connection.notifyBinary(frame, sent);
        else sent?.();
      },
      congested: () => this.connection?.congested() ?? false,
      attached: () => this.connection !== undefined,
      whenUncongested: (cb) => {
        if (this.connection) this.connection.whenUncongested(cb);
        else cb();
      },
    };
  }

  get isAttached(): boolean {
    return this.connection !== undefined;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  attach(conn: SessionConnection): void {
    this.connection = conn;
    this.sinkChanged();
    // What closed while nobody was attached is released a TTL after someone could read it.
    for (const [id, proc] of this.closed) if (!this.retention.has(id)) this.scheduleRelease(id, proc);
  }

  /** A resume found the session attached: the holder must prove it is alive, or let go. */
  probeConnection(): void {
    this.connection?.probe?.();
  }

  /** Hands the session to `conn`; the connection that held it is told and lets go. */
  takeOver(conn: SessionConnection): void {
    const old = this.connection;
    this.connection = undefined;
    old?.takenOver?.(this.id);
    this.attach(conn);
  }

  detach(conn: SessionConnection): boolean {
    if (this.connection !== conn) return false;
    this.connection = undefined;
    this.sinkChanged();
    // A detached session keeps its exited processes (their output unread) until it is resumed or ends.
    for (const t of this.retention.values()) this.options.clock.clearTimeout(t);
    this.retention.clear();
    // The next client reads them from its own start (a replay from seq 0 keeps them again).
    this.readTo.clear();
    return true;
  }

  private sinkChanged(): void {
    for (const p of this.processes.values()) p.flow.sinkChanged();
  }

  get processCount(): number {
    return this.processes.size + this.starting.size;
  }

  async startProcess(req: ProcessStartRequest): Promise<ProcessStartResult> {
    const id = req.processId;
    if (this.processes.has(id) || this.starting.has(id)) throw RpcError.invalidRequest(`process ${id} already exists`);
    const max = this.options.maxProcesses ?? 4096;
    if (this.processCount >= max)
      throw RpcError.invalidRequest(`too many processes in this session (limit ${max}); wait for some to be released`);
    const state: StartingState = { terminate: false };
    this.starting.set(id, state);
    let proc: ManagedProcess;
    try {
      proc = await ManagedProcess.start(req, this.sink, {
        planner: this.options.planner,
        retainedBytes: this.options.retainedBytes,
        fifos: this.options.fifos,
        prewarm: this.options.prewarm,
        spool: () => (this.spooling ? this.options.spool?.create(this.spoolProcessBytes) : undefined),
        spooling: () => this.spooling,
        onClosed: () => {
          this.closed.set(id, proc);
          if (this.connection) this.scheduleRelease(id, proc);
        },
      });
    } finally {
      this.starting.delete(id);
    }
    if (this.disposed) {
      proc.destroy();
      throw RpcError.internal('session ended while the process was starting');
    }
    this.processes.set(id, proc);
    if (state.terminate) proc.terminate();
    if (state.held !== undefined) proc.flow.hold(state.held);
    if (state.ack) proc.flow.ack(state.ack.seq, state.ack.window);
    return { processId: id, sandboxType: proc.sandboxType };
  }

  /** Exited processes stay readable (and their id taken) for the server's default TTL after `closed` (or their last read), while attached. */
  private scheduleRelease(id: string, proc: ManagedProcess): void {
    const pending = this.retention.get(id);
    if (pending) this.options.clock.clearTimeout(pending);
    const timer = this.options.clock.setTimeout(() => {
      this.retention.delete(id);
      this.readTo.delete(id);
      if (this.closed.get(id) === proc) this.closed.delete(id);
      if (this.processes.get(id) === proc) {
        this.processes.delete(id);
        proc.releaseOutput();
      }
    }, this.options.ttlMs);
    timer.unref?.();
    this.retention.set(id, timer);
  }

  private get(id: string): ManagedProcess {
    const p = this.processes.get(id);
    if (!p) throw RpcError.invalidRequest(`unknown process id ${id}`);
    return p;
  }

  /** `spooled`: the asking connection negotiated `execBridgeOutputSpool`. */
  read(
    id: string,
    afterSeq: number,
    maxBytes: number | undefined,
    waitMs: number,
    spooled = false,
    spoolMaxBytes?: number,
  ): Promise<ProcessReadResult> {
    const proc = this.get(id);
    // An exited process read further on (a reopened terminal's replay: a page whenever it has drawn
    // the last) is kept a TTL after that read, as a replay may last longer than the TTL itself. A
    // read that asks for nothing newer than the last one (a poll) does not keep it.
    if (this.retention.has(id) && afterSeq > (this.readTo.get(id) ?? -1)) {
      this.readTo.set(id, afterSeq);
      this.scheduleRelease(id, proc);
    }
    return proc.read(afterSeq, maxBytes, waitMs, spooled, spoolMaxBytes);
  }

  /** A client asked for spooled output (`initialize`): the store, if this server spools (else undefined). */
  /**
   * Spool output for this session's processes from now on, each keeping at most `processBytes` (the
   * client's ask, else the server's per-process default; never more than the server's total cap;
   * the latest ask applies to processes started after it).
   * Returns the cap in force, or undefined when the server has no spool.
   */
  enableSpool(processBytes?: number): { processBytes: number; totalBytes: number } | undefined {
    const store = this.options.spool;
    if (!store?.enabled) return undefined;
    this.spooling = true;
    this.spoolProcessBytes = Math.min(processBytes ?? store.processBytes, store.totalBytes);
    return { processBytes: this.spoolProcessBytes, totalBytes: store.totalBytes };
  }

  write(id: string, data: Buffer, writeId: string): Promise<WriteStatus> {
    if (writeId.length === 0) throw RpcError.invalidParams('writeId must not be empty');
    if (this.starting.has(id)) return Promise.resolve('starting');
    const p = this.processes.get(id);
    if (!p) return Promise.resolve('unknownProcess');
    return p.write(data, writeId);
  }

  interrupt(id: string): void {
    this.processes.get(id)?.interrupt();
  }

  terminate(id: string): boolean {
    const starting = this.starting.get(id);
    if (starting) {
      starting.terminate = true;
      return true;
    }
    return this.processes.get(id)?.terminate() ?? false;
  }

  resize(id: string, cols: number, rows: number): void {
    this.get(id).resize(cols, rows);
  }

  /** `execBridge/terminalModes`: a tty's modes where output after `afterSeq` begins, `skipBytes` into the next event. */
  terminalModes(id: string, afterSeq: number, skipBytes: number): TerminalModesResult {
    const modes = this.get(id).modes;
    if (!modes) throw RpcError.invalidParams(`process ${id} is not a tty`);
    return modes.query(afterSeq, skipBytes);
  }

  /** `process/pause` (true) and `process/resume` (false). */
  holdOutput(id: string, held: boolean): void {
    const starting = this.starting.get(id);
    if (starting) starting.held = held;
    else this.get(id).flow.hold(held);
  }

  /** `process/ack` (credit window). */
  ackOutput(id: string, seq: number, window: number | null | undefined): void {
    const starting = this.starting.get(id);
    if (starting)
      starting.ack = { seq: Math.max(seq, starting.ack?.seq ?? 0), window: window !== undefined ? window : starting.ack?.window };
    else this.get(id).flow.ack(seq, window);
  }

  /** Kills every process and closes every resource. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.connection = undefined;
    for (const t of this.retention.values()) this.options.clock.clearTimeout(t);
    this.retention.clear();
    this.closed.clear();
    for (const p of this.processes.values()) p.destroy();
    this.processes.clear();
    void this.fileHandles.closeAll().catch(() => undefined);
  }
}
