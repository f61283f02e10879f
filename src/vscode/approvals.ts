import * as vscode from 'vscode';
import { APPROVAL_MODES, ApprovalPolicy, allowHostForWorkspace } from '../core';
import type { ApprovalMode, ApprovalOutcome, BeforeRunAnswer, BeforeRunOutcome, DeniedRun, PlannedRun } from '../core';
import { Emitter, type Event } from '../util';
import { allowHostChoice, APPROVAL_CHOICES, BEFORE_RUN_CHOICES, type ApprovalChoice, type PendingApproval } from './api';

const ALWAYS_ALLOW_KEY = 'execBridge.alwaysAllowedCommands';

const ANSWERS: Record<string, BeforeRunAnswer> = {
  'Run in Sandbox': 'sandboxed',
  'Run Without Sandbox': 'once',
  'Always Allow This Command': 'always',
  Deny: 'deny',
};

/**
 * Sandbox denial → approval (docs/architecture.md, "Sandbox denial"): the decision is core's ApprovalPolicy (setting
 * `execBridge.approvalPolicy`, "always allow" in workspaceState); this class only supplies the
 * notifications naming the command and the sandbox policy: after a denial Run Without Sandbox /
 * Always Allow This Command / Deny, and in `askBeforeRun` mode, before anything runs, also Run in Sandbox.
 */
export class ApprovalService {
  private readonly requested = new Emitter<PendingApproval>();
  readonly onDidRequest: Event<PendingApproval> = this.requested.event;
  private readonly policy: ApprovalPolicy;

  constructor(
    workspaceState: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.policy = new ApprovalPolicy({
      mode: () => {
        const v = vscode.workspace.getConfiguration('execBridge').get<string>('approvalPolicy');
        return APPROVAL_MODES.includes(v as ApprovalMode) ? (v as ApprovalMode) : 'ask';
      },
      store: {
        get: () => workspaceState.get<string[]>(ALWAYS_ALLOW_KEY) ?? [],
        set: async (keys) => {
          await workspaceState.update(ALWAYS_ALLOW_KEY, keys);
        },
      },
      ask: (run, signal) =>
        this.ask(run.unavailable !== undefined ? 'unavailable' : 'denied', run, signal, [
          ...(run.deniedHost !== undefined ? [allowHostChoice(run.deniedHost)] : []),
          ...APPROVAL_CHOICES,
        ]),
      // "Allow HOST for this workspace": the workspace's value of the setting, listed (and removable) in
      // Settings, merged with the user's (a workspace value replaces it: core's allowHostForWorkspace).
      allowHost: async (host) => {
        const c = vscode.workspace.getConfiguration('execBridge');
        const write = allowHostForWorkspace(c.inspect<string[]>('sandboxNetworkAllow') ?? {}, host);
        if (write.workspaceValue) await c.update('sandboxNetworkAllow', write.workspaceValue, vscode.ConfigurationTarget.Workspace);
        this.log.info(`managed network: allowed ${host} for this workspace: ${write.where}`);
        return write.where;
      },
      askBeforeRun: (run, signal) => this.ask('beforeRun', run, signal, BEFORE_RUN_CHOICES),
    });
  }

  /** Undoes every "Always Allow This Command" of this workspace; returns how many there were. */
  async forgetAlwaysAllowed(): Promise<number> {
    const n = this.policy.alwaysAllowedCount;
    await this.policy.forgetAll();
    this.log.info(`forgot ${n} always-allowed command(s): they ask again when the sandbox blocks them`);
    return n;
  }

  async approve(run: DeniedRun, signal: AbortSignal): Promise<ApprovalOutcome> {
    const outcome = await this.policy.approve(run, signal);
    const what =
      run.unavailable !== undefined ? `cannot sandbox (${run.sandboxLabel}: ${run.unavailable})` : `sandbox (${run.sandboxLabel}) denied`;
    const line = `${what} "${run.commandLine}" on ${run.executor}: ${outcome.note}`;
    if (outcome.approved) this.log.warn(`${line} — re-running without the sandbox`);
    else this.log.info(line);
    return outcome;
  }

  /** Before a sandboxed command starts (always-allowed: unsandboxed; `askBeforeRun`: the question). */
  async beforeRun(run: PlannedRun, signal: AbortSignal, onAsk: () => void): Promise<BeforeRunOutcome> {
    const outcome = await this.policy.beforeRun(run, signal, onAsk);
    if (outcome.reason !== 'default')
      this.log.info(
        `"${run.commandLine}" on ${run.executor}: ${outcome.note}${outcome.decision === 'unsandboxed' ? ' — running without the sandbox' : ''}`,
      );
    return outcome;
  }

  private ask<A extends BeforeRunAnswer>(
    kind: PendingApproval['kind'],
    run: PlannedRun & Partial<DeniedRun>,
    signal: AbortSignal,
    choices: readonly ApprovalChoice[],
  ): Promise<A | undefined> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (choice: ApprovalChoice | undefined) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        const answer =
          choice === undefined || !choices.includes(choice) ? undefined : choice.startsWith('Allow ') ? 'allowHost' : ANSWERS[choice];
        resolve(answer as A | undefined);
      };
      const onAbort = () => settle(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      const message = approvalMessage(kind, run);
      vscode.window.showWarningMessage(message, ...choices).then(
        (choice) => settle(choice),
        () => settle(undefined),
      );
      this.requested.fire({
        kind,
        message,
        executor: run.executor,
        commandLine: run.commandLine,
        sandboxLabel: run.sandboxLabel,
        ...(run.deniedHost !== undefined ? { deniedHost: run.deniedHost } : {}),
        choices,
        respond: (choice) => settle(choice),
      });
    });
  }

  dispose(): void {
    this.requested.dispose();
  }
}

/** The notification's words: what happened (or is about to), and what each button does. */
export function approvalMessage(kind: PendingApproval['kind'], run: PlannedRun & Partial<DeniedRun>): string {
  switch (kind) {
    case 'unavailable':
      return `Exec Bridge: ${run.executor} cannot run "${run.commandLine}" in the sandbox (${run.sandboxLabel}): ${run.unavailable} It has not run. Run it without the sandbox?`;
    case 'denied':
      return (
        `Exec Bridge: the sandbox (${run.sandboxLabel}) blocked ${run.deniedHost !== undefined ? `${run.deniedHost} for ` : ''}"${run.commandLine}" on ${run.executor} (exit code ${run.exitCode}). ` +
        'It already ran once in the sandbox: what it did before it was blocked, where the sandbox lets it write, is done, and running it again repeats that. ' +
        'Run it again without the sandbox?'
      );
    case 'beforeRun':
      return `Exec Bridge: run "${run.commandLine}" on ${run.executor}? In the sandbox (${run.sandboxLabel}), or without it.`;
  }
}
