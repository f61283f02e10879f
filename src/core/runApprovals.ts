import type { ApprovalOutcome, BeforeRunOutcome, DeniedRun } from './approvalPolicy';
import { plannedRun, type RunSpec, type TerminalRunDeps } from './runSpec';
import type { TerminalStreamModel } from './terminalStreamModel';

/**
 * What the approval rules decided for a run, in order: the question before it started, a denial (or
 * a sandbox the executor could not build) and what was done about it. What a tool tells its model.
 */
export type RunDecision =
  | { kind: 'beforeRun'; outcome: BeforeRunOutcome }
  | { kind: 'denied'; exitCode: number; deniedHost?: string; outcome: ApprovalOutcome }
  | { kind: 'unavailable'; reason: string; outcome: ApprovalOutcome };

/**
 * The approval questions of one terminal run (docs/architecture.md, "Sandbox denial"): asked through
 * the policy, withdrawn when the run's `ended` signal fires, answered in its terminal; every decision
 * is kept, in order.
 */
export class RunApprovals {
  private readonly list: RunDecision[] = [];

  constructor(
    private readonly spec: RunSpec,
    private readonly deps: Pick<TerminalRunDeps, 'approve' | 'beforeRun'>,
    private readonly model: TerminalStreamModel,
    /** Fires when the terminal was closed or the owner stopped the run. */
    private readonly ended: () => AbortSignal,
    /** The run goes on without the sandbox (its terminal's name says so). */
    private readonly onUnsandboxed: () => void,
  ) {}

  get decisions(): readonly RunDecision[] {
    return this.list;
  }

  /** The question before a sandboxed command starts; `onAsk`: the user is being asked. */
  async beforeRun(onAsk: () => void): Promise<BeforeRunOutcome> {
    const before = await this.deps.beforeRun(plannedRun(this.spec), this.ended(), onAsk);
    if (before.reason !== 'default') this.list.push({ kind: 'beforeRun', outcome: before });
    return before;
  }

  /**
   * Asks the approval policy whether to run the command again (or at all) without the sandbox and
   * says the answer in the terminal. True: go on unsandboxed (the terminal's name says so); a host:
   * allowed for this workspace, to run in the sandbox again with it.
   */
  async retryUnsandboxed(blocked: Pick<DeniedRun, 'exitCode' | 'unavailable' | 'deniedHost'>): Promise<boolean | string> {
    const outcome = await this.deps.approve({ ...plannedRun(this.spec), ...blocked }, this.ended());
    this.list.push(
      blocked.unavailable !== undefined
        ? { kind: 'unavailable', reason: blocked.unavailable, outcome }
        : { kind: 'denied', exitCode: blocked.exitCode ?? -1, ...(blocked.deniedHost ? { deniedHost: blocked.deniedHost } : {}), outcome },
    );
    if (this.ended().aborted) return false;
    if (!outcome.approved) {
      this.model.notice(outcome.note);
      return outcome.allowedHost ?? false;
    }
    this.model.warning(`↻ ${outcome.note} — ${blocked.unavailable !== undefined ? 'running' : 're-running'} WITHOUT the sandbox`);
    this.onUnsandboxed();
    return true;
  }
}
