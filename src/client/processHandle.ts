import type { OutputStream, ProcessStartResult, SandboxType } from '../protocol';
import { Deferred, Emitter, type Event } from '../util';
import type { ExecClientError } from './errors';
import { SeqOrderer, type SeqEvent } from './seqOrderer';
import type { CallOptions, ProcessCompletion, ProcessEvent, ProcessStatus } from './types';

/**
 * One process on the executor, as seen through a (possibly reconnecting) client.
 *
 * Events come in `seq` order with no gaps or duplicates, across reconnects. Events that arrive
 * before anyone subscribes (including those that beat the `process/start` answer) are kept and
 * replayed, in order and synchronously, to the first subscriber of `onEvent`.
 */
export interface ProcessHandle {
  readonly processId: string;
  readonly tty: boolean;
  /** Whether stdin is writable (`tty` or `pipeStdin`). */
  readonly stdinWritable: boolean;
  /** From the start answer; undefined on older servers. */
  readonly sandboxType: SandboxType | undefined;
  readonly status: ProcessStatus;
  /** Set once `exited` is published. */
  readonly exitCode: number | undefined;

  readonly onEvent: Event<ProcessEvent>;

  /**
   * Resolves when both `exited` and `closed` were published (from pushed events; at most one extra
   * `process/read` for servers whose exit event lacks `sandboxDenied`). Rejects with an
   * `ExecClientError`: `disconnected` (client failed) or `outputLost`.
   */
  readonly completion: Promise<ProcessCompletion>;

  /**
   * Writes to stdin (strings as UTF-8), in call order, each with a fresh `writeId` (so a write in
   * flight across a reconnect is retried safely). Exactly `"\x03"` to a non-TTY process sends an
   * interrupt instead (a TTY's line discipline handles it). Rejects with `writeRejected` when the
   * process has no stdin / exited / is unknown.
   */
  write(data: Buffer | string, options?: CallOptions): Promise<void>;
  /** SIGINT (`process/signal interrupt`). No error if the process already exited. */
  interrupt(options?: CallOptions): Promise<void>;
  /** SIGKILL of the process group. Resolves whether it was still running. Uses the reserved cleanup permit. */
  terminate(options?: CallOptions): Promise<boolean>;
  /** PTY resize; rejects `unsupported` unless the server announces capability `processResize`. */
  resize(cols: number, rows: number, options?: CallOptions): Promise<void>;

  /** Whether `pauseOutput` really holds the process on this server (capability `execBridgeProcessPause`). */
  readonly canPause: boolean;
  /**
   * Flow control: the server stops reading this process's output (the child blocks once its pipe is
   * full; nothing is lost) until `resumeOutput`. Idempotent, sent in call order, asserted again after
   * a reconnect; without the capability nothing is sent (a codex server reads without bound).
   */
  pauseOutput(): void;
  resumeOutput(): void;
  /** Resolves once the server has answered every pause and resume asked so far (or they failed with the connection). */
  flowSettled(): Promise<void>;

  /**
   * The credit window in bytes when the server holds this process to it (capability
   * `execBridgeProcessCredit`, asked with `StartProcessOptions.creditWindow`); undefined otherwise.
   * With a window the server reads the process only while fewer than that many of its bytes are
   * not yet passed to `outputConsumed`: the consumer must report what it took, or the process blocks.
   */
  readonly creditWindow: number | undefined;
  /** The consumer has taken `bytes` more bytes of output (in event order). Without a credit window: nothing. */
  outputConsumed(bytes: number): void;

  /**
   * Ours (started with `reportBlocked` and a managed network): each destination the sandbox's proxy
   * refuses, as it happens, while the process runs. Not ordered with the output; not replayed after
   * a reconnect (what was missed is in the exit's `sandboxDeniedTarget`).
   */
  readonly onSandboxBlocked: Event<{ target: string; reason: string }>;
}

export type { OutputStream };

