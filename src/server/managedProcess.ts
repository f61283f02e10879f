import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { IPty } from 'node-pty';
import { SANDBOX_BLOCKED } from '../protocol';
import type { OutputStream, ProcessReadResult, ProcessStartRequest, SandboxType, WriteStatus } from '../protocol';
import { RpcError } from '../rpc';
import { Deferred } from '../util';
import type { FifoPool } from './fifoPool';
import { LongPolls } from './longPolls';
import { orphanGuard } from './orphanGuard';
import { OutputFlow } from './outputFlow';
import { OutputWindow } from './outputWindow';
import { SPOOL_PAGE_BYTES, type OutputSpool } from './outputSpool';
import { MAX_CHUNK, OutputCoalescer, sendOutput, type ProcessSink } from './processOutput';
import type { SandboxPrewarmer } from './prewarm';
import { TerminalModes } from './terminalModes';
import { planStart, ptyLaunch, spawnPipes, spawnPty, spawnTurn } from './processSpawn';
import { StdinWriter } from './processStdin';
import { guardPtyDrain, type PtyDrainGuard } from './ptyProcess';
import { exitCodeOf, interruptGroup, killLeftoverGroup } from './processSignals';
import { killTree, treesKilled } from './processTree';
import type { SpawnPlan, SpawnPlanner } from './spawnPlan';

export { encodeOutputNotification, type ProcessSink } from './processOutput';

export interface ProcessOptions {
  planner: SpawnPlanner;
  /** Output above this size is coalesced no further: one notification carries at most this. */
  maxChunkBytes?: number;
  retainedBytes?: number;
  /** Real pipes for stdio (else Node's socket pairs). */
  fifos?: FifoPool;
  /** Sandboxes built ahead of time for starts whose plan allows it. */
  prewarm?: SandboxPrewarmer;
  /**
   * The output spool for what the window evicts (./outputSpool.ts), asked for at each eviction until
   * it gives one: undefined while the session's clients did not ask for spooled output.
   */
  spool?: () => OutputSpool | undefined;
  /** Whether the session spools (a client of it asked): then a credit window does not hold the process while detached. */
  spooling?: () => boolean;
  /** Called once after `closed` is published (the session starts the retention timer). */
  onClosed?: () => void;
}

/** A spool page (`process/read` of spooled output) carries at most this, whatever `maxBytes` asks. */
const MAX_SPOOL_PAGE = 2 * SPOOL_PAGE_BYTES;
/** After a sandboxed exit, wait this long (or for the pipes to close) before judging a denial. */
const DENIAL_GRACE_MS = 150;
const DEFAULT_PTY = { cols: 80, rows: 24 };

