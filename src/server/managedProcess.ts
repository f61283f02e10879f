import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { IPty } from 'node-pty';
import { SANDBOX_BLOCKED } from '../protocol';
import type { OutputStream, ProcessReadResult, ProcessStartRequest, SandboxType, WriteStatus } from '../protocol';
import { RpcError } from '../rpc';
import { Deferred } from '../util';
import { LongPolls } from './longPolls';
import { orphanGuard } from './orphanGuard';
import { OutputFlow } from './outputFlow';
import { OutputWindow } from './outputWindow';
import type { OutputSpool } from './outputSpool';
import { readOutput, type ReadSource } from './processRead';
import { MAX_CHUNK, OutputCoalescer, sendOutput, type ProcessSink } from './processOutput';
import { TerminalModes } from './terminalModes';
import { planStart, ptyLaunch, spawnPipes, spawnPty, spawnTurn } from './processSpawn';
import { StdinWriter } from './processStdin';
import { guardPtyDrain, type PtyDrainGuard } from './ptyProcess';
import { exitCodeOf, interruptGroup, killLeftoverGroup } from './processSignals';
import { killTree, treesKilled } from './processTree';
import { CoverRaceWatch, MAX_COVER_RETRIES, type Push } from './sandbox/coverRace';
import { CarveOutStop } from './carveOutStop';
import type { ProcessOptions } from './processOptions';
import { judgeExit, type SpawnPlan } from './spawnPlan';

