import { createHash } from 'node:crypto';
import type { McpServerEntry } from './config';

/** A stdio server definition as VS Code's MCP list takes it (vscode.McpStdioServerDefinition's fields). */
export interface ProxyDefinition {
  /** Our server's name (the gateway key). */
  name: string;
  label: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Changes whenever what the server runs changes, so VS Code restarts it. */
  version: string;
}

export interface ProxyLaunch {
  /** The extension host's executable (node, or Electron run as node). */
  execPath: string;
  /** Electron needs ELECTRON_RUN_AS_NODE to act as node. */
  electron: boolean;
  /** dist/cli.js of the installed extension. */
  cliPath: string;
  /** The gateway's socket (or pipe). */
  socketPath: string;
  /** The executor a server without `executor` runs on (the active one). */
  activeExecutor: string;
}

/**
 * The definitions we offer VS Code: one per valid server, each a `mcp-proxy` to our gateway. VS
 * Code runs only that small local pipe; the server itself runs once, on its executor, in our
 * lifecycle. Nothing secret goes into a definition: the socket is guarded by its 0700 folder.
 */
export function buildProxyDefinitions(entries: readonly McpServerEntry[], launch: ProxyLaunch): ProxyDefinition[] {
  const defs: ProxyDefinition[] = [];
  for (const e of entries) {
    const def = e.definition;
    if (!def) continue;
    // A remote server runs wherever its URL points (reached through an executor, or not); a stdio one on its executor.
    const on = def.executor ?? launch.activeExecutor;
    const executor = !def.remote ? on : def.remote.connectFrom === 'executor' ? `${def.remote.type} via ${on}` : def.remote.type;
    defs.push({
      name: e.name,
      label: `${e.name} · ${executor}`,
      command: launch.execPath,
      args: [launch.cliPath, 'mcp-proxy', launch.socketPath, e.name],
      env: launch.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {},
      version: shortHash(`${def.fingerprint}\n${executor}\n${launch.socketPath}`),
    });
  }
  return defs;
}

/** One string for a definition list: equal lists give equal keys (no change event needed). */
export function definitionsKey(defs: readonly ProxyDefinition[]): string {
  return defs.map((d) => `${d.name}\u0000${d.label}\u0000${d.version}`).join('\u0001');
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 12);
}
