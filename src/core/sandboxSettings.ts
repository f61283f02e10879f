import { pathToFileURL } from 'node:url';
import { sandboxForPolicy, SandboxPolicyName, type SandboxContextInput } from '../protocol';

/** The user's sandbox choice (`execBridge.sandbox` + `execBridge.sandboxNetwork` + `execBridge.sandboxNetworkAllow`). */
export interface SandboxSettings {
  policy: SandboxPolicyName;
  network: boolean;
  /** With the network off: the managed network's allow-list (host, *.host, IP; optional :port). */
  networkAllow?: string[];
}

export const DEFAULT_SANDBOX: SandboxSettings = { policy: 'workspace-write', network: false };

/** Reads raw setting values; anything unknown falls back to the safe default. */
export function readSandboxSettings(policy: unknown, network: unknown, networkAllow?: unknown): SandboxSettings {
  const parsed = SandboxPolicyName.safeParse(policy);
  const allow = Array.isArray(networkAllow)
    ? [...new Set(networkAllow.filter((h): h is string => typeof h === 'string').map((h) => h.trim()))].filter((h) => h !== '')
    : [];
  return {
    policy: parsed.success ? parsed.data : DEFAULT_SANDBOX.policy,
    network: network === true,
    ...(allow.length > 0 ? { networkAllow: allow } : {}),
  };
}

/** E.g. `workspace-write, network off` — shown in terminals and approval popups. */
export function sandboxLabel(s: SandboxSettings): string {
  const allow = managedNetworkFor(s);
  if (allow) return `${s.policy}, network only ${allow.allow.join(', ')}`;
  return `${s.policy}, network ${s.network ? 'on' : 'off'}`;
}

/**
 * The managed network's lists for `process/start` (`managedNetwork`), or undefined: only with the
 * network off and a non-empty allow-list (the network on already reaches everything).
 */
export function managedNetworkFor(s: SandboxSettings): { allow: string[] } | undefined {
  return !s.network && s.networkAllow && s.networkAllow.length > 0 ? { allow: [...s.networkAllow] } : undefined;
}

/** `{managedNetwork}` for a RunSpec when the settings ask for one, else nothing. */
export function withManagedNetwork(s: SandboxSettings): { managedNetwork?: { allow: string[] } } {
  const m = managedNetworkFor(s);
  return m ? { managedNetwork: m } : {};
}

/** The host part of a `host:port` the proxy refused (`[::1]:443` → `::1`): what "Allow host" adds. */
export function hostOfTarget(target: string): string {
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(target);
  if (v6) return v6[1]!;
  const i = target.lastIndexOf(':');
  return i > 0 ? target.slice(0, i) : target;
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

/** The scopes of `execBridge.sandboxNetworkAllow` that "Allow HOST for this workspace" reads (VS Code's `inspect`). */
export interface AllowListScopes {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
}

/** What "Allow HOST for this workspace" writes: the workspace value, and the words for where it went. */
export interface AllowHostWrite {
  /** The new workspace value; undefined when it already lists the host (nothing to write). */
  workspaceValue: string[] | undefined;
  /** E.g. `added to execBridge.sandboxNetworkAllow in the workspace settings (your user setting's a.test stay allowed too)`. */
  where: string;
}

const hostList = (v: unknown): string[] => readSandboxSettings(undefined, false, v).networkAllow ?? [];

/**
 * "Allow HOST for this workspace" adds HOST to this workspace's own list, and takes nothing away:
 * the allow-list in effect is the user's, the workspace's and the folder's lists together
 * (core/settingScopes.ts `unionOfListScopes`, issue 24 item 2), so the user's hosts stay allowed
 * without a copy here, and one the user adds or removes later counts in this workspace too.
 * `where` says where it went, and that the user's hosts stay allowed.
 */
export function allowHostForWorkspace(scopes: AllowListScopes, host: string): AllowHostWrite {
  const own = hostList(scopes.workspaceValue);
  const user = hostList(scopes.globalValue ?? scopes.defaultValue);
  const h = host.trim();
  const unchanged = h === '' || own.includes(h);
  const others = user.filter((u) => u !== h && !own.includes(u));
  const where =
    `${unchanged ? 'already in' : 'added to'} execBridge.sandboxNetworkAllow in the workspace settings` +
    (others.length > 0 ? ` (your user setting's ${others.join(', ')} stay allowed too)` : '');
  return { workspaceValue: unchanged ? undefined : [...own, h], where };
}
