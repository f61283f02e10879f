import * as vscode from 'vscode';
import { APPROVAL_MODES, ApprovalPolicy, type ApprovalAnswer, type ApprovalMode, type ApprovalOutcome, type DeniedRun } from '../core/approvalPolicy';
import { Emitter, type Event } from '../util/emitter';
import { APPROVAL_CHOICES, type ApprovalChoice, type PendingApproval } from './api';

const ALWAYS_ALLOW_KEY = 'execBridge.alwaysAllowedCommands';

const ANSWERS: Record<ApprovalChoice, ApprovalAnswer> = {
  'Run Without Sandbox': 'once',
  'Always Allow This Command': 'always',
  Deny: 'deny',
};

/**
 * Sandbox denial → approval (docs/architecture.md, "Sandbox denial"): the decision is core's ApprovalPolicy (setting
 * `execBridge.approvalPolicy`, "always allow" in workspaceState); this class only supplies the
 * notification naming the command and the sandbox policy, with Run Without Sandbox / Always Allow
 * This Command / Deny.
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
      ask: (run, signal) => this.ask(run, signal),
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
    const what = run.unavailable !== undefined ? `cannot sandbox (${run.sandboxLabel}: ${run.unavailable})` : `sandbox (${run.sandboxLabel}) denied`;
    const line = `${what} "${run.commandLine}" on ${run.executor}: ${outcome.note}`;
    if (outcome.approved) this.log.warn(`${line} — re-running without the sandbox`);
    else this.log.info(line);
    return outcome;
  }

  private ask(run: DeniedRun, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (choice: ApprovalChoice | undefined) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(choice === undefined ? undefined : ANSWERS[choice]);
      };
      const onAbort = () => settle(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      const message =
        run.unavailable !== undefined
          ? `Exec Bridge: ${run.executor} cannot run "${run.commandLine}" in the sandbox (${run.sandboxLabel}): ${run.unavailable} Run it without the sandbox?`
          : `Exec Bridge: the sandbox (${run.sandboxLabel}) blocked "${run.commandLine}" on ${run.executor} ` +
            `(exit code ${run.exitCode}). Run it again without the sandbox?`;
      vscode.window.showWarningMessage(message, ...APPROVAL_CHOICES).then(
        (choice) => settle(choice),
        () => settle(undefined),
      );
      this.requested.fire({
        executor: run.executor,
        commandLine: run.commandLine,
        sandboxLabel: run.sandboxLabel,
        respond: (choice) => settle(choice),
      });
    });
  }

  dispose(): void {
    this.requested.dispose();
  }
}
