import { isExecClientError, type ProcessHandle, type ProcessCompletion, type StartProcessOptions } from '../client';
import { DisposableStore, errorMessage } from '../util';
import { reportedDenial, sandboxUnavailableReason, unsandboxedRetry } from './approvalPolicy';
import { RunApprovals, type RunDecision } from './runApprovals';
import type { RunRegistry } from './runRegistry';
import { startOptions, type RunProcessEvent, type RunSpec, type TerminalRunDeps } from './runSpec';
import { hostOfTarget } from './sandboxSettings';
import { TerminalActions } from './terminalActions';
import { TERMINAL_CREDIT_WINDOW } from './terminalFlow';
import { resizeReopened } from './terminalModes';
import { terminalName } from './terminalNames';
import { reopenNotice, type ReplayStart } from './terminalReplayRange';
import { TerminalStreamModel } from './terminalStreamModel';

// Moved to runSpec.ts and runApprovals.ts; importers of this file keep these names.
export type { RunProcessEvent, RunSpec, TerminalRunDeps } from './runSpec';
export type { RunDecision } from './runApprovals';

/** The next process of a run (an approved retry; `hostAllowed`: in the sandbox again, with one more host). */
interface NextAttempt {
  options: StartProcessOptions;
  hostAllowed?: boolean;
}

/**
 * One run in one terminal: starts the process, pipes it through the stream model, and on a sandbox
 * denial asks for approval and re-runs unsandboxed in the same terminal (docs/architecture.md, "Sandbox
 * denial"). Pure orchestration: no `vscode` here; the Pseudoterminal adapter only forwards.
 */
export class TerminalRun {
  readonly model = new TerminalStreamModel();
  readonly runId: string | undefined;
  private readonly store = new DisposableStore();
  private readonly closed = new AbortController();
  private handle: ProcessHandle | undefined;
  private sandboxedNow: boolean;
  private started = false;
  /** Resolves when the run is over (finished, failed, or the terminal closed). */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly nameListeners = new Set<(name: string) => void>();
  private readonly eventListeners = new Set<(e: RunProcessEvent) => void>();
  private readonly startListeners = new Set<(handle: ProcessHandle) => void>();
  private readonly approvals: RunApprovals;
  private readonly actions: TerminalActions;
  private attempts = 0;
  /** Set by `stop()`: why the run was ended by its owner (a tool's timeout, a chat's cancel). */
  private stopReason: string | undefined;
  private readonly stopped = new AbortController();

  constructor(
    readonly spec: RunSpec,
    private readonly deps: TerminalRunDeps,
  ) {
    this.sandboxedNow = spec.sandbox !== undefined || spec.wasSandboxed === true;
    this.done = new Promise((r) => (this.resolveDone = r));
    this.runId = deps.registry?.add({
      executor: spec.executor,
      kind: spec.kind,
      commandLine: spec.commandLine,
      sandboxed: this.sandboxedNow,
    }).id;
    this.approvals = new RunApprovals(
      spec,
      deps,
      this.model,
      () => this.ended,
      () => this.setUnsandboxed(),
    );
    this.actions = new TerminalActions(deps);
    this.store.add(
      this.model.onAction((a) => {
        if (a.kind === 'resize' && this.nudge && this.handle && this.deps.canResize()) this.resizeReopened(this.handle);
        else if (this.handle) this.actions.apply(this.handle, a);
      }),
    );
    this.store.add(
      deps.onConnectionState((s) => {
        if (this.handle) this.model.connectionState(s);
      }),
    );
  }

  /** The process currently behind the terminal (changes on an approved retry). */
  get process(): ProcessHandle | undefined {
    return this.handle;
  }
  get sandboxed(): boolean {
    return this.sandboxedNow;
  }

  /** What the approval rules decided so far, in order. */
  get decisions(): readonly RunDecision[] {
    return this.approvals.decisions;
  }

  /** Why `stop()` ended the run, if it did. */
  get stoppedBecause(): string | undefined {
    return this.stopReason;
  }

  /** A reopened terminal: where its replay started (the newest part it holds). */
  get replay(): ReplayStart | undefined {
    return this.replayStart;
  }
  private replayStart: ReplayStart | undefined;

  /** A process now runs behind the terminal (the first, an approved retry, or the one a reopened terminal follows). */
  onDidStart(listener: (handle: ProcessHandle) => void): { dispose(): void } {
    this.startListeners.add(listener);
    return { dispose: () => void this.startListeners.delete(listener) };
  }

  /**
   * Input from the run's owner (a model's tool) for the process's stdin, shown in the terminal as a
   * dim line, so the user sees what was typed for them. Rejects when nothing can take it.
   */
  async sendInput(data: string): Promise<void> {
    const handle = this.handle;
    if (!handle || handle.status !== 'running') throw new Error('the process is not running');
    if (!handle.stdinWritable) throw new Error('the process has no stdin to write to');
    this.model.notice(`› ${JSON.stringify(data).slice(1, -1)}`);
    await handle.write(data);
  }

