import { StringDecoder } from 'node:string_decoder';
import type { ConnectionState, ProcessEvent } from '../client';
import { Emitter, describeExitCode, type Event } from '../util';
import { STATUS_REQUEST, TerminalFlow, type FlowLimits, type RawOutput } from './terminalFlow';

/**
 * What the model asks of the process behind the terminal. The adapter (src/vscode) maps these to
 * ProcessHandle calls; the model itself never talks to the network (docs/style.md §8).
 */
export type TerminalAction =
  | { kind: 'write'; data: string }
  | { kind: 'interrupt' }
  | { kind: 'terminate' }
  | { kind: 'resize'; cols: number; rows: number }
  /** Flow control: the terminal fell behind (pause the process's output) or caught up (resume it). */
  | { kind: 'pause' }
  | { kind: 'resume' }
  /** Credit window: this many more bytes of the process's output were given to the terminal. */
  | { kind: 'consumed'; bytes: number };

/** How the current process is attached: a PTY passes bytes through; pipes need help. */
export interface AttachOptions {
  tty: boolean;
  /** Pipe processes only: typed lines are forwarded (with local echo). */
  stdinWritable: boolean;
  /**
   * Whether the executor can pause this process's output; `false` (a codex executor): a flood the
   * terminal cannot take is cut short, with a notice. Unknown (undefined): nothing is dropped.
   */
  canPause?: boolean;
  /**
   * The executor holds this process to a credit window (`ProcessHandle.creditWindow`): what the
   * terminal was given is reported (`consumed`), and nothing is paused or cut.
   */
  credit?: boolean;
}

/** Decodes one stream of one process: UTF-8 across chunk boundaries, and for pipes lone `\n` → `\r\n`. */
interface StreamDecoder {
  utf8: StringDecoder;
  tty: boolean;
}

export type Phase =
  /** No process attached yet (starting, or waiting for an approval). */
  | 'idle'
  | 'running'
  /** The run is over and the exit line is shown; any key closes the terminal. */
  | 'finished'
  /** The terminal is gone (user closed it, or a key closed it after `finished`). */
  | 'closed';

const DIM = '\x1b[2m';
const YELLOW = '\x1b[33m';
const RED = '\x1b[31m';
const RESET = '\x1b[0m';

/**
 * The terminal side of one Exec Bridge terminal, as plain TS (no `vscode`): turns process events
 * and connection changes into terminal text, and typed keys into actions.
 *
 * - Writes before `open()` are buffered and flushed in order on open (VS Code drops them otherwise).
 * - A flood is paced to what the terminal has parsed (./terminalFlow.ts), and the process held back
 *   by its credit window (or paused while the queue is long): the extension host holds a bounded
 *   amount per terminal. Output waits as raw bytes and is decoded when written.
 * - Pipe output gets lone `\n` → `\r\n` (even across chunk boundaries); PTY output passes through.
 * - Pipe stdin gets a small line editor with local echo (the process sees whole lines); Ctrl-C
 *   interrupts. PTY input passes through raw (the executor's line discipline handles Ctrl-C).
 * - Ends with one exit-code line; the next key closes the terminal (code 0, else none: see handleInput).
 */
export class TerminalStreamModel {
  private readonly writeEmitter = new Emitter<string>();
  private readonly actionEmitter = new Emitter<TerminalAction>();
  private readonly closeEmitter = new Emitter<number | undefined>();
  /** Terminal text to show; subscribe before `open()` is called. */
  readonly onWrite: Event<string> = this.writeEmitter.event;
  /** What the process should do (write/interrupt/terminate/resize). */
  readonly onAction: Event<TerminalAction> = this.actionEmitter.event;
  /** The terminal should close, with the final exit code when there is one. */
  readonly onClose: Event<number | undefined> = this.closeEmitter.event;

  private opened = false;
  /** Everything written goes through here (before open() it only queues). */
  private readonly flow: TerminalFlow;
  /** True while onWrite fires text written after finish(). */
  private firingFinished = false;
  private phaseValue: Phase = 'idle';
  private attached: AttachOptions | undefined;
  private decoders = new Map<string, StreamDecoder>();
  /** The last character given to the terminal was `\r` (a following `\n` must not get another one). */
  private writtenCR = false;
  /** The cursor is at column 0, as far as we know (so status lines need no leading newline). */
  private atLineStart = true;
  private line = '';
  /** Keys typed before the first process started (sendText right after creating the terminal). */
  private typeAhead: string[] = [];
  private everAttached = false;
  private recovering = false;
  private failureShown: string | undefined;
  private exitCodeValue: number | undefined;
  private dims: { cols: number; rows: number } | undefined;

