import type { ProcessHandle } from '../client/processHandle';
import type { ConnectionState, ProcessCompletion, ProcessEvent, StartProcessOptions } from '../client/types';
import { isExecClientError } from '../client/errors';
import { DisposableStore } from '../util/disposable';
import type { Event } from '../util/emitter';
import { errorMessage } from '../util/errorMessage';
import {
  reportedDenial,
  sandboxUnavailableReason,
  unsandboxedRetry,
  type ApprovalOutcome,
  type BeforeRunOutcome,
  type DeniedRun,
  type PlannedRun,
} from './approvalPolicy';
import type { RunKind, RunRegistry } from './runRegistry';
import { hostOfTarget } from './sandboxSettings';
import { TERMINAL_CREDIT_WINDOW } from './terminalFlow';
import { terminalName } from './terminalNames';
import { reopenNotice, type ReplayStart } from './terminalReplayRange';
import { TerminalStreamModel, type TerminalAction } from './terminalStreamModel';

/** What to run in one terminal. */
export interface RunSpec {
  kind: RunKind;
  executor: string;
  /** Shown in the terminal, the tree and the approval popup; what "Copy Command" copies. */
  commandLine: string;
  argv: string[];
  /** Absolute path on the executor. */
  cwd: string;
  /** With `envPolicy`: overlaid on the executor's environment; without: the complete child environment. */
  env?: Record<string, string>;
  envPolicy?: StartProcessOptions['envPolicy'];
  tty: boolean;
  /** Pipe processes: forward typed lines to stdin. */
  pipeStdin: boolean;
  /** The `sandbox` value for `process/start`; undefined runs unsandboxed. */
  sandbox?: StartProcessOptions['sandbox'];
  /** Human description of the sandbox policy, e.g. `workspace-write, network off`. */
  sandboxLabel: string;
  /** With `sandbox`: the managed network's lists (only these destinations, through the executor's proxy). */
  managedNetwork?: { allow: string[] };
  /** A reopened terminal (`attach`): whether its process runs sandboxed. */
  wasSandboxed?: boolean;
  /** Started by a language model's tool (its background id, if it runs in the background). */
  agent?: { backgroundId?: string; readSeq?: number };
  /** Started by a task of tasks.json (its label): after a window reload it comes back as a terminal. */
  task?: string;
}

/**
 * What the approval rules decided for a run, in order: the question before it started, a denial (or
 * a sandbox the executor could not build) and what was done about it. What a tool tells its model.
 */
export type RunDecision =
  | { kind: 'beforeRun'; outcome: BeforeRunOutcome }
  | { kind: 'denied'; exitCode: number; deniedHost?: string; outcome: ApprovalOutcome }
  | { kind: 'unavailable'; reason: string; outcome: ApprovalOutcome };

/** One process event of the run's current process; `attempt` counts the processes (1, then 2 after a retry). */
export interface RunProcessEvent {
  attempt: number;
  sandboxed: boolean;
  event: ProcessEvent;
}