/**
 * One process of a session: starts it (pipes or PTY, through ./processSpawn.ts), numbers its
 * events with one per-process seq (output…, exited, closed; `closed` always last, output may
 * follow `exited`), retains output for `process/read`, answers long polls, dedupes writes by
 * `writeId`, and kills its whole tree.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private stdin: Writable | undefined;
  private stdout: Readable | undefined;
  private stderr: Readable | undefined;
  private pty: IPty | undefined;
  private ptyDrain: PtyDrainGuard | undefined;
  private plan: SpawnPlan | undefined;
  private releaseWarm: (() => void) | undefined;
  /** Resolves once `closed` is published. */
  private readonly closedSignal = new Deferred<void>();
  private pid = 0;
  private nextSeq = 1;
  private readonly window: OutputWindow;
  private spool: OutputSpool | undefined;
  /** Output bytes ever produced: what neither the window nor the spool holds was dropped. */
  private outputBytes = 0;
  private exit: { code: number; seq: number } | undefined;
  private rawExit: number | undefined;
  private closedSeq: number | undefined;
  private denied = false;
  /** Managed network: the destination its proxy refused (`host:port`), when that was the denial. */
  private deniedTarget: string | undefined;
  private openStreams = 0;
  /** `process/write` (./processStdin.ts). */
  private readonly stdinWriter = new StdinWriter({
    accepts: () => this.tty || this.pipeStdin,
    ended: () => this.rawExit !== undefined || this.destroyed,
    pty: () => this.pty,
    stdin: () => this.stdin,
  });
  /** `process/read`s waiting for output, the exit or the close. */
  private readonly polls = new LongPolls();
  private readonly output: OutputCoalescer;
  /** Whether the child's output is read now (./outputFlow.ts). */
  private readonly flow: OutputFlow;
  private destroyed = false;
  /** The process id as a JSON string literal, encoded once. */
  private readonly idJson: string;
  /** The process id in UTF-8, for binary frames. */
  private readonly idBytes: Buffer;
  /** A tty's terminal modes, followed through all its output (`execBridge/terminalModes`, ./terminalModes.ts). */
  readonly modes: TerminalModes | undefined;

  private constructor(
    readonly id: string,
    readonly tty: boolean,
    private readonly pipeStdin: boolean,
    private readonly sink: ProcessSink,
    private readonly options: ProcessOptions,
    creditWindow: number | null | undefined,
  ) {
    this.flow = new OutputFlow(sink, options.spooling, (read) => this.setReading(read), creditWindow);
    this.window = new OutputWindow(options.retainedBytes, undefined, (c) => {
      this.spool ??= this.options.spool?.();
      this.spool?.append(c.seq, c.stream, c.data);
    });
    this.output = new OutputCoalescer(options.maxChunkBytes ?? MAX_CHUNK, (stream, data) => this.emitOutput(stream, data));
    this.idJson = JSON.stringify(id);
    this.idBytes = Buffer.from(id, 'utf8');
    this.modes = tty ? new TerminalModes() : undefined;
  }

  get sandboxType(): SandboxType {
    return this.plan?.sandboxType ?? 'none';
  }

  get isRunning(): boolean {
    return this.rawExit === undefined && !this.destroyed;
  }

  get isClosed(): boolean {
    return this.closedSeq !== undefined;
  }

  get osPid(): number {
    return this.pid;
  }

  static async start(req: ProcessStartRequest, sink: ProcessSink, options: ProcessOptions): Promise<ManagedProcess> {
    const { plan, argv0 } = await planStart(req, options.planner);
    const proc = new ManagedProcess(req.processId, req.tty, req.pipeStdin, sink, options, req.execBridgeCreditWindow);
    proc.plan = plan;
    if (req.execBridgeReportBlocked && plan.onNetworkDenial) {
      // Told at once, not only at the exit: a long-lived process (an MCP server) lives on after a refusal.
      proc.unwatchDenials = plan.onNetworkDenial((d) => {
        if (!proc.isClosed) sink.notify(SANDBOX_BLOCKED, { processId: proc.id, target: d.target, reason: d.reason });
      });
    }
    try {
      if (req.tty) {
        await spawnTurn();
        proc.adoptPty(spawnPty(ptyLaunch(plan, argv0, req.argv[0]!, req.arg0), plan, req.ptySize ?? DEFAULT_PTY));
      } else {
        const started = await spawnPipes(
          plan,
          plan.file === argv0 ? (req.arg0 ?? req.argv[0]) : undefined,
          req.pipeStdin,
          options,
          proc.closedSignal.promise,
        );
        proc.releaseWarm = started.release;
        proc.adopt(started.child, started.streams);
        started.begin();
      }
    } catch (e) {
      plan.dispose();
      throw e;
    }
    return proc;
  }

  /** Takes over a started child and our ends of its stdio (stdin only when piped, then stdout, stderr). */
  private adopt(child: ChildProcess, streams: Array<Readable | Writable>): void {
    this.child = child;
    this.pid = child.pid!;
    orphanGuard.add(this.pid); // dies with the server, even a SIGKILLed one
    const mine = [...streams];
    if (this.pipeStdin) this.stdin = mine.shift() as Writable;
    [this.stdout, this.stderr] = mine as Readable[];
    this.stdin?.on('error', () => undefined); // EPIPE after the child exits: reported on the next write
    this.openStreams = 2;
    for (const [stream, s] of [
      ['stdout', this.stdout!],
      ['stderr', this.stderr!],
    ] as const) {
      s.on('data', (d: Buffer) => this.output.push(stream, d));
      s.on('close', () => this.onStreamClosed());
      s.on('error', () => undefined);
    }
    child.on('error', () => undefined);
    child.on('exit', (code, signal) => this.onExit(exitCodeOf(code, signal)));
  }

  /** Takes over a started PTY child. */
  private adoptPty(pty: IPty): void {
    this.pty = pty;
    this.pid = pty.pid;
    orphanGuard.add(this.pid);
    this.openStreams = 1;
    // node-pty reports exit only after its read side closed; the guard closes it only once drained.
    this.ptyDrain = guardPtyDrain(pty);
    pty.onData((d) => this.output.push('pty', typeof d === 'string' ? Buffer.from(d) : d));
    pty.onExit(({ exitCode, signal }) => {
      this.onExit(exitCodeOf(exitCode, signal ?? null));
      this.onStreamClosed();
    });
  }

  // ---- output ----

  private emitOutput(stream: OutputStream, data: Buffer): void {
    const seq = this.nextSeq++;
    this.outputBytes += data.length;
    this.modes?.feed(seq, data);
    this.window.push({ seq, stream, data });
    if (this.spool) this.spoolPushed(this.spool);
    sendOutput(this.sink, this.idJson, this.idBytes, seq, stream, data);
    this.polls.wake();
    this.flow.sent(seq, data.length);
  }

  /** After a push that spooled: the per-process cap (memory window included), and the spool's backpressure. */
  private spoolPushed(spool: OutputSpool): void {
    spool.trimTo(Math.max(0, spool.capBytes - this.window.retainedBytes));
    this.flow.spooled(spool);
  }

  /** Output bytes no longer held (older than everything retained): dropped by a cap, or evicted before spooling began. */
  get droppedBytes(): number {
    return this.outputBytes - this.window.retainedBytes - (this.spool?.retainedBytes ?? 0);
  }

  /** `process/pause` (true) / `process/resume` (false): the client's own flow control for this process. */
  holdOutput(held: boolean): void {
    this.flow.hold(held);
  }

  /** `process/ack`: output up to `seq` was consumed; `window` sets the credit window (null: off). */
  ackOutput(seq: number, window: number | null | undefined): void {
    this.flow.ack(seq, window);
  }

  /** The sink changed (a client attached or left): congestion and credit are judged again. */
  sinkChanged(): void {
    this.flow.sinkChanged();
  }

  /** Pauses or resumes the child's output streams (the flow decides when). */
  private setReading(read: boolean): void {
    for (const s of [this.stdout, this.stderr]) {
      if (read) s?.resume();
      else s?.pause();
    }
    if (read) this.pty?.resume();
    else this.pty?.pause();
  }

  // ---- exit and close ----

  private onExit(code: number): void {
    if (this.rawExit !== undefined) return;
    this.rawExit = code;
    orphanGuard.leaderGone(this.pid);
    this.output.flush();
    const publish = () => {
      if (this.exit) return;
      this.output.flush();
      if (this.plan?.restricted && code !== 0) {
        try {
          this.denied = this.plan.isDenial(code, this.window.allData());
          if (this.denied) this.deniedTarget = this.plan.networkDenial?.();
        } catch {
          this.denied = false;
        }
      }
      const seq = this.nextSeq++;
      this.exit = { code, seq };
      this.sink.notify('process/exited', {
        processId: this.id,
        seq,
        exitCode: code,
        sandboxDenied: this.denied,
        ...(this.deniedTarget ? { sandboxDeniedTarget: this.deniedTarget } : {}),
      });
      this.polls.wake();
      if (this.openStreams === 0) this.publishClosed();
    };
    if (this.plan?.restricted && code !== 0 && this.openStreams > 0) {
      // Trailing output (the error message) may still be in the pipes: give it a moment.
      const timer = setTimeout(publish, DENIAL_GRACE_MS);
      this.denialWait = () => {
        clearTimeout(timer);
        publish();
      };
    } else {
      publish();
    }
  }

  private denialWait: (() => void) | undefined;
  /** Releases the plan's resources and those of a pre-started sandbox it ran in. */
  private unwatchDenials: (() => void) | undefined;
  private releasePlan(): void {
    this.unwatchDenials?.();
    this.unwatchDenials = undefined;
    this.plan?.dispose();
    this.releaseWarm?.();
    this.releaseWarm = undefined;
  }

  private onStreamClosed(): void {
    this.openStreams = Math.max(0, this.openStreams - 1);
    if (this.openStreams > 0) return;
    this.output.flush();
    if (this.exit) this.publishClosed();
    else if (this.denialWait) this.denialWait();
  }

  private publishClosed(): void {
    if (this.closedSeq !== undefined) return;
    this.output.flush();
    const seq = this.nextSeq++;
    this.closedSeq = seq;
    // Released first: a client that hears `closed` finds the plan's listeners and files gone.
    this.releasePlan();
    this.sink.notify('process/closed', { processId: this.id, seq });
    this.closedSignal.resolve();
    this.spool?.finished();
    this.polls.wake();
    this.options.onClosed?.();
  }

  // ---- requests ----

  /**
   * `process/read`. With `spooled` (the connection asked for `execBridgeOutputSpool`), a range older
   * than the window is served from the spool, one bounded page per answer (`execBridgeSpooled`:
   * read on from `nextSeq`), and every answer says how many bytes were dropped.
   */
  async read(
    afterSeq: number,
    maxBytes: number | undefined,
    waitMs: number,
    spooled = false,
    spoolMaxBytes?: number,
  ): Promise<ProcessReadResult> {
    const fromSpool = () => {
      const s = this.spool;
      if (!spooled || !s || s.retainedBytes === 0 || afterSeq >= s.lastSeq) return undefined;
      const first = this.window.firstSeq;
      return first === undefined || afterSeq + 1 < first ? s : undefined;
    };
    await this.polls.until(
      () =>
        fromSpool() !== undefined ||
        (this.nextSeq - 1 > afterSeq && this.window.after(afterSeq, 0).length > 0) ||
        this.closedSeq !== undefined ||
        (this.exit !== undefined && afterSeq < this.exit.seq) ||
        this.destroyed,
      waitMs,
    );
    const spool = fromSpool();
    if (spool) {
      const page = await spool.read(afterSeq, Math.min(spoolMaxBytes ?? maxBytes ?? SPOOL_PAGE_BYTES, MAX_SPOOL_PAGE));
      // Empty: a cap dropped the range meanwhile; the window answers (with the gap and the count).
      if (page.chunks.length > 0) return { ...this.readStatus(true), chunks: page.chunks, nextSeq: page.nextSeq, execBridgeSpooled: true };
    }
    if (spooled && spoolMaxBytes !== undefined) {
      // A page of the window too when it holds more than the budget: a replay stays within the reader's room.
      const all = this.window.after(afterSeq);
      const some = this.window.after(afterSeq, spoolMaxBytes);
      if (some.length < all.length) {
        const chunks = some.map((c) => ({ seq: c.seq, stream: c.stream, chunk: c.data.toString('base64') }));
        return { ...this.readStatus(true), chunks, nextSeq: some[some.length - 1]!.seq + 1, execBridgeSpooled: true };
      }
    }
    const chunks = this.window.after(afterSeq, maxBytes);
    const nextSeq = maxBytes !== undefined && chunks.length > 0 ? chunks[chunks.length - 1]!.seq + 1 : this.nextSeq;
    return {
      ...this.readStatus(spooled),
      chunks: chunks.map((c) => ({ seq: c.seq, stream: c.stream, chunk: c.data.toString('base64') })),
      nextSeq,
    };
  }

  /** The fields of a read answer besides chunks and cursor; with `spooled`, ours too. */
  private readStatus(spooled: boolean): Omit<ProcessReadResult, 'chunks' | 'nextSeq'> {
    return {
      exited: this.exit !== undefined,
      exitCode: this.exit?.code ?? null,
      closed: this.closedSeq !== undefined,
      failure: null,
      sandboxDenied: this.denied,
      ...(this.deniedTarget ? { sandboxDeniedTarget: this.deniedTarget } : {}),
      ...(spooled
        ? {
            execBridgeDroppedBytes: this.droppedBytes,
            execBridgeOutputBytes: this.outputBytes,
            ...(this.exit ? { execBridgeExitSeq: this.exit.seq } : {}),
          }
        : {}),
    };
  }

  /** The process record is released (retention over, session end, server stop): its spool files go. */
  releaseOutput(): void {
    void this.spool?.release();
  }

  write(data: Buffer, writeId: string): Promise<WriteStatus> {
    return this.stdinWriter.write(data, writeId);
  }

  /** SIGINT to the process group (a PTY's line discipline does the same for ^C). */
  interrupt(): void {
    if (this.rawExit !== undefined || this.pid <= 0) return;
    interruptGroup(this.pid);
  }

  /** SIGKILL to the whole tree. Returns whether it was still running. */
  terminate(): boolean {
    const running = this.rawExit === undefined && this.pid > 0;
    if (running) {
      // Batched and asynchronous; by the time it runs the leader may have been reaped.
      killTree(this.pid, () => this.rawExit === undefined);
    } else if (this.pid > 0) {
      // The leader is reaped: what may be left is its group (nohup children).
      killLeftoverGroup(this.pid);
    }
    return running;
  }

  resize(cols: number, rows: number): void {
    if (!this.pty) throw RpcError.invalidParams(`process ${this.id} is not a tty`);
    if (this.rawExit === undefined) this.pty.resize(cols, rows);
  }

  /** Session end or server shutdown: kill the tree and release every waiter and resource. */
  destroy(): void {
    if (this.destroyed) return;
    this.terminate();
    this.destroyed = true;
    this.ptyDrain?.close(); // a paused read side would otherwise wait for a resume that never comes
    // Forgotten by the watchdog only once the kill has run: a server that exits before that
    // still takes this tree along.
    const pid = this.pid;
    void treesKilled().then(() => orphanGuard.remove(pid));
    this.polls.wake();
    this.releaseOutput();
    if (this.closedSeq === undefined) this.releasePlan();
  }
}