/** What a handle needs from its client (kept narrow so the handle holds no connection state). */
export interface HandleHost {
  writeStdin(handle: ProcessHandleImpl, data: Buffer, options: CallOptions | undefined): Promise<void>;
  interrupt(handle: ProcessHandleImpl, options: CallOptions | undefined): Promise<void>;
  terminate(handle: ProcessHandleImpl, options: CallOptions | undefined): Promise<boolean>;
  resize(handle: ProcessHandleImpl, cols: number, rows: number, options: CallOptions | undefined): Promise<void>;
  /** The server implements `process/pause` / `process/resume`. */
  canPause(): boolean;
  /** Sends `process/pause` (true) or `process/resume` (false). */
  holdOutput(handle: ProcessHandleImpl, paused: boolean): Promise<void>;
  /** Sends `process/ack {seq}` (credit window). */
  ackOutput(handle: ProcessHandleImpl, seq: number): Promise<void>;
  /** The one compatibility `process/read` for an exit event without `sandboxDenied`. */
  sandboxDeniedAfterExit(handle: ProcessHandleImpl, exitSeq: number): Promise<boolean>;
  /** The handle is finished (closed or failed): the client may drop it. */
  forget(handle: ProcessHandleImpl): void;
}

/**
 * Where a handle is in its start: `starting` (request on the wire), `startLost` (the connection
 * died before the answer: recovery asks the server whether it exists), `started`.
 */
export type StartPhase = 'unsent' | 'starting' | 'startLost' | 'started';

export class ProcessHandleImpl implements ProcessHandle {
  phase: StartPhase = 'unsent';
  /** Connection generation the start request went out on. */
  startGen = -1;
  /** Resolved by recovery when a lost start is found on the server (or rejected if not). */
  adoption: Deferred<ProcessStartResult> | undefined;
  readonly orderer = new SeqOrderer();

  private statusValue: ProcessStatus = 'running';
  private exitValue: ProcessCompletion | undefined;
  private sandboxTypeValue: SandboxType | undefined;
  private readonly emitter = new Emitter<ProcessEvent>();
  private readonly blocked = new Emitter<{ target: string; reason: string }>();
  readonly onSandboxBlocked: Event<{ target: string; reason: string }> = this.blocked.event;

  /** `execBridge/sandboxBlocked` for this process. */
  receiveBlocked(target: string, reason: string): void {
    this.blocked.fire({ target, reason });
  }
  /** Events kept until the first subscriber (undefined once someone subscribed). */
  private backlog: ProcessEvent[] | undefined = [];
  private readonly done = new Deferred<ProcessCompletion>();
  private writeChain: Promise<unknown> = Promise.resolve();
  /** Seq of an exit event that lacked `sandboxDenied`. */
  private sandboxUnknownSeq = -1;
  /** Events held back while that exit's compatibility read runs. */
  private held: SeqEvent[] | undefined;
  /** The caller wants the output paused; `process/pause`/`resume` go out one after another on `flowChain`. */
  private wantPaused = false;
  private flowChain: Promise<void> = Promise.resolve();
  /** Credit window (bytes) the server holds this process to; undefined: none. */
  private credit: number | undefined;
  /** Output events delivered and not yet wholly consumed: their seqs and the byte total after each. */
  private creditSeqs: number[] = [];
  private creditTotals: number[] = [];
  private creditHead = 0;
  private deliveredBytes = 0;
  private consumedBytes = 0;
  /** Byte total and seq up to which every event was consumed, and up to which that was acknowledged. */
  private consumedUpTo = { seq: 0, bytes: 0 };
  private ackedBytes = 0;
  private ackInFlight = false;

  readonly completion: Promise<ProcessCompletion>;

  constructor(
    private readonly host: HandleHost,
    readonly processId: string,
    readonly tty: boolean,
    readonly stdinWritable: boolean,
  ) {
    this.completion = this.done.promise;
    // Nobody may be awaiting completion (e.g. a caller that only watches events); a failure must
    // not become an unhandled rejection. Awaiters still see it.
    this.completion.catch(() => undefined);
  }

  get status(): ProcessStatus {
    return this.statusValue;
  }
  get exitCode(): number | undefined {
    return this.exitValue?.exitCode;
  }
  get sandboxType(): SandboxType | undefined {
    return this.sandboxTypeValue;
  }
  /** Finished: nothing more will be published. */
  get isFinished(): boolean {
    return this.statusValue === 'closed' || this.statusValue === 'failed';
  }

