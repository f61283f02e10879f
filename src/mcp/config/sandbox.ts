/**
 * The `executorSandbox` key of a stdio server, and the workspace default (setting
 * `execBridge.mcp.executorSandbox`, same values): the server runs inside the executor's sandbox,
 * the one commands get (bubblewrap on Linux, Seatbelt on macOS). Our own key: VS Code's
 * `sandboxEnabled`/`sandbox` wrap a server VS Code spawns itself, on the window's machine, in
 * another sandbox with another shape; the two never meet in one file.
 *
 * ```jsonc
 * "executorSandbox": "read-only"                 // | "workspace-write" | "none" (no sandbox, even with a default)
 * "executorSandbox": {
 *   "policy": "workspace-write",                 // default workspace-write
 *   "networkAllow": ["registry.npmjs.org"],      // the managed network: only these, through the executor's proxy
 *   "network": false,                            // true: the whole network (then no allow-list)
 *   "writable": ["${userHome}/.cache/my-server"] // more writable paths (workspace-write), variables allowed
 * }
 * ```
 * Without `networkAllow` (and `network`) the network is off. The server's own value wins over the
 * default as a whole (nothing is merged key by key).
 */
export type McpSandboxPolicy = 'read-only' | 'workspace-write';

export interface McpSandboxSettings {
  policy: McpSandboxPolicy;
  /** The whole network (no managed network). */
  network: boolean;
  /** The managed network's allow-list (host, `*.host`, IP; optional `:port`). */
  networkAllow: string[];
  /** Extra writable paths (absolute after variables; workspace-write only). */
  writable: string[];
}

/** What a definition carries: the settings, or `none`, and where they came from (the server's key or the default). */
export interface McpSandboxChoice {
  settings: McpSandboxSettings | 'none';
  from: 'server' | 'default';
}

const POLICIES: readonly McpSandboxPolicy[] = ['read-only', 'workspace-write'];
const KEYS = new Set(['policy', 'network', 'networkAllow', 'writable']);
/** Host, `*.host`, IPv4, `[v6]`, each with an optional `:port`: no scheme, no path. */
const HOST_ENTRY = /^(\*\.)?[A-Za-z0-9_.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

type KeyError = (key: string, message: string) => void;

/**
 * Reads an `executorSandbox` value (`key` is where it stands: `executorSandbox`, or the setting's
 * name). Errors name the sub-key; undefined when the value is unusable.
 */
export function readSandboxValue(raw: unknown, key: string, error: KeyError): McpSandboxSettings | 'none' | undefined {
  if (raw === 'none' || raw === false) return 'none';
  if (typeof raw === 'string') {
    if ((POLICIES as readonly string[]).includes(raw))
      return { policy: raw as McpSandboxPolicy, network: false, networkAllow: [], writable: [] };
    error(key, `"${key}" must be "read-only", "workspace-write", "none" or an object, got ${JSON.stringify(raw)}`);
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    error(
      key,
      `"${key}" must be "read-only", "workspace-write", "none" or an object with "policy", got ${Array.isArray(raw) ? 'an array' : JSON.stringify(raw)}`,
    );
    return undefined;
  }
  const o = raw as Record<string, unknown>;
  let ok = true;
  const bad = (sub: string, message: string) => {
    ok = false;
    error(`${key}.${sub}`, message);
  };
  for (const k of Object.keys(o))
    if (!KEYS.has(k)) bad(k, `unknown key "${k}" in "${key}"; known: policy, networkAllow, network, writable`);
  const policy = o['policy'] ?? 'workspace-write';
  if (!(POLICIES as readonly unknown[]).includes(policy))
    bad('policy', `"policy" must be "read-only" or "workspace-write", got ${JSON.stringify(policy)}`);
  const network = o['network'] ?? false;
  if (typeof network !== 'boolean') bad('network', `"network" must be true or false, got ${JSON.stringify(network)}`);
  const strings = (sub: string): string[] => {
    const v = o[sub];
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      bad(sub, `"${sub}" must be an array of strings`);
      return [];
    }
    return [...new Set((v as string[]).map((x) => x.trim()).filter((x) => x !== ''))];
  };
  const networkAllow = strings('networkAllow');
  for (const h of networkAllow)
    if (!HOST_ENTRY.test(h))
      bad('networkAllow', `"${h}" is not a destination: use host, *.host or an IP, with an optional :port (no scheme, no path)`);
  if (network === true && networkAllow.length > 0)
    bad('network', '"network": true opens the whole network; leave it out to allow only "networkAllow"');
  const writable = strings('writable');
  if (!ok) return undefined;
  return { policy: policy as McpSandboxPolicy, network: network as boolean, networkAllow, writable };
}

/** A short description for logs, the tree and notifications: `workspace-write, network only a, b`. */
export function sandboxSummary(s: McpSandboxSettings): string {
  if (s.network) return `${s.policy}, network on`;
  if (s.networkAllow.length > 0) return `${s.policy}, network only ${s.networkAllow.join(', ')}`;
  return `${s.policy}, network off`;
}

/** The settings with `host` on the allow-list (what "Allow HOST for this server" writes). */
export function withAllowedHost(s: McpSandboxSettings, host: string): McpSandboxSettings {
  return s.networkAllow.includes(host) ? s : { ...s, networkAllow: [...s.networkAllow, host] };
}

/** The settings as the JSON value of an `executorSandbox` key (only what differs from the defaults). */
export function sandboxJson(s: McpSandboxSettings): Record<string, unknown> {
  return {
    policy: s.policy,
    ...(s.network ? { network: true } : {}),
    ...(s.networkAllow.length > 0 ? { networkAllow: s.networkAllow } : {}),
    ...(s.writable.length > 0 ? { writable: s.writable } : {}),
  };
}
