import { pathToFileURL } from 'node:url';
import { sandboxForPolicy, SandboxPolicyName, type SandboxContextInput } from '../protocol/sandbox';

/** The user's sandbox choice (`execBridge.sandbox` + `execBridge.sandboxNetwork`). */
export interface SandboxSettings {
  policy: SandboxPolicyName;
  network: boolean;
}

export const DEFAULT_SANDBOX: SandboxSettings = { policy: 'workspace-write', network: false };

/** Reads raw setting values; anything unknown falls back to the safe default. */
export function readSandboxSettings(policy: unknown, network: unknown): SandboxSettings {
  const parsed = SandboxPolicyName.safeParse(policy);
  return { policy: parsed.success ? parsed.data : DEFAULT_SANDBOX.policy, network: network === true };
}

/** E.g. `workspace-write, network off` — shown in terminals and approval popups. */
export function sandboxLabel(s: SandboxSettings): string {
  return `${s.policy}, network ${s.network ? 'on' : 'off'}`;
}

/**
 * The `sandbox` value for `process/start`, or undefined when the settings ask for no sandbox at
 * all (full access with the network on). Paths are plain absolute paths on the executor.
 */
export function sandboxRequest(s: SandboxSettings, cwd: string, workspaceRoots: string[] = []): SandboxContextInput | undefined {
  if (s.policy === 'full-access' && s.network) return undefined;
  const toUri = (p: string) => pathToFileURL(p).href;
  // `/` as a writable root would make workspace-write mean full access: such a root is dropped,
  // and with no root left nothing is writable (read-only) rather than everything.
  const roots = (workspaceRoots.length > 0 ? workspaceRoots : [cwd]).filter((r) => r.replace(/\/+$/, '') !== '');
  const policy = s.policy === 'workspace-write' && roots.length === 0 ? 'read-only' : s.policy;
  return sandboxForPolicy({ policy, network: s.network, cwd: toUri(cwd), workspaceRoots: roots.map(toUri) });
}