  readonly onEvent: Event<ProcessEvent> = (listener) => {
    const subscription = this.emitter.event(listener);
    const backlog = this.backlog;
    this.backlog = undefined;
    for (const e of backlog ?? []) {
      try {
        listener(e);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    return subscription;
  };

  /** The adoption promise for a start whose answer was lost (created once). */
  awaitAdoption(): Promise<ProcessStartResult> {
    if (!this.adoption) {
      this.adoption = new Deferred();
      // The starter may have stopped waiting (aborted); its failure must not go unhandled.
      this.adoption.promise.catch(() => undefined);
    }
    return this.adoption.promise;
  }

  markStarted(result: ProcessStartResult): void {
    this.phase = 'started';
    this.sandboxTypeValue = result.sandboxType;
  }

  /** A live notification (possibly early, late, or duplicated). */
  receive(event: SeqEvent, sandboxUnknown = false): void {
    if (this.isFinished) return;
    if (sandboxUnknown && event.type === 'exited') this.sandboxUnknownSeq = event.seq;
    this.publish(this.orderer.push(event));
  }

  /** Publishes events already in seq order. */
  publish(events: SeqEvent[]): void {
    for (const e of events) {
      if (this.held) {
        this.held.push(e);
        continue;
      }
      if (e.type === 'exited' && e.seq === this.sandboxUnknownSeq) {
        this.held = [];
        void this.host.sandboxDeniedAfterExit(this, e.seq).then((sandboxDenied) => {
          const rest = this.held ?? [];
          this.held = undefined;
          this.emitOne({ ...e, sandboxDenied });
          this.publish(rest);
        });
        continue;
      }
      this.emitOne(e);
    }
  }

  /** Terminal failure: one `failed` event, completion rejects, later events are ignored. */
  fail(error: ExecClientError): void {
    if (this.isFinished) return;
    this.statusValue = 'failed';
    this.held = undefined;
    this.deliver({ type: 'failed', error });
    this.wakeRoom();
    this.done.reject(error);
    this.adoption?.reject(error);
    this.host.forget(this);
  }

  write(data: Buffer | string, options?: CallOptions): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    // Ctrl-C: a pipe has no line discipline, so turn it into SIGINT; a TTY gets the byte.
    const run =
      !this.tty && bytes.length === 1 && bytes[0] === 0x03
        ? () => this.host.interrupt(this, options)
        : () => this.host.writeStdin(this, bytes, options);
    // Writes go out one after another so the executor sees them in call order.
    const p = this.writeChain.then(run, run);
    this.writeChain = p.catch(() => undefined);
    return p;
  }

  interrupt(options?: CallOptions): Promise<void> {
    return this.host.interrupt(this, options);
  }

  terminate(options?: CallOptions): Promise<boolean> {
    return this.host.terminate(this, options);
  }

  resize(cols: number, rows: number, options?: CallOptions): Promise<void> {
    return this.host.resize(this, cols, rows, options);
  }

  get canPause(): boolean {
    return this.host.canPause();
  }

  pauseOutput(): void {
    this.setPaused(true);
  }

  resumeOutput(): void {
    this.setPaused(false);
  }

  flowSettled(): Promise<void> {
    return this.flowChain;
  }

  private setPaused(paused: boolean): void {
    if (this.wantPaused === paused) return;
    this.wantPaused = paused;
    this.sendFlow(() => paused);
  }

  /**
   * After a resume: say the pause again (the server keeps it across a detach, but a pause sent as
   * the connection died may not have arrived) — on the same chain, so a later `resume` is not overtaken.
   */
  reassertPause(): void {
    if (this.wantPaused) this.sendFlow(() => (this.wantPaused ? true : undefined));
  }

  private sendFlow(state: () => boolean | undefined): void {
    if (!this.host.canPause()) return;
    this.flowChain = this.flowChain
      .then(() => {
        const paused = state();
        if (paused === undefined || this.isFinished) return;
        return this.host.holdOutput(this, paused);
      })
      // A lost connection fails the handle anyway; an exited process needs no pause.
      .catch(() => undefined);
  }

  get creditWindow(): number | undefined {
    return this.credit;
  }

  /** The server holds this process to a credit window of `bytes` (set before any output is delivered). */
  enableCredit(bytes: number): void {
    this.credit = bytes;
  }

  /** Resolves once less than the credit window of delivered output is unconsumed (at once without credit, or finished). */
  whenCreditRoom(): Promise<void> {
    if (this.credit === undefined || this.isFinished || this.deliveredBytes - this.consumedBytes < this.credit) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** A spooled replay is reading this process's older output (`replaySpool`): a recovery's catch-up leaves it to it. */
  spoolReplay = false;

  /** What the consumer may still be given within its credit window (undefined: no credit). */
  get creditRoom(): number | undefined {
    return this.credit === undefined ? undefined : Math.max(1, this.credit - (this.deliveredBytes - this.consumedBytes));
  }

  private roomWaiters: Array<() => void> = [];

  private wakeRoom(): void {
    if (this.roomWaiters.length === 0) return;
    if (!this.isFinished && this.credit !== undefined && this.deliveredBytes - this.consumedBytes >= this.credit) return;
    const ws = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of ws) w();
  }

  outputConsumed(bytes: number): void {
    if (this.credit === undefined || bytes <= 0) return;
    this.consumedBytes = Math.min(this.deliveredBytes, this.consumedBytes + bytes);
    this.wakeRoom();
    while (this.creditHead < this.creditSeqs.length && this.creditTotals[this.creditHead]! <= this.consumedBytes) {
      this.consumedUpTo = { seq: this.creditSeqs[this.creditHead]!, bytes: this.creditTotals[this.creditHead]! };
      this.creditHead++;
    }
    if (this.creditHead === this.creditSeqs.length) {
      this.creditSeqs = [];
      this.creditTotals = [];
      this.creditHead = 0;
    } else if (this.creditHead > 1024 && this.creditHead * 2 > this.creditSeqs.length) {
      this.creditSeqs = this.creditSeqs.slice(this.creditHead);
      this.creditTotals = this.creditTotals.slice(this.creditHead);
      this.creditHead = 0;
    }
    this.maybeAck();
  }

  /**
   * One ack in flight at a time, once a quarter of the window was consumed since the last. It
   * cannot deadlock: with everything delivered consumed, less than a quarter is unacknowledged,
   * and the server holds the process only at a whole window. Acks are retried after a reconnect.
   */
  private maybeAck(): void {
    if (this.credit === undefined || this.ackInFlight || this.isFinished) return;
    if (this.consumedUpTo.bytes - this.ackedBytes < Math.max(1, this.credit / 4)) return;
    const upTo = this.consumedUpTo;
    this.ackInFlight = true;
    void this.host.ackOutput(this, upTo.seq).then(
      () => {
        this.ackedBytes = Math.max(this.ackedBytes, upTo.bytes);
        this.ackInFlight = false;
        this.maybeAck();
      },
      // The client failed (the handle fails too) or the server refused it (the process is gone):
      // not sent again at once, which would only spin; the next consumed output tries again.
      () => {
        this.ackInFlight = false;
      },
    );
  }

  private emitOne(e: SeqEvent): void {
    if (this.isFinished) return;
    if (e.type === 'output' && this.credit !== undefined) {
      this.deliveredBytes += e.data.length;
      this.creditSeqs.push(e.seq);
      this.creditTotals.push(this.deliveredBytes);
    }
    if (e.type === 'exited') {
      this.exitValue = {
        exitCode: e.exitCode,
        sandboxDenied: e.sandboxDenied,
        ...(e.sandboxDeniedTarget ? { sandboxDeniedTarget: e.sandboxDeniedTarget } : {}),
      };
      this.statusValue = 'exited';
    } else if (e.type === 'closed') {
      this.statusValue = 'closed';
    }
    this.deliver(e);
    if (e.type === 'closed') {
      // A close without an exit does not happen on known servers; report an unknown exit code.
      this.done.resolve(this.exitValue ?? { exitCode: -1, sandboxDenied: false });
      this.host.forget(this);
    }
  }

  private deliver(e: ProcessEvent): void {
    if (this.backlog) this.backlog.push(e);
    else this.emitter.fire(e);
  }
}
