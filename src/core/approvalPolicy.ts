/*
 * Whether a command runs in the sandbox, and what happens after the executor reports `sandboxDenied`:
 * ask the user, approve automatically, or never re-run — per the `approvalPolicy` setting. An
 * approved retry runs the same argv, cwd and env without the sandbox and is marked as such; "Always
 * Allow" remembers that exact command (argv, cwd and executor) in the workspace, and such a command
 * then starts unsandboxed, once (`beforeRun`). `askBeforeRun` asks before any command not yet
 * allowed runs at all. No `vscode` here: the UI prompts and the storage are injected.
 */
import { RemoteError } from '../client';

/**
 * The setting. `ask`: run sandboxed, ask on a denial. `askBeforeRun`: ask before a command not yet
 * always-allowed runs at all (like Codex's `untrusted`), then as `ask`. `autoApprove` re-runs denied
 * commands unsandboxed without asking. `never`: a denial is final.
 */
export type ApprovalMode = 'ask' | 'askBeforeRun' | 'autoApprove' | 'never';

export const APPROVAL_MODES: readonly ApprovalMode[] = ['ask', 'askBeforeRun', 'autoApprove', 'never'];

/** The user's answer to the prompt; `undefined` = dismissed (treated as deny). */
export type ApprovalAnswer = 'once' | 'always' | 'deny' | 'allowHost';

/** The answer to the before-run prompt: also `sandboxed` (run it in the sandbox this time). */
export type BeforeRunAnswer = ApprovalAnswer | 'sandboxed';

/** A command about to start in the sandbox (the `beforeRun` question). */
export type PlannedRun = Omit<DeniedRun, 'exitCode' | 'unavailable'>;

export interface BeforeRunOutcome {
  /** `sandboxed`: start as planned; `unsandboxed`: start without the sandbox, once; `cancel`: do not run. */
  decision: 'sandboxed' | 'unsandboxed' | 'cancel';
  /** One line for the terminal and the log (empty when nothing was decided: the usual sandboxed start). */
  note: string;
  reason: 'default' | 'alwaysAllowed' | 'runSandboxed' | 'approvedOnce' | 'approvedAlways' | 'denied' | 'dismissed' | 'cancelled';
}

/**
 * A run the sandbox got in the way of: the executor reported it denied (`exitCode`), or could not
 * build the sandbox at all (`unavailable`: its reason; the command never ran).
 */
export interface DeniedRun {
  commandLine: string;
  argv: string[];
  /** Absolute path on the executor. */
  cwd: string;
  /** Which executor (name or URL): an approval on one executor does not carry to another. */
  executor: string;
  sandboxLabel: string;
  exitCode?: number;
  unavailable?: string;
  /** Managed network: the host the proxy refused (offered as "Allow HOST for this workspace"). */
  deniedHost?: string;
}

/**
 * Why the executor refused a sandboxed start because it cannot sandbox here (bwrap missing, no user
 * namespaces, an unsupported platform), or undefined for any other failure. Our exec-server says so
 * in the error's data: `{ kind: "sandboxUnavailable", reason }` (one without `reason` is older: its
 * whole message is the reason).
 */
export function sandboxUnavailableReason(e: unknown): string | undefined {
  if (!(e instanceof RemoteError)) return undefined;
  const data = e.data as { kind?: unknown; reason?: unknown } | null | undefined;
  if (typeof data !== 'object' || data === null || data.kind !== 'sandboxUnavailable') return undefined;
  return typeof data.reason === 'string' ? data.reason : e.serverMessage;
}

export interface ApprovalOutcome {
  /** Re-run the same argv, cwd and env without the sandbox. */
  approved: boolean;
  /** One line for the terminal and the log. */
  note: string;
  /** What decided it. */
  reason:
    'autoApprove' | 'alwaysAllowed' | 'approvedOnce' | 'approvedAlways' | 'denied' | 'dismissed' | 'never' | 'cancelled' | 'allowedHost';
  /** "Allow HOST for this workspace": the host was added to the allow-list; re-run in the sandbox with it. */
  allowedHost?: string;
}