  /** Every event of the processes behind the terminal (output, exit), as the terminal gets them. */
  onProcessEvent(listener: (e: RunProcessEvent) => void): { dispose(): void } {
    this.eventListeners.add(listener);
    return { dispose: () => void this.eventListeners.delete(listener) };
  }

  /**
   * Ends the run for its owner (a tool's timeout, a chat's cancel, the agent's stop): a question
   * still open is withdrawn, the process is ended, and the terminal stays with the reason in it.
   */
  stop(reason: string): void {
    if (this.stopReason !== undefined || this.model.phase === 'closed') return;
    this.stopReason = reason;
    this.stopped.abort();
    const handle = this.handle;
    if (handle && handle.status === 'running') {
      this.model.warning(`■ stopped: ${reason}`);
      handle.terminate().catch((e: unknown) => this.deps.log?.(`terminate failed for ${handle.processId}: ${errorMessage(e)}`));
    }
  }

  /** Fires when the terminal's name should change (an unsandboxed retry says so in its name). */
  onDidChangeName(listener: (name: string) => void): { dispose(): void } {
    this.nameListeners.add(listener);
    return { dispose: () => void this.nameListeners.delete(listener) };
  }

  /** Call once the terminal is open (so its size is known). */
  start(): void {
    if (this.started) return;
    this.started = true;
    // Done once the terminal was given everything, its exit line included: the flow may still hold
    // a tail when the process ends (a task must not close before its last lines).
    this.run().then(
      () => this.model.drained().then(() => this.resolveDone()),
      (e: unknown) => {
        this.deps.log?.(`run failed unexpectedly: ${errorMessage(e)}`);
        this.model.error(`internal error: ${errorMessage(e)}`);
        this.model.finish(undefined);
        void this.model.drained().then(() => this.resolveDone());
      },
    );
  }

  /** The terminal was closed by the user: kill the process, cancel a pending approval. */
  close(): void {
    this.closed.abort();
    this.model.close();
  }

  dispose(): void {
    this.closed.abort();
    this.model.dispose();
    this.store.dispose();
    this.nameListeners.clear();
    this.eventListeners.clear();
    this.startListeners.clear();
  }

  /**
   * The window goes away (reload, close): the terminal closes but its process keeps running in the
   * detached session, to be reopened by the next window (or ended by the executor's TTL).
   */
  detach(): void {
    this.store.dispose();
    this.dispose();
  }

  private update(patch: Parameters<RunRegistry['update']>[1]): void {
    if (this.runId) this.deps.registry?.update(this.runId, patch);
  }

  /** A reopened terminal: the running process's retained output, then live, to its end. */
  private async reattach(attach: NonNullable<TerminalRunDeps['attach']>): Promise<void> {
    const { spec } = this;
    if (spec.kind === 'command') this.model.notice(`$ ${spec.commandLine}`);
    this.model.notice(this.sandboxedNow ? `sandbox: ${spec.sandboxLabel}` : 'sandbox: none');
    let attached;
    try {
      attached = await attach({ rows: this.model.dimensions?.rows });
    } catch (e) {
      const message = errorMessage(e);
      this.model.error(`could not reopen: ${message}`);
      this.update({ status: 'failed', error: message });
      this.model.finish(undefined);
      return;
    }
    this.model.notice(reopenNotice(attached));
    if (spec.task !== undefined)
      this.model.notice(
        `This is the task "${spec.task}": it went on running through the reload. VS Code's task list no longer shows it (nor its problem matcher); close this terminal to stop it.`,
      );
    // Before the replay: the modes output the replay skips had set (invisible escape sequences).
    if (attached.modes?.restore) this.model.control(attached.modes.restore);
    const { handle } = attached;
    this.update({ status: 'running', processId: handle.processId, sandboxed: this.sandboxedNow });
    this.nudge = attached.modes?.redraw;
    if (handle.tty && this.model.dimensions && this.deps.canResize()) this.resizeReopened(handle);
    const r = (this.replayStart = attached.replay);
    const skip = r && r.skipBytes > 0 ? { seq: r.afterSeq + 1, bytes: r.skipBytes } : undefined;
    const completion = await this.follow(handle, this.sandboxedNow, skip);
    if (!completion) return;
    this.finishExited(completion.exitCode, completion.sandboxDenied);
  }

  /** A reopened tty's nudge (./terminalModes.ts), once, with its first size: at once, or its first resize if it opened without one. */
  private nudge: { afterSeq: number } | undefined;
  private resizeReopened(handle: ProcessHandle): void {
    resizeReopened(handle, this, this.nudge).catch(() => undefined);
    this.nudge = undefined;
  }
  private finishExited(exitCode: number, sandboxDenied: boolean): void {
    this.update({ status: 'exited', exitCode, sandboxDenied });
    this.model.finish(exitCode);
  }