  constructor(limits?: FlowLimits) {
    this.flow = new TerminalFlow(
      {
        write: (text, finished) => {
          if (text !== STATUS_REQUEST) this.writtenCR = text.endsWith('\r');
          this.firingFinished = finished;
          try {
            this.writeEmitter.fire(text);
          } finally {
            this.firingFinished = false;
          }
        },
        hold: (paused) => this.actionEmitter.fire({ kind: paused ? 'pause' : 'resume' }),
        decode: (raw, bytes) => this.decode(raw as RawOutput<StreamDecoder>, bytes),
        consumed: (bytes) => {
          if (this.attached?.credit) this.actionEmitter.fire({ kind: 'consumed', bytes });
        },
        skipped: (chars) =>
          `${this.atLineStart ? '' : '\r\n'}${YELLOW}[${chars} characters of output not shown: the terminal fell behind, and this executor cannot pause a command]${RESET}\r\n`,
      },
      false,
      limits,
    );
  }

  get phase(): Phase {
    return this.phaseValue;
  }
  /**
   * True while `onWrite` fires text written once the run had finished (its exit line). A flood can
   * reach the terminal well after `finish()`; shell-integration marks end the command here.
   */
  get writingFinished(): boolean {
    return this.firingFinished;
  }
  /** Resolves once everything pushed so far was given to the terminal (the flow may hold a tail), or it closed. */
  drained(): Promise<void> {
    return this.flow.whenDrained();
  }
  get isOpen(): boolean {
    return this.opened;
  }
  /** Exit code of the last attached process, once it exited. */
  get exitCode(): number | undefined {
    return this.exitCodeValue;
  }
  /** Last size VS Code reported (undefined before open if it gave none). */
  get dimensions(): { cols: number; rows: number } | undefined {
    return this.dims;
  }

  open(dimensions?: { cols: number; rows: number }): void {
    if (this.opened || this.phaseValue === 'closed') return;
    this.opened = true;
    if (dimensions) this.dims = { cols: dimensions.cols, rows: dimensions.rows };
    this.flow.start();
  }

  /** The user closed the terminal: stop a running process; nothing is written any more. */
  close(): void {
    if (this.phaseValue === 'closed') return;
    const wasRunning = this.phaseValue === 'running';
    this.phaseValue = 'closed';
    this.flow.dispose();
    if (wasRunning) this.actionEmitter.fire({ kind: 'terminate' });
  }

  /** A (new) process now feeds this terminal: a first run, or an approved retry. */
  attach(options: AttachOptions): void {
    if (this.phaseValue === 'closed') return;
    this.attached = { ...options };
    this.phaseValue = 'running';
    this.flow.newProcess(options.credit ? 'credit' : options.canPause !== false ? 'pause' : 'drop');
    this.decoders.clear();
    this.line = '';
    this.exitCodeValue = undefined;
    if (!this.everAttached) {
      this.everAttached = true;
      const keys = this.typeAhead.join('');
      this.typeAhead = [];
      if (keys) this.handleInput(keys);
    }
  }

  /** Process events in seq order (the client guarantees order and dedupe). */
  processEvent(event: ProcessEvent): void {
    if (this.phaseValue !== 'running') return;
    switch (event.type) {
      case 'output':
        this.writeOutput(event.stream, event.data);
        break;
      case 'exited':
        this.exitCodeValue = event.exitCode;
        break;
      case 'closed':
        this.flushDecoders();
        this.phaseValue = 'idle';
        break;
      case 'failed':
        this.flushDecoders();
        this.phaseValue = 'idle';
        // A client failure reaches us twice (state + process event, either first): say it once.
        if (event.error.message !== this.failureShown) this.statusLine(`${RED}${event.error.message}${RESET}`);
        this.failureShown = event.error.message;
        break;
    }
  }

  /** The executor connection changed: one dim line per outage; a failure says why. A finished run says nothing. */
  connectionState(state: ConnectionState): void {
    if (this.phaseValue === 'closed' || this.phaseValue === 'finished') return;
    if (state.kind === 'recovering') {
      if (!this.recovering) this.statusLine(`${DIM}connection lost — resuming…${RESET}`);
      this.recovering = true;
    } else if (state.kind === 'connected') {
      this.recovering = false;
    } else {
      this.recovering = false;
      if (state.error.message !== this.failureShown) this.statusLine(`${RED}disconnected: ${state.error.message}${RESET}`);
      this.failureShown = state.error.message;
    }
  }

  /** A dim informational line (e.g. the command being run). */
  notice(text: string): void {
    this.statusLine(`${DIM}${text}${RESET}`);
  }
  /** Escape sequences that show nothing (a reopened terminal's modes), in order with the rest. */
  control(text: string): void {
    this.emit(text);
  }
  /** A yellow line for things the user must look at (sandbox denial, unsandboxed retry). */
  warning(text: string): void {
    this.statusLine(`${YELLOW}${text}${RESET}`);
  }
  /** A red line (start failures). */
  error(text: string): void {
    this.statusLine(`${RED}${text}${RESET}`);
  }

  /**
   * The run is over: show the exit code on the last line; the next key closes the terminal and
   * `onClose` carries `exitCode` (undefined when the process never ran or its end is unknown).
   */
  finish(exitCode: number | undefined): void {
    if (this.phaseValue === 'closed' || this.phaseValue === 'finished') return;
    this.phaseValue = 'finished';
    this.exitCodeValue = exitCode;
    const what = exitCode === undefined ? 'no exit code' : describeExitCode(exitCode);
    this.statusLine(`${DIM}[${what} — press any key to close]${RESET}`, false);
  }

