import * as vscode from 'vscode';
import { CommandMarks, type TerminalRun } from '../core';
import { TextTail } from '../util';
import type { ExecTerminal } from './api';

const TRANSCRIPT_LIMIT = 256 * 1024;
/** How long a closed terminal waits before it ends its process (a window reload must not end it). */
const CLOSE_GRACE_MS = 300;

/**
 * A VS Code Pseudoterminal over one TerminalRun (docs/style.md §8): it only forwards — open, input,
 * resize and close go to the run's stream model; the model's text and close come back.
 */
export class RunPseudoterminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  private readonly nameEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  readonly onDidClose = this.closeEmitter.event;
  readonly onDidChangeName = this.nameEmitter.event;
  private readonly transcript = new TextTail(TRANSCRIPT_LIMIT);
  /** Set when VS Code closes the terminal because the window goes away (reload, close). */
  windowClosing = false;

  constructor(
    readonly run: TerminalRun,
    private readonly isShuttingDown: () => boolean = () => false,
  ) {
    // Shell integration (OSC 633) for a command terminal; the shell's come from its own scripts.
    const marks = run.spec.kind === 'command' ? new CommandMarks(run.spec.commandLine, run.spec.cwd) : undefined;
    run.model.onWrite((raw) => {
      const text = marks ? marks.wrap(raw, run.model.writingFinished, run.model.exitCode) : raw;
      this.transcript.append(text);
      this.writeEmitter.fire(text);
    });
    run.model.onClose((code) => this.closeEmitter.fire(code));
    run.onDidChangeName((name) => this.nameEmitter.fire(name));
  }

  text(): string {
    return this.transcript.text();
  }

  open(initialDimensions: vscode.TerminalDimensions | undefined): void {
    this.run.model.open(initialDimensions ? { cols: initialDimensions.columns, rows: initialDimensions.rows } : undefined);
    this.run.start();
  }
  close(): void {
    // A window reload closes every terminal too, and the extension host may be gone a moment later:
    // wait a little to tell that from the user closing it, so the process survives the reload.
    setTimeout(() => {
      if (this.windowClosing || this.isShuttingDown()) this.run.detach();
      else this.run.close();
    }, CLOSE_GRACE_MS);
  }
  handleInput(data: string): void {
    this.run.model.handleInput(data);
  }
  setDimensions(d: vscode.TerminalDimensions): void {
    this.run.model.setDimensions(d.columns, d.rows);
  }

  dispose(detach = false): void {
    if (detach) this.run.detach();
    else this.run.dispose();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
    this.nameEmitter.dispose();
  }
}

/** One of our terminals with the run behind it (for features of this extension; the API shows less). */
export type RunTerminal = ExecTerminal & { readonly run: TerminalRun };

/** One of our terminals as the API and our features see it (api.ts), read through its pseudoterminal's run. */
export class ExecTerminalImpl implements ExecTerminal {
  constructor(
    readonly terminal: vscode.Terminal,
    private readonly pty: RunPseudoterminal,
  ) {}
  get executor(): string {
    return this.pty.run.spec.executor;
  }
  get commandLine(): string {
    return this.pty.run.spec.commandLine;
  }
  get runId(): string | undefined {
    return this.pty.run.runId;
  }
  text(): string {
    return this.pty.text();
  }
  get onDidWrite(): vscode.Event<string> {
    return this.pty.onDidWrite;
  }
  get phase() {
    return this.pty.run.model.phase;
  }
  get exitCode(): number | undefined {
    return this.pty.run.model.exitCode;
  }
  get sandboxed(): boolean {
    return this.pty.run.sandboxed;
  }
  get done(): Promise<void> {
    return this.pty.run.done;
  }
  get run(): TerminalRun {
    return this.pty.run;
  }
  get process() {
    return this.pty.run.process;
  }
  dispose(detach = false): void {
    this.pty.dispose(detach);
  }
}