  /**
   * Feeds the terminal from `handle` until it completes; undefined (reported) if it failed. `skip`:
   * the first bytes of output event `seq` are not shown (a reopened terminal starts at a line inside it).
   */
  private async follow(
    handle: ProcessHandle,
    sandboxed: boolean,
    skip?: { seq: number; bytes: number },
  ): Promise<ProcessCompletion | undefined> {
    this.handle = handle;
    const attempt = ++this.attempts;
    for (const l of [...this.startListeners]) l(handle);
    this.model.attach({
      tty: handle.tty,
      stdinWritable: handle.stdinWritable,
      canPause: handle.canPause,
      credit: handle.creditWindow !== undefined,
    });
    const events = handle.onEvent((e) => {
      let event = e;
      if (skip && event.type === 'output' && event.seq >= skip.seq) {
        if (event.seq === skip.seq) {
          const cut = Math.min(skip.bytes, event.data.length);
          event = { ...event, data: event.data.subarray(cut) };
          // Never given to the terminal, so taken: the credit window stays whole.
          handle.outputConsumed(cut);
        }
        skip = undefined;
      }
      this.model.processEvent(event);
      for (const l of [...this.eventListeners]) l({ attempt, sandboxed, event });
    });
    try {
      return await handle.completion;
    } catch (e) {
      // The model already printed the `failed` event (it carries the same error).
      const message = isExecClientError(e) ? e.message : String(e);
      this.update({ status: 'failed', error: message });
      this.model.finish(undefined);
      return undefined;
    } finally {
      events.dispose();
    }
  }

  /** Withdraws questions and ends the retry loop: the terminal was closed, or the owner stopped the run. */
  private get ended(): AbortSignal {
    return (this.endedSignal ??= AbortSignal.any([this.closed.signal, this.stopped.signal]));
  }
  private endedSignal: AbortSignal | undefined;

  /** A run its owner stopped before (or between) its processes: say why, and end. */
  private endStopped(): void {
    this.update({ status: 'failed', error: `stopped: ${this.stopReason}` });
    if (this.closed.signal.aborted) return;
    this.model.warning(`■ stopped: ${this.stopReason}`);
    this.model.finish(undefined);
  }

  private async run(): Promise<void> {
    const { spec } = this;
    if (this.deps.attach) return this.reattach(this.deps.attach);
    if (spec.kind === 'command') this.model.notice(`$ ${spec.commandLine}`);
    this.model.notice(spec.sandbox === undefined ? 'sandbox: none' : `sandbox: ${spec.sandboxLabel}`);
    let options: StartProcessOptions | undefined = startOptions(spec, this.model.dimensions);
    if (this.stopReason !== undefined) return this.endStopped();
    if (spec.kind === 'command' && spec.sandbox !== undefined) options = await this.askBeforeRun(options);
    // Each "Allow HOST for this workspace" re-runs in the sandbox once more (bounded); an unsandboxed retry ends it.
    for (let attempt = 0, hostRetries = 0; options && attempt < 2; attempt++) {
      if (this.closed.signal.aborted) return;
      if (this.stopReason !== undefined) return this.endStopped();
      const next = await this.runAttempt(options, attempt, hostRetries);
      if (next?.hostAllowed) {
        hostRetries++;
        attempt--;
      }
      options = next?.options;
    }
  }

  /** A sandboxed command: the question before it starts. The options to start with; undefined: the run is over. */
  private async askBeforeRun(options: StartProcessOptions): Promise<StartProcessOptions | undefined> {
    let asked = false;
    const before = await this.approvals.beforeRun(() => {
      asked = true;
      this.update({ status: 'awaitingApproval' });
    });
    if (this.stopReason !== undefined && !this.closed.signal.aborted) {
      this.endStopped();
      return undefined;
    }
    if (this.closed.signal.aborted || before.decision === 'cancel') {
      this.update({ status: 'failed', error: this.closed.signal.aborted ? 'terminal closed' : before.note });
      if (!this.closed.signal.aborted) {
        this.model.notice(before.note);
        this.model.finish(undefined);
      }
      return undefined;
    }
    if (before.decision === 'unsandboxed') {
      // Once, without the sandbox: nothing ran sandboxed first.
      this.model.warning(`${before.note} — running WITHOUT the sandbox`);
      this.setUnsandboxed();
      options = unsandboxedRetry(options);
    } else if (before.note) this.model.notice(before.note);
    if (asked) this.update({ status: 'starting' });
    return options;
  }