export { encodeOutputNotification, type ProcessSink } from './processOutput';
export type { ProcessOptions } from './processOptions';

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
    ended: () => (this.rawExit !== undefined && !this.settling) || this.destroyed,
    pty: () => this.pty,
    stdin: () => this.stdin,
    ready: () => this.settling?.promise,
    wrote: (data) => this.coverWatch?.wroteStdin(data),
  });
  /** A sandboxed start on pipes that may meet another server's directory vanishing under bwrap (./sandbox/coverRace.ts). */
  private coverWatch: CoverRaceWatch | undefined;
  private coverRetries = 0;
  /** Stops the sandbox when the host takes away one of its carve-outs (./carveOutStop.ts). */
  private carveOutStop: CarveOutStop | undefined;
  /** From an exit that may be the race until it is decided (and the start run again): writes wait, signals are applied after. */
  private settling: Deferred<void> | undefined;
  private signalAfterRerun: 'interrupt' | 'kill' | undefined;
  private startReq!: ProcessStartRequest;
  private readonly pushOut: Push = (stream, data) => this.output.push(stream, data);
  /** `process/read`s waiting for output, the exit or the close. */
  private readonly polls = new LongPolls();
  private readonly reader: ReadSource;
  private readonly output: OutputCoalescer;
  /** Whether the child's output is read now (./outputFlow.ts); the session calls its `hold`, `ack` and `sinkChanged`. */
  readonly flow: OutputFlow;
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
    this.reader = {
      window: this.window,
      polls: this.polls,
      spool: () => this.spool,
      nextSeq: () => this.nextSeq,
      exit: () => this.exit,
      closed: () => this.closedSeq !== undefined,
      destroyed: () => this.destroyed,
      denied: () => ({ denied: this.denied, target: this.deniedTarget }),
      failure: () => this.carveOutStop?.failure ?? null,
      bytes: () => ({ output: this.outputBytes, dropped: this.droppedBytes }),
    };
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
    proc.startReq = req;
    try {
      proc.usePlan(plan);
      if (req.tty) {
        await spawnTurn();
        proc.adoptPty(spawnPty(ptyLaunch(plan, argv0, req.argv[0]!, req.arg0), plan, req.ptySize ?? DEFAULT_PTY));
      } else {
        await proc.startPipes(plan, argv0, []);
      }
    } catch (e) {
      proc.releasePlan();
      throw e;
    }
    return proc;
  }

  private usePlan(plan: SpawnPlan): void {
    this.plan = plan;
    // The leader while it runs unreaped (0 before the spawn, which checks again, and after the exit).
    const leader = () => (this.rawExit === undefined ? this.pid : 0);
    this.carveOutStop = CarveOutStop.arm(plan, leader, () => this.terminate()); // the last plan's went with it (releasePlan)
    if (this.startReq.execBridgeReportBlocked && plan.onNetworkDenial) {
      // Told at once, not only at the exit: a long-lived process (an MCP server) lives on after a refusal.
      this.unwatchDenials = plan.onNetworkDenial((d) => {
        if (!this.isClosed) this.sink.notify(SANDBOX_BLOCKED, { processId: this.id, target: d.target, reason: d.reason });
      });
    }
  }

  /** Starts the child on pipes; `stdin`: what an earlier attempt was given (written first). */
  private async startPipes(plan: SpawnPlan, argv0: string, stdin: Buffer[]): Promise<void> {
    const req = this.startReq;
    const started = await spawnPipes(
      plan,
      plan.file === argv0 ? (req.arg0 ?? req.argv[0]) : undefined,
      req.pipeStdin,
      this.options,
      this.closedSignal.promise,
    );
    this.releaseWarm = started.release;
    this.coverWatch = plan.covers?.length || plan.transient?.length ? new CoverRaceWatch(plan.covers ?? [], plan.transient) : undefined;
    this.adopt(started.child, started.streams);
    for (const d of stdin) {
      this.stdin?.write(d);
      this.coverWatch?.wroteStdin(d);
    }
    started.begin();
  }

  /**
   * The start failed because another server's private directory vanished while bwrap covered it
   * (./sandbox/coverRace.ts): nothing ran, nothing was shown. It runs again, with covers read afresh.
   */
  private async rerun(watch: CoverRaceWatch, stdin: Buffer[], code: number): Promise<void> {
    this.coverRetries++;
    orphanGuard.remove(this.pid); // its whole sandbox ended with bwrap
    this.pid = 0; // reaped: no signal may reach whatever gets its number next
    this.releasePlan();
    this.denialWait = undefined;
    this.rawExit = undefined;
    try {
      const { plan, argv0 } = await planStart(this.startReq, this.options.planner);
      this.usePlan(plan);
      if (this.destroyed || this.signalAfterRerun === 'kill') throw new Error('stopped meanwhile');
      await this.startPipes(plan, argv0, stdin);
    } catch {
      // Not started again: the first attempt's failure is the answer, as it was.
      this.rawExit = code;
    }
    const signal = this.signalAfterRerun;
    this.signalAfterRerun = undefined;
    this.settling?.resolve();
    this.settling = undefined;
    if (this.rawExit !== undefined) {
      watch.release(this.pushOut);
      this.publishExit(code);
    } else if (signal === 'interrupt') this.interrupt();
    else if (signal === 'kill') this.terminate();
  }

  /** Takes over a started child and our ends of its stdio (stdin only when piped, then stdout, stderr). */
  private adopt(child: ChildProcess, streams: Array<Readable | Writable>): void {
    this.child = child;
    this.pid = child.pid!;
    orphanGuard.add(this.pid); // dies with the server, even a SIGKILLed one
    this.carveOutStop?.spawned();
    const mine = [...streams];
    if (this.pipeStdin) this.stdin = mine.shift() as Writable;
    [this.stdout, this.stderr] = mine as Readable[];
    this.stdin?.on('error', () => undefined); // EPIPE after the child exits: reported on the next write
    this.openStreams = 2;
    for (const [stream, s] of [
      ['stdout', this.stdout!],
      ['stderr', this.stderr!],
    ] as const) {
      s.on('data', (d: Buffer) => (this.coverWatch ? this.coverWatch.feed(stream, d, this.pushOut) : this.output.push(stream, d)));
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
    this.carveOutStop?.spawned();
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
    if (this.coverWatch && code === 1) this.settling ??= new Deferred<void>();
    if ((this.plan?.restricted || this.coverWatch) && code !== 0 && this.openStreams > 0) {
      // Trailing output (the error message) may still be in the pipes: give it a moment.
      const timer = setTimeout(() => this.publishExit(code), DENIAL_GRACE_MS);
      this.denialWait = () => {
        clearTimeout(timer);
        this.publishExit(code);
      };
    } else {
      this.publishExit(code);
    }
  }

  private publishExit(code: number): void {
    if (this.exit) return;
    // Killed for a carve-out: what it made is judged only once none of it runs (./carveOutStop.ts).
    if (this.carveOutStop?.killedFromOutside) return void this.carveOutStop.ended().then(() => this.publishExit(code));
    const watch = this.coverWatch;
    this.coverWatch = undefined;
    if (watch) {
      const stopped = this.destroyed || this.signalAfterRerun !== undefined;
      const again = this.openStreams === 0 && !stopped && this.coverRetries < MAX_COVER_RETRIES ? watch.raced(code) : undefined;
      if (again) return void this.rerun(watch, again.stdin, code);
      watch.release(this.pushOut);
    }
    this.signalAfterRerun = undefined;
    this.settling?.resolve();
    this.settling = undefined;
    const stopped = this.carveOutStop?.settle(code, this.tty, (st, d) => this.output.push(st, d)); // its words before `exited`, and no denial
    this.output.flush();
    if (this.plan?.restricted && code !== 0 && !stopped)
      [this.denied, this.deniedTarget] = judgeExit(this.plan, code, this.window.allData());
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
  }

  private denialWait: (() => void) | undefined;
  /** Releases the plan's resources and those of a pre-started sandbox it ran in. */
  private unwatchDenials: (() => void) | undefined;
  private releasePlan(): void {
    this.unwatchDenials?.();
    this.unwatchDenials = undefined;
    this.carveOutStop?.dispose();
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

  /** `process/read` (./processRead.ts). */
  read(
    afterSeq: number,
    maxBytes: number | undefined,
    waitMs: number,
    spooled = false,
    spoolMaxBytes?: number,
  ): Promise<ProcessReadResult> {
    return readOutput(this.reader, afterSeq, maxBytes, waitMs, spooled, spoolMaxBytes);
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
    if (this.settling) this.signalAfterRerun ??= 'interrupt';
    if (this.rawExit !== undefined || this.pid <= 0) return;
    interruptGroup(this.pid);
  }

  /** SIGKILL to the whole tree. Returns whether it was still running. */
  terminate(): boolean {
    if (this.settling) this.signalAfterRerun = 'kill';
    const running = this.rawExit === undefined && this.pid > 0;
    if (running) {
      // Batched and asynchronous; by the time it runs the leader may have been reaped.
      void killTree(this.pid, () => this.rawExit === undefined);
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
    this.carveOutStop?.stop(); // at once: its stubs are released below, and none of it may run then
    this.terminate();
    this.destroyed = true;
    this.ptyDrain?.close(); // a paused read side would otherwise wait for a resume that never comes
    // Forgotten by the watchdog only once the kill has run: a server that exits before that
    // still takes this tree along.
    const pid = this.pid;
    void treesKilled().then(() => orphanGuard.remove(pid));
    this.polls.wake();
    this.releaseOutput();
    if (this.closedSeq === undefined) void (this.carveOutStop?.ended() ?? Promise.resolve()).then(() => this.releasePlan());
  }
}
