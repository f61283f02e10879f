import type { ExecServerClient, StartProcessOptions } from '../client';
import type { ApprovalOutcome, BeforeRunOutcome, DeniedRun, PlannedRun } from './approvalPolicy';
import type { ExecutorConnection } from './executorConnection';
import type { RunRegistry } from './runRegistry';
import type { TerminalInfo } from './sessionMemory';
import { terminalName } from './terminalNames';
import { TerminalRun, type RunSpec, type TerminalRunDeps } from './terminalRun';

/**
 * The approval rules (core/approvalPolicy.ts through the notifications): both halves together, so no
 * kind of run can have one without the other (tasks once ran without `beforeRun`: under
 * `askBeforeRun` they asked nothing, and an always-allowed task ran sandboxed and then again).
 */
export interface RunApprovals {
  /** A denial (or a sandbox the executor cannot build): re-run without the sandbox? */
  approve(denial: DeniedRun, signal: AbortSignal): Promise<ApprovalOutcome>;
  /** Before a sandboxed command starts: always-allowed (start unsandboxed, once) or `askBeforeRun` (ask). */
  beforeRun(run: PlannedRun, signal: AbortSignal, onAsk: () => void): Promise<BeforeRunOutcome>;
}

/** What every run on an executor shares: the rules, the Executors view's list, the log. */
export interface RunServices {
  approvals: RunApprovals;
  registry: RunRegistry;
  log(line: string): void;
}

/** What a run needs of its executor (an ExecutorConnection). */
export type RunExecutor = Pick<ExecutorConnection, 'name' | 'connect' | 'client' | 'onClientState' | 'rememberTerminal'>;

export interface ExecutorRunOptions {
  /** A terminal reopened after a window reload: follow this process instead of starting one. */
  attach?: TerminalRunDeps['attach'];
  /** Changes the start request on its way (a shell's integration scripts). */
  prepareStart?(client: ExecServerClient, options: StartProcessOptions): Promise<StartProcessOptions>;
  /** Whether a PTY resize may be sent (a task terminal never resizes its pipes). Default: when the executor can. */
  resizable?: boolean;
  /** Before each log line, after the executor's name (`task: `). */
  logPrefix?: string;
}

/**
 * Every run on an executor — a terminal's command or shell, a task, a language model's tool — is
 * built here, so the same approval rules apply to each, the same Executors view lists it, and a
 * window reload finds it again (its process is remembered with the title it comes back with).
 */
export function executorRun(conn: RunExecutor, spec: RunSpec, services: RunServices, options: ExecutorRunOptions = {}): TerminalRun {
  const log = (line: string) => services.log(`${conn.name}: ${options.logPrefix ?? ''}${line}`);
  return new TerminalRun(spec, {
    ...(options.attach ? { attach: options.attach } : {}),
    onStarted: (handle, sandboxed) => conn.rememberTerminal(handle.processId, terminalInfo(spec, sandboxed)),
    start: async (start) => {
      const client = await conn.connect();
      return client.startProcess(options.prepareStart ? await options.prepareStart(client, start) : start);
    },
    approve: (denial, signal) => services.approvals.approve(denial, signal),
    beforeRun: (planned, signal, onAsk) => services.approvals.beforeRun(planned, signal, onAsk),
    onConnectionState: conn.onClientState,
    canResize: () => options.resizable !== false && conn.client?.capabilities['processResize'] === true,
    registry: services.registry,
    log,
  });
}

/** What a window reload needs to reopen the run's terminal as it was. */
export function terminalInfo(spec: RunSpec, sandboxed: boolean): TerminalInfo {
  return {
    title: terminalName(spec, { unsandboxed: spec.sandbox !== undefined && !sandboxed }),
    kind: spec.kind,
    commandLine: spec.commandLine,
    cwd: spec.cwd,
    sandboxed,
    sandboxLabel: spec.sandboxLabel,
    ...(spec.task !== undefined ? { task: spec.task } : {}),
    ...(spec.agent ? { agent: { ...spec.agent } } : {}),
  };
}