  /** Closes at once (no key needed), e.g. when the extension shuts down. */
  dispose(): void {
    if (this.phaseValue !== 'closed') {
      const code = this.phaseValue === 'finished' ? this.exitCodeValue : undefined;
      this.close();
      this.closeEmitter.fire(code);
    }
    this.flow.dispose();
    this.writeEmitter.dispose();
    this.actionEmitter.dispose();
    this.closeEmitter.dispose();
  }

  setDimensions(cols: number, rows: number): void {
    this.dims = { cols, rows };
    if (this.phaseValue === 'running' && this.attached?.tty) this.actionEmitter.fire({ kind: 'resize', cols, rows });
  }

  /**
   * Keys typed (or `sendText`) in the terminal. A key in a finished terminal closes it without a
   * failure code: the exit code is already on screen, and a non-zero one would make VS Code raise
   * an error notification ("The terminal process terminated with exit code …") for a normal close.
   */
  handleInput(keys: string): void {
    // Answers to the flow's status requests are the terminal's, not the user's.
    const data = this.flow.input(keys);
    if (!data) return;
    if (this.phaseValue === 'finished') {
      this.phaseValue = 'closed';
      this.closeEmitter.fire(this.exitCodeValue === 0 ? 0 : undefined);
      return;
    }
    if (this.phaseValue === 'idle' && !this.everAttached) {
      // Bounded: a terminal whose process never starts must not grow without limit.
      if (this.typeAhead.length < 1000) this.typeAhead.push(data);
      return;
    }
    // While waiting for an approval (between runs) keys go nowhere.
    if (this.phaseValue !== 'running' || !this.attached) return;
    if (this.attached.tty) {
      this.actionEmitter.fire({ kind: 'write', data });
      return;
    }
    this.pipeInput(data);
  }

  private pipeInput(data: string): void {
    const canWrite = this.attached?.stdinWritable === true;
    // Drop escape sequences (arrows, function keys): a pipe has no use for them.
    const keys = data.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1bO./g, '');
    for (const ch of keys) {
      if (ch === '\x03') {
        this.line = '';
        this.echo('^C\r\n');
        this.actionEmitter.fire({ kind: 'interrupt' });
      } else if (!canWrite) {
        continue;
      } else if (ch === '\r' || ch === '\n') {
        const line = this.line + '\n';
        this.line = '';
        this.echo('\r\n');
        this.actionEmitter.fire({ kind: 'write', data: line });
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length > 0) {
          this.line = [...this.line].slice(0, -1).join('');
          this.echo('\b \b');
        }
      } else if (ch === '\x04') {
        // No close-stdin exists in the protocol: Ctrl-D only sends what is typed so far.
        if (this.line) this.actionEmitter.fire({ kind: 'write', data: this.line });
        this.line = '';
      } else if (ch >= ' ' || ch === '\t') {
        this.line += ch;
        this.echo(ch);
      }
    }
  }

  private echo(text: string): void {
    this.emit(text);
    this.atLineStart = text.endsWith('\n');
  }

  private writeOutput(stream: string, data: Buffer): void {
    if (this.phaseValue === 'closed' || data.length === 0) return;
    let decoder = this.decoders.get(stream);
    if (!decoder) {
      decoder = { utf8: new StringDecoder('utf8'), tty: this.attached?.tty === true };
      this.decoders.set(stream, decoder);
    }
    // A newline byte is never inside a UTF-8 sequence: where the cursor ends is known without decoding.
    this.atLineStart = data[data.length - 1] === 0x0a;
    this.flow.pushRaw({ data, decoder });
  }

  private flushDecoders(): void {
    for (const decoder of this.decoders.values()) this.flow.pushRaw({ data: Buffer.alloc(0), decoder, end: true });
    this.decoders.clear();
  }

  /** Raw output becomes text as it is written (in order with everything else the terminal is given). */
  private decode(raw: RawOutput<StreamDecoder>, bytes: Buffer | undefined): string {
    const d = raw.decoder;
    const text = bytes ? d.utf8.write(bytes) : d.utf8.end();
    if (!text) return text;
    const afterCR = this.writtenCR;
    // Pieces decoded for one write follow each other: the next one sees where this one ended.
    this.writtenCR = text.endsWith('\r');
    if (d.tty) return text;
    const out = text.replace(/(?<!\r)\n/g, '\r\n');
    // A `\r` that ended what was written before already pairs with this leading `\n`.
    return afterCR && text.startsWith('\n') ? out.slice(1) : out;
  }

  /** A whole line of our own, starting at column 0 whatever the process left on screen. */
  private statusLine(text: string, newline = true): void {
    if (this.phaseValue === 'closed') return;
    const lead = this.atLineStart ? '' : '\r\n';
    this.emit(`${lead}${text}${newline ? '\r\n' : ''}`);
    this.atLineStart = newline;
  }

  private emit(text: string): void {
    if (this.phaseValue === 'closed') return;
    this.flow.push(text, this.phaseValue === 'finished');
  }
}
