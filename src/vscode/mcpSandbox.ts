import { applyEdits, modify } from 'jsonc-parser';
import * as vscode from 'vscode';
import { sandboxJson, sandboxSummary, allowEntryFor, dirToAllow } from '../mcp';
import type { McpSandboxSettings, McpServer, McpServerManager, SandboxBlock } from '../mcp';
import { errorMessage } from '../util';
import type { McpFeature } from './mcpFeatureApi';

/**
 * Sandboxed MCP servers in the UI (docs/mcp.md, "Sandboxed servers"): the notification when the
 * executor's sandbox blocks a host or a path for a server — the MCP counterpart of the command
 * approval — and "Allow", which writes the server's `executorSandbox` where the server is
 * defined (its `.vscode/mcp.json` entry, comments kept, or its `execBridge.mcp.servers` entry).
 */

/** The button of a block: `Allow HOST for This Server`, `Allow Writing DIR`; undefined when nothing can be allowed. */
export function allowLabel(server: McpServer, b: SandboxBlock): string | undefined {
  if (b.kind === 'host') return `Allow ${allowEntryFor(b)} for This Server`;
  return server.sandbox?.policy === 'workspace-write' ? `Allow Writing ${dirToAllow(b.path)}` : undefined;
}

/** Shows the notification for a new block (one per block and run; the tree keeps the list). */
export async function notifyBlocked(manager: McpServerManager, server: McpServer, b: SandboxBlock, showOutput: () => void): Promise<void> {
  const sb = server.sandbox;
  const what = b.kind === 'host' ? `${b.target} (${b.reason})` : `writing ${b.path}`;
  const allow = allowLabel(server, b);
  const choice = await vscode.window.showWarningMessage(
    `Exec Bridge: the sandbox (${sb ? sandboxSummary(sb) : 'executorSandbox'}) blocked ${what} for MCP server "${server.name}". ` +
      (allow ? 'Allow it in this server’s configuration? The server restarts with it.' : ''),
    ...(allow ? [allow] : []),
    'Show Output',
  );
  if (choice === 'Show Output') showOutput();
  else if (choice && choice === allow) await allowBlocked(manager, server, b);
}

/** The tree's inline "Allow" on a blocked node (`{kind: 'blocked', server, index}`). */
export async function allowBlockedNode(mcp: McpFeature, arg: unknown): Promise<void> {
  const node = arg as { kind?: unknown; server?: unknown; index?: unknown } | undefined;
  if (node?.kind !== 'blocked' || typeof node.server !== 'string' || typeof node.index !== 'number') return;
  const server = mcp.manager.get(node.server);
  const block = server?.blocks[node.index];
  if (server && block) await allowBlocked(mcp.manager, server, block);
}

/** "Allow": writes the configuration and restarts the server; a failure says why. */
export async function allowBlocked(manager: McpServerManager, server: McpServer, b: SandboxBlock): Promise<void> {
  try {
    await manager.allowBlocked(server.name, b);
  } catch (e) {
    void vscode.window.showErrorMessage(`Exec Bridge: could not allow it for "${server.name}": ${errorMessage(e)}`);
  }
}

/**
 * Writes `settings` as the server's `executorSandbox`: into its `mcp.json` entry (through
 * jsonc-parser, so comments and layout stay) or its settings entry (in the scope that defines it).
 * A server adjusted from settings gets it in settings, which win.
 */
export async function writeServerSandbox(server: McpServer, settings: McpSandboxSettings): Promise<void> {
  const def = server.entry.definition;
  if (!def) throw new Error('the server has a configuration error');
  const value = sandboxJson(settings);
  const target = def.adjustedBy ?? def.source;
  if (target.kind === 'mcpJson') {
    const uri = vscode.Uri.file(target.file);
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const edits = modify(text, ['servers', server.name, 'executorSandbox'], value, {
      formattingOptions: { insertSpaces: true, tabSize: 2, eol: text.includes('\r\n') ? '\r\n' : '\n' },
    });
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(applyEdits(text, edits)));
    return;
  }
  const c = vscode.workspace.getConfiguration('execBridge.mcp');
  const inspected = c.inspect<Record<string, Record<string, unknown>>>('servers');
  const scopes = [
    [inspected?.workspaceFolderValue, vscode.ConfigurationTarget.WorkspaceFolder],
    [inspected?.workspaceValue, vscode.ConfigurationTarget.Workspace],
    [inspected?.globalValue, vscode.ConfigurationTarget.Global],
  ] as const;
  const [current, scope] = scopes.find(([v]) => v && server.name in v) ?? [
    inspected?.workspaceValue ?? {},
    vscode.ConfigurationTarget.Workspace,
  ];
  const servers = { ...(current ?? {}) };
  servers[server.name] = { ...(servers[server.name] ?? {}), executorSandbox: value };
  await c.update('servers', servers, scope);
}