export interface TerminalRunDeps {
  start(options: StartProcessOptions): Promise<ProcessHandle>;
  /** Asks the approval policy (and through it the user); `signal` fires when the terminal is closed first. */
  approve(denial: DeniedRun, signal: AbortSignal): Promise<ApprovalOutcome>;
  /**
   * Asked before a sandboxed command starts (always-allowed: start unsandboxed; `askBeforeRun`: ask).
   * Required, with `approve`: every run (terminal, task, tool) applies the same rules (core/executorRun.ts).
   */
  beforeRun(run: PlannedRun, signal: AbortSignal, onAsk: () => void): Promise<BeforeRunOutcome>;
  /** The executor's connection, for the recovery lines. */
  onConnectionState: Event<ConnectionState>;
  /** Whether `process/resize` is supported (capability `processResize`). */
  canResize(): boolean;
  registry?: RunRegistry;
  /**
   * Instead of starting a process: follow one that already runs (a terminal reopened after a window
   * reload). Resolves with its handle (retained output first) and where the retained output begins;
   * `replay`: where the replay was made to start (the newest part the terminal holds,
   * core/terminalReplayRange.ts), its first `skipBytes` of event `afterSeq + 1` not shown.
   * `view.rows`: the terminal's rows, if it said.
   */
  attach?(view: {
    rows: number | undefined;
  }): Promise<{ handle: ProcessHandle; evictedBefore: number; droppedBytes?: number; spoolCapBytes?: number; replay?: ReplayStart }>;
  /** The process behind the terminal started (for what a window reload reopens). */
  onStarted?(handle: ProcessHandle, sandboxed: boolean): void;
  log?(line: string): void;
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
  private resizeWarned = false;
  /** Resolves when the run is over (finished, failed, or the terminal closed). */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly nameListeners = new Set<(name: string) => void>();
  private readonly eventListeners = new Set<(e: RunProcessEvent) => void>();
  private readonly startListeners = new Set<(handle: ProcessHandle) => void>();
  private readonly decisionList: RunDecision[] = [];
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
    this.store.add(this.model.onAction((a) => this.act(a)));
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
    return this.decisionList;
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
    const { handle } = attached;
    this.update({ status: 'running', processId: handle.processId, sandboxed: this.sandboxedNow });
    const dims = this.model.dimensions;
    if (handle.tty && dims && this.deps.canResize()) handle.resize(dims.cols, dims.rows).catch(() => undefined);
    const r = (this.replayStart = attached.replay);
    const skip = r && r.skipBytes > 0 ? { seq: r.afterSeq + 1, bytes: r.skipBytes } : undefined;
    const completion = await this.follow(handle, this.sandboxedNow, skip);
    if (!completion) return;
    this.update({ status: 'exited', exitCode: completion.exitCode, sandboxDenied: completion.sandboxDenied });
    this.model.finish(completion.exitCode);
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
    const dims = this.model.dimensions;
    let options: StartProcessOptions = {
      argv: spec.argv,
      cwd: spec.cwd,
      ...(spec.env ? { env: spec.env } : {}),
      ...(spec.envPolicy ? { envPolicy: spec.envPolicy } : {}),
      tty: spec.tty,
      pipeStdin: !spec.tty && spec.pipeStdin,
      ...(spec.tty && dims ? { ptySize: dims } : {}),
      ...(spec.sandbox !== undefined ? { sandbox: spec.sandbox } : {}),
      ...(spec.sandbox !== undefined && spec.managedNetwork ? { managedNetwork: spec.managedNetwork } : {}),
    };
    if (this.stopReason !== undefined) return this.endStopped();
    if (spec.kind === 'command' && spec.sandbox !== undefined) {
      const planned = {
        commandLine: spec.commandLine,
        argv: spec.argv,
        cwd: spec.cwd,
        executor: spec.executor,
        sandboxLabel: spec.sandboxLabel,
      };
      let asked = false;
      const before = await this.deps.beforeRun(planned, this.ended, () => {
        asked = true;
        this.update({ status: 'awaitingApproval' });
      });
      if (before.reason !== 'default') this.decisionList.push({ kind: 'beforeRun', outcome: before });
      if (this.stopReason !== undefined && !this.closed.signal.aborted) return this.endStopped();
      if (this.closed.signal.aborted || before.decision === 'cancel') {
        this.update({ status: 'failed', error: this.closed.signal.aborted ? 'terminal closed' : before.note });
        if (!this.closed.signal.aborted) {
          this.model.notice(before.note);
          this.model.finish(undefined);
        }
        return;
      }
      if (before.decision === 'unsandboxed') {
        // Once, without the sandbox: nothing ran sandboxed first.
        this.model.warning(`${before.note} — running WITHOUT the sandbox`);
        this.setUnsandboxed();
        options = unsandboxedRetry(options);
      } else if (before.note) this.model.notice(before.note);
      if (asked) this.update({ status: 'starting' });
    }
    // Each "Allow HOST for this workspace" re-runs in the sandbox once more (bounded); an unsandboxed retry ends it.
    for (let attempt = 0, hostRetries = 0; attempt < 2; attempt++) {
      if (this.closed.signal.aborted) return;
      if (this.stopReason !== undefined) return this.endStopped();
      const sandboxed = options.sandbox !== undefined;
      let handle: ProcessHandle;
      try {
        // The executor sends at most a credit window ahead of what the terminal was given (if it can).
        handle = await this.deps.start({ ...options, creditWindow: TERMINAL_CREDIT_WINDOW });
      } catch (e) {
        const message = errorMessage(e);
        // The executor cannot sandbox at all: the same question as a denial (the command never ran).
        const unavailable = sandboxed && spec.kind === 'command' && attempt === 0 ? sandboxUnavailableReason(e) : undefined;
        if (unavailable !== undefined && !this.ended.aborted) {
          this.model.warning(`The executor cannot run this command in the sandbox (${spec.sandboxLabel}): ${unavailable}`);
          this.update({ status: 'awaitingApproval' });
          if ((await this.retryUnsandboxed({ unavailable })) === true) {
            options = unsandboxedRetry(options);
            continue;
          }
          if (this.stopReason !== undefined && !this.closed.signal.aborted) return this.endStopped();
          this.update({ status: 'failed', error: this.closed.signal.aborted ? 'terminal closed' : message });
          if (!this.closed.signal.aborted) this.model.finish(undefined);
          return;
        }
        this.model.error(`could not start: ${message}`);
        this.update({ status: 'failed', error: message });
        this.model.finish(undefined);
        return;
      }
      this.handle = handle;
      this.update({ status: 'running', processId: handle.processId, sandboxed });
      if (this.ended.aborted) {
        // Closed (or stopped) while the start was in flight: the model no longer asks, so stop it here.
        void handle.terminate().catch(() => undefined);
        if (this.closed.signal.aborted) this.update({ status: 'failed', error: 'terminal closed' });
        else this.endStopped();
        return;
      }
      this.deps.onStarted?.(handle, sandboxed);
      const completion = await this.follow(handle, sandboxed);
      if (!completion) return;
      // Only a run that really ran sandboxed can be denied by the sandbox.
      const denied = reportedDenial({ sandboxed, sandboxDenied: completion.sandboxDenied });
      if (denied && spec.kind === 'command' && attempt === 0 && !this.ended.aborted) {
        this.model.warning(
          `The sandbox (${spec.sandboxLabel}) blocked this command (exit code ${completion.exitCode}); what it did before that is done.`,
        );
        this.update({ status: 'awaitingApproval', exitCode: completion.exitCode, sandboxDenied: true });
        const deniedHost = completion.sandboxDeniedTarget ? hostOfTarget(completion.sandboxDeniedTarget) : undefined;
        const retry = await this.retryUnsandboxed({ exitCode: completion.exitCode, ...(deniedHost ? { deniedHost } : {}) });
        if (this.ended.aborted) {
          this.update({ status: 'exited', exitCode: completion.exitCode, sandboxDenied: true });
          if (!this.closed.signal.aborted) {
            this.model.warning(`■ stopped: ${this.stopReason}`);
            this.model.finish(completion.exitCode);
          }
          return;
        }
        if (typeof retry === 'string' && options.managedNetwork && hostRetries < 5) {
          // Allowed for this workspace: the same start, in the sandbox, with the host on the list.
          hostRetries++;
          options = { ...options, managedNetwork: { allow: [...new Set([...options.managedNetwork.allow, retry])] } };
          this.model.notice(`↻ re-running in the sandbox with ${retry} allowed`);
          attempt--;
          continue;
        }
        if (retry === true) {
          options = unsandboxedRetry(options);
          continue;
        }
      }
      this.update({ status: 'exited', exitCode: completion.exitCode, sandboxDenied: denied });
      this.model.finish(completion.exitCode);
      return;
    }
  }

  /**
   * Asks the approval policy whether to run the command again (or at all) without the sandbox and
   * says the answer in the terminal. True: go on unsandboxed (the terminal's name says so).
   */
  private async retryUnsandboxed(blocked: Pick<DeniedRun, 'exitCode' | 'unavailable' | 'deniedHost'>): Promise<boolean | string> {
    const { spec } = this;
    const outcome = await this.deps.approve(
      {
        commandLine: spec.commandLine,
        argv: spec.argv,
        cwd: spec.cwd,
        executor: spec.executor,
        sandboxLabel: spec.sandboxLabel,
        ...blocked,
      },
      this.ended,
    );
    this.decisionList.push(
      blocked.unavailable !== undefined
        ? { kind: 'unavailable', reason: blocked.unavailable, outcome }
        : { kind: 'denied', exitCode: blocked.exitCode ?? -1, ...(blocked.deniedHost ? { deniedHost: blocked.deniedHost } : {}), outcome },
    );
    if (this.ended.aborted) return false;
    if (!outcome.approved) {
      this.model.notice(outcome.note);
      return outcome.allowedHost ?? false;
    }
    this.model.warning(`↻ ${outcome.note} — ${blocked.unavailable !== undefined ? 'running' : 're-running'} WITHOUT the sandbox`);
    this.setUnsandboxed();
    return true;
  }

  private setUnsandboxed(): void {
    this.sandboxedNow = false;
    for (const l of [...this.nameListeners]) l(terminalName(this.spec, { unsandboxed: true }));
  }

  private act(action: TerminalAction): void {
    const handle = this.handle;
    if (!handle) return;
    const warn = (what: string) => (e: unknown) => this.deps.log?.(`${what} failed for ${handle.processId}: ${errorMessage(e)}`);
    switch (action.kind) {
      case 'write':
        handle.write(action.data).catch(warn('write'));
        break;
      case 'interrupt':
        handle.interrupt().catch(warn('interrupt'));
        break;
      case 'terminate':
        handle.terminate().catch(warn('terminate'));
        break;
      case 'pause':
        handle.pauseOutput();
        break;
      case 'resume':
        handle.resumeOutput();
        break;
      case 'consumed':
        handle.outputConsumed(action.bytes);
        break;
      case 'resize':
        if (this.deps.canResize()) handle.resize(action.cols, action.rows).catch(warn('resize'));
        else if (!this.resizeWarned) {
          this.resizeWarned = true;
          this.deps.log?.('this executor cannot resize a PTY (no processResize capability); the shell keeps its size');
        }
        break;
    }
  }
}
