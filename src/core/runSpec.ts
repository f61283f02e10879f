import type { ProcessHandle, ConnectionState, ProcessEvent, StartProcessOptions } from '../client';
import type { Event } from '../util';
import type { ApprovalOutcome, BeforeRunOutcome, DeniedRun, PlannedRun } from './approvalPolicy';
import type { RunKind, RunRegistry } from './runRegistry';
import type { ReplayModes } from './terminalModes';
import type { ReplayStart } from './terminalReplayRange';

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

/** One process event of the run's current process; `attempt` counts the processes (1, then 2 after a retry). */
export interface RunProcessEvent {
  attempt: number;
  sandboxed: boolean;
  event: ProcessEvent;
}

/** What a `TerminalRun` works with: the executor's processes and connection, and the approval policy. */
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
   * `modes`: what a tty's replay needs restored first, and whether to make it redraw (./terminalModes.ts).
   * `view.rows`: the terminal's rows, if it said.
   */
  attach?(view: { rows: number | undefined }): Promise<{
    handle: ProcessHandle;
    evictedBefore: number;
    droppedBytes?: number;
    spoolCapBytes?: number;
    replay?: ReplayStart;
    modes?: ReplayModes;
  }>;
  /** The process behind the terminal started (for what a window reload reopens). */
  onStarted?(handle: ProcessHandle, sandboxed: boolean): void;
  log?(line: string): void;
}

/** The `process/start` options of a run's first process; `dims`: the terminal's size, if known. */
export function startOptions(spec: RunSpec, dims: { cols: number; rows: number } | undefined): StartProcessOptions {
  return {
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
}

/** The run as the approval policy is asked about it. */
export function plannedRun(spec: RunSpec): PlannedRun {
  return { commandLine: spec.commandLine, argv: spec.argv, cwd: spec.cwd, executor: spec.executor, sandboxLabel: spec.sandboxLabel };
}