/** Workspace-scoped storage for "Always Allow" (VS Code: `workspaceState`). */
export interface AlwaysAllowStore {
  get(): readonly string[];
  set(keys: string[]): void | Promise<void>;
}

/** A store in memory (tests, the CLI). */
export class MemoryAlwaysAllowStore implements AlwaysAllowStore {
  private keys: string[] = [];
  get(): readonly string[] {
    return this.keys;
  }
  set(keys: string[]): void {
    this.keys = [...keys];
  }
}

export interface ApprovalPolicyDeps {
  /** Read on every decision, so a settings change applies to the next denial. */
  mode(): ApprovalMode;
  store: AlwaysAllowStore;
  /** Shows the prompt; resolves with the answer or `undefined` when dismissed. */
  ask(run: DeniedRun, signal: AbortSignal): Promise<ApprovalAnswer | undefined>;
  /** Adds a host to this workspace's managed-network allow-list ("Allow HOST for this workspace"); may resolve where it went. */
  allowHost?(host: string): Promise<string | void>;
  /** The `askBeforeRun` prompt (nothing has run yet); without it that mode runs sandboxed as `ask` does. */
  askBeforeRun?(run: PlannedRun, signal: AbortSignal): Promise<BeforeRunAnswer | undefined>;
}

/** "Always allow" cap: oldest entries go first, so the workspace state cannot grow without bound. */
const MAX_REMEMBERED = 500;

export class ApprovalPolicy {
  constructor(private readonly deps: ApprovalPolicyDeps) {}

  /** The identity of "this exact command": executor, cwd and argv (the env is never stored). */
  static commandKey(run: Pick<DeniedRun, 'argv' | 'cwd' | 'executor'>): string {
    return JSON.stringify([run.executor, run.cwd, run.argv]);
  }

  isAlwaysAllowed(run: Pick<DeniedRun, 'argv' | 'cwd' | 'executor'>): boolean {
    return this.deps.store.get().includes(ApprovalPolicy.commandKey(run));
  }

  async forget(run: Pick<DeniedRun, 'argv' | 'cwd' | 'executor'>): Promise<void> {
    const key = ApprovalPolicy.commandKey(run);
    await this.deps.store.set(this.deps.store.get().filter((k) => k !== key));
  }

  /** How many commands are always allowed in this workspace. */
  get alwaysAllowedCount(): number {
    return this.deps.store.get().length;
  }

  async forgetAll(): Promise<void> {
    await this.deps.store.set([]);
  }

  /**
   * Before a sandboxed command starts: an always-allowed command starts without the sandbox (so it
   * runs once, not sandboxed and then again); in `askBeforeRun` mode any other command is asked
   * about first. `never` keeps every command sandboxed.
   */
  async beforeRun(run: PlannedRun, signal: AbortSignal, onAsk?: () => void): Promise<BeforeRunOutcome> {
    const cancelled: BeforeRunOutcome = { decision: 'cancel', reason: 'cancelled', note: 'not run: the terminal was closed' };
    if (signal.aborted) return cancelled;
    const mode = this.deps.mode();
    if (mode === 'never') return { decision: 'sandboxed', reason: 'default', note: '' };
    if (this.isAlwaysAllowed(run))
      return { decision: 'unsandboxed', reason: 'alwaysAllowed', note: 'this command is always allowed in this workspace' };
    if (mode !== 'askBeforeRun' || !this.deps.askBeforeRun) return { decision: 'sandboxed', reason: 'default', note: '' };
    onAsk?.();
    const answer = await this.deps.askBeforeRun(run, signal);
    if (signal.aborted) return cancelled;
    switch (answer) {
      case 'sandboxed':
        return { decision: 'sandboxed', reason: 'runSandboxed', note: 'approved to run in the sandbox' };
      case 'once':
        return { decision: 'unsandboxed', reason: 'approvedOnce', note: 'approved once' };
      case 'always':
        await this.remember(run);
        return { decision: 'unsandboxed', reason: 'approvedAlways', note: 'approved: Always Allow This Command' };
      case 'deny':
        return { decision: 'cancel', reason: 'denied', note: 'not run: denied' };
      case 'allowHost': // only offered after a denial
      case undefined:
        return { decision: 'cancel', reason: 'dismissed', note: 'not run: the prompt was dismissed' };
    }
  }