  /** One process of the run, to its end; the next attempt (a retry) or undefined: the run is over. */
  private async runAttempt(options: StartProcessOptions, attempt: number, hostRetries: number): Promise<NextAttempt | undefined> {
    const sandboxed = options.sandbox !== undefined;
    const handle = await this.startAttempt(options, sandboxed, attempt);
    if (handle === 'unsandboxed') return { options: unsandboxedRetry(options) };
    if (!handle) return undefined;
    this.handle = handle;
    this.update({ status: 'running', processId: handle.processId, sandboxed });
    if (this.ended.aborted) {
      // Closed (or stopped) while the start was in flight: the model no longer asks, so stop it here.
      void handle.terminate().catch(() => undefined);
      if (this.closed.signal.aborted) this.update({ status: 'failed', error: 'terminal closed' });
      else this.endStopped();
      return undefined;
    }
    this.deps.onStarted?.(handle, sandboxed);
    const completion = await this.follow(handle, sandboxed);
    if (!completion) return undefined;
    // Only a run that really ran sandboxed can be denied by the sandbox.
    const denied = reportedDenial({ sandboxed, sandboxDenied: completion.sandboxDenied });
    if (denied && this.spec.kind === 'command' && attempt === 0 && !this.ended.aborted)
      return this.afterDenial(completion, options, hostRetries);
    this.finishExited(completion.exitCode, denied);
    return undefined;
  }

  /**
   * Starts an attempt's process. `'unsandboxed'`: the executor cannot sandbox and running without it
   * was approved; undefined: it did not start and the run is over (said in the terminal).
   */
  private async startAttempt(
    options: StartProcessOptions,
    sandboxed: boolean,
    attempt: number,
  ): Promise<ProcessHandle | 'unsandboxed' | undefined> {
    const { spec } = this;
    try {
      // The executor sends at most a credit window ahead of what the terminal was given (if it can).
      return await this.deps.start({ ...options, creditWindow: TERMINAL_CREDIT_WINDOW });
    } catch (e) {
      const message = errorMessage(e);
      // The executor cannot sandbox at all: the same question as a denial (the command never ran).
      const unavailable = sandboxed && spec.kind === 'command' && attempt === 0 ? sandboxUnavailableReason(e) : undefined;
      if (unavailable !== undefined && !this.ended.aborted) {
        this.model.warning(`The executor cannot run this command in the sandbox (${spec.sandboxLabel}): ${unavailable}`);
        this.update({ status: 'awaitingApproval' });
        if ((await this.approvals.retryUnsandboxed({ unavailable })) === true) return 'unsandboxed';
        if (this.stopReason !== undefined && !this.closed.signal.aborted) {
          this.endStopped();
          return undefined;
        }
        this.update({ status: 'failed', error: this.closed.signal.aborted ? 'terminal closed' : message });
        if (!this.closed.signal.aborted) this.model.finish(undefined);
        return undefined;
      }
      this.model.error(`could not start: ${message}`);
      this.update({ status: 'failed', error: message });
      this.model.finish(undefined);
      return undefined;
    }
  }

  /** The sandbox blocked the first attempt: ask, then run again (unsandboxed, or with a host allowed) or end. */
  private async afterDenial(
    completion: ProcessCompletion,
    options: StartProcessOptions,
    hostRetries: number,
  ): Promise<NextAttempt | undefined> {
    this.model.warning(
      `The sandbox (${this.spec.sandboxLabel}) blocked this command (exit code ${completion.exitCode}); what it did before that is done.`,
    );
    this.update({ status: 'awaitingApproval', exitCode: completion.exitCode, sandboxDenied: true });
    const deniedHost = completion.sandboxDeniedTarget ? hostOfTarget(completion.sandboxDeniedTarget) : undefined;
    const retry = await this.approvals.retryUnsandboxed({ exitCode: completion.exitCode, ...(deniedHost ? { deniedHost } : {}) });
    if (this.ended.aborted) {
      this.update({ status: 'exited', exitCode: completion.exitCode, sandboxDenied: true });
      if (!this.closed.signal.aborted) {
        this.model.warning(`■ stopped: ${this.stopReason}`);
        this.model.finish(completion.exitCode);
      }
      return undefined;
    }
    if (typeof retry === 'string' && options.managedNetwork && hostRetries < 5) {
      // Allowed for this workspace: the same start, in the sandbox, with the host on the list.
      this.model.notice(`↻ re-running in the sandbox with ${retry} allowed`);
      return {
        options: { ...options, managedNetwork: { allow: [...new Set([...options.managedNetwork.allow, retry])] } },
        hostAllowed: true,
      };
    }
    if (retry === true) return { options: unsandboxedRetry(options) };
    this.finishExited(completion.exitCode, true);
    return undefined;
  }

  private setUnsandboxed(): void {
    this.sandboxedNow = false;
    for (const l of [...this.nameListeners]) l(terminalName(this.spec, { unsandboxed: true }));
  }
}
