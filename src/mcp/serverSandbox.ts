import { pathToFileURL } from 'node:url';
import type { StartProcessOptions } from '../client';
import { sandboxForPolicy } from '../protocol';
import type { McpSandboxSettings } from './config';

/*
 * A sandboxed MCP server (`executorSandbox`, docs/mcp.md "Sandboxed servers"): the `process/start`
 * fields for it — the same sandbox intent commands send (codex's shape, so any executor with a
 * sandbox understands it), our managed network with its allow-list, and the ask to hear each
 * refusal while the server runs — and what the server's own words say the sandbox blocked.
 */

/** What a block was: a destination the managed network refused, or a path the sandbox kept read-only. */
export type SandboxBlock =
  { kind: 'host'; target: string; host: string; reason: string } | { kind: 'path'; path: string; evidence: string };

/** The `process/start` fields (and env) for a server run in `sb`, anchored at `cwd`, writable in `workspaceFolder` (else `cwd`). */
export function sandboxedStart(
  sb: McpSandboxSettings,
  cwd: string,
  workspaceFolder: string | undefined,
): Pick<StartProcessOptions, 'sandbox' | 'managedNetwork' | 'reportBlocked'> & { env: Record<string, string> } {
  const uri = (p: string) => pathToFileURL(p).href;
  // `/` as a writable root would make workspace-write mean full access: such a root is dropped.
  const roots = [workspaceFolder ?? cwd].filter((r) => r.replace(/\/+$/, '') !== '');
  const policy = sb.policy === 'workspace-write' && roots.length === 0 ? 'read-only' : sb.policy;
  const sandbox = sandboxForPolicy({
    policy,
    network: sb.network,
    cwd: uri(cwd),
    workspaceRoots: roots.map(uri),
    writableRoots: sb.writable.map(uri),
  });
  const managed = !sb.network && sb.networkAllow.length > 0;
  return {
    sandbox,
    ...(managed ? { managedNetwork: { allow: [...sb.networkAllow] }, reportBlocked: true } : {}),
    // Node's own fetch uses the proxy variables only when told to (Node 22.21+ / 24.5+); curl,
    // Python and most other clients read them anyway.
    env: managed ? { NODE_USE_ENV_PROXY: '1' } : {},
  };
}

/** The host of a `host:port` the proxy refused (`[::1]:443` → `::1`): what "Allow HOST" adds. */
export function hostOfTarget(target: string): string {
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(target);
  if (v6) return v6[1]!;
  const i = target.lastIndexOf(':');
  return i > 0 ? target.slice(0, i) : target;
}

/**
 * What "Allow" puts on the allow-list for a refused destination: the host, except for loopback,
 * private and link-local addresses and `localhost`, which get only the port that was refused —
 * allowing all of 127.0.0.1 would open every local service to the server (ours among them).
 */
export function allowEntryFor(block: { target: string; host: string }): string {
  const h = block.host.toLowerCase();
  const local =
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    /^(127|10|0)\./.test(h) ||
    /^192\.168\./.test(h) ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(h) ||
    /^169\.254\./.test(h) ||
    h === '::1' ||
    /^f[cd]/.test(h) ||
    /^fe80:/.test(h) ||
    h === '::';
  return local ? block.target : block.host;
}

const RE_READ_ONLY = /read-only file system|\berofs\b/i;
const RE_DENIED = /permission denied|\beacces\b|operation not permitted|\beperm\b/i;
const RE_PATH = /['"‘’`“”]?(\/[^\s'"‘’`“”,:)]+)['"‘’`“”]?/g;

/**
 * A write the sandbox refused, from one line the server wrote (stderr, or the text of a tool
 * result): a read-only-filesystem error naming a path, or a permission error on a path outside the
 * writable places. Advisory, like the executor's own denial check for commands: nothing here
 * changes what the server does.
 */
export function blockedPathIn(line: string, writable: readonly string[]): SandboxBlock | undefined {
  const readOnly = RE_READ_ONLY.test(line);
  if (!readOnly && !RE_DENIED.test(line)) return undefined;
  for (const m of line.matchAll(RE_PATH)) {
    const path = m[1]!;
    if (path.startsWith('//')) continue; // part of a URL
    if (readOnly || !writable.some((w) => path === w || path.startsWith(w.endsWith('/') ? w : `${w}/`)))
      return { kind: 'path', path, evidence: line.trim().slice(0, 300) };
  }
  return undefined;
}

/** The directory "Allow writing" adds for a blocked path: the one it is in. */
export function dirToAllow(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(0, trimmed.lastIndexOf('/')) || '/';
}