  private async remember(run: Pick<DeniedRun, 'argv' | 'cwd' | 'executor'>): Promise<void> {
    const key = ApprovalPolicy.commandKey(run);
    const keys = [...this.deps.store.get().filter((k) => k !== key), key];
    await this.deps.store.set(keys.slice(-MAX_REMEMBERED));
  }

  /** Decides what to do about a denied run; only `ask`/`askBeforeRun` (without a remembered approval) prompt. */
  async approve(run: DeniedRun, signal: AbortSignal): Promise<ApprovalOutcome> {
    // A command the sandbox could not even start was never run: it is "not run", not "not re-run".
    const not = run.unavailable !== undefined ? 'not run' : 'not re-run';
    if (signal.aborted) return { approved: false, reason: 'cancelled', note: `${not}: the terminal was closed` };
    const mode = this.deps.mode();
    if (mode === 'never') return { approved: false, reason: 'never', note: `${not} without the sandbox (approval policy: never)` };
    if (mode === 'autoApprove')
      return { approved: true, reason: 'autoApprove', note: 'approved automatically (approval policy: autoApprove)' };
    if (this.isAlwaysAllowed(run))
      return { approved: true, reason: 'alwaysAllowed', note: 'approved: this command is always allowed in this workspace' };
    const answer = await this.deps.ask(run, signal);
    if (signal.aborted) return { approved: false, reason: 'cancelled', note: `${not}: the terminal was closed` };
    switch (answer) {
      case 'once':
        return { approved: true, reason: 'approvedOnce', note: 'approved once' };
      case 'always':
        await this.remember(run);
        return { approved: true, reason: 'approvedAlways', note: 'approved: Always Allow This Command' };
      case 'allowHost': {
        const host = run.deniedHost;
        if (host === undefined || !this.deps.allowHost)
          return { approved: false, reason: 'dismissed', note: `${not}: the prompt was dismissed` };
        const where = await this.deps.allowHost(host);
        return {
          approved: false,
          reason: 'allowedHost',
          allowedHost: host,
          note: `allowed ${host} for this workspace${where ? ` (${where})` : ''}`,
        };
      }
      case 'deny':
        return { approved: false, reason: 'denied', note: `${not}: denied` };
      case undefined:
        return { approved: false, reason: 'dismissed', note: `${not}: the prompt was dismissed` };
    }
  }
}

/** A start request as far as the retry cares: the sandbox goes, everything else stays. */
export interface RetryableStart {
  argv: string[];
  cwd: string;
  env?: Record<string, string>;
  sandbox?: unknown;
  /** The managed network's lists go with the sandbox (they need one). */
  managedNetwork?: unknown;
}

/** The approved retry: the same argv, cwd and env, no sandbox, marked as an unsandboxed retry. */
export function unsandboxedRetry<T extends RetryableStart>(start: T): Omit<T, 'sandbox' | 'managedNetwork'> & { unsandboxedRetry: true } {
  const { sandbox: _dropped, managedNetwork: _net, ...rest } = start;
  return { ...rest, unsandboxedRetry: true };
}

/**
 * What to report for a finished run: only a run that actually ran in a sandbox can be denied by it
 * (a server may say `sandboxDenied` for an unsandboxed run; that is never shown as a denial).
 */
export function reportedDenial(run: { sandboxed: boolean; sandboxDenied: boolean }): boolean {
  return run.sandboxed && run.sandboxDenied;
}
