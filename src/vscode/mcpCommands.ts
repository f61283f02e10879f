import * as vscode from 'vscode';
import { progressStep, requiredUrlElicitations, exampleArguments, parseToolArguments, type McpServer, type McpTreeNode } from '../mcp';
import { elicitUrlWithQuickPick } from './mcpElicitation';
import { offerSignIn, signInToServer, signOutOfServer, withSignIn } from './mcpAuth';
import type { McpFeature } from './mcpFeatureApi';

// The handlers of the `execBridge.mcp.*` commands (registered by the table in commands.ts). The
// argument is a server name or a node of the "MCP Servers" tree; without one, a quick pick asks.

type Tool = McpServer['tools'][number];

function isNode(v: unknown): v is McpTreeNode {
  return typeof v === 'object' && v !== null && 'kind' in v && 'id' in v;
}

/** The server the argument names, or the only one that fits, or the one picked; undefined if none. */
async function pickServer(mcp: McpFeature, arg: unknown, filter: (s: McpServer) => boolean, title: string): Promise<McpServer | undefined> {
  if (typeof arg === 'string') return mcp.manager.get(arg);
  if (isNode(arg) && 'server' in arg) return mcp.manager.get(arg.server);
  const candidates = mcp.manager.servers.filter(filter);
  if (candidates.length === 0) {
    void vscode.window.showInformationMessage('Exec Bridge: no MCP server fits (configure them in .vscode/mcp.json).');
    return undefined;
  }
  if (candidates.length === 1) return candidates[0];
  const pick = await vscode.window.showQuickPick(
    candidates.map((s) => ({ label: s.name, description: s.describe(), server: s })),
    { title },
  );
  return pick?.server;
}

/** A final state that is not "ready": say why, with a way to the output. */
async function explainNotReady(mcp: McpFeature, server: McpServer): Promise<void> {
  if (server.state.kind === 'ready') return;
  const st = server.state;
  const reason =
    st.kind === 'timedOut' || st.kind === 'crashed' ? st.reason : st.kind === 'stopped' ? (st.reason ?? 'stopped') : server.describe();
  const choice = await vscode.window.showErrorMessage(
    `Exec Bridge: MCP server "${server.name}" is ${server.describe()}: ${reason}`,
    'Show Output',
  );
  if (choice === 'Show Output') mcp.showOutput(server);
}

export async function startServer(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, (x) => !x.isActive && !!x.entry.definition, 'Start MCP Server');
  if (!s) return;
  await s.start();
  if (s.state.kind === 'stopped' && s.auth.status.kind === 'signInRequired') return offerSignIn(s);
  await explainNotReady(mcp, s);
}

export async function stopServer(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, (x) => x.isActive, 'Stop MCP Server');
  if (s) await s.stop();
}

export async function restartServer(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, (x) => !!x.entry.definition, 'Restart MCP Server');
  if (!s) return;
  await s.restart();
  await explainNotReady(mcp, s);
}

export async function showServerOutput(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, () => true, 'Show MCP Server Output');
  if (s) mcp.showOutput(s);
}

/** Opens where the server is configured: the settings UI, or its mcp.json with the cursor on its key. */
export async function showServerConfiguration(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, () => true, 'Show MCP Server Configuration');
  if (!s) return;
  const src = s.entry.source;
  if (src.kind === 'settings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'execBridge.mcp.servers');
    return;
  }
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(src.file));
  const editor = await vscode.window.showTextDocument(doc);
  const key = JSON.stringify(s.name);
  const offset = doc.getText().indexOf(key);
  if (offset < 0) return;
  const pos = doc.positionAt(offset);
  editor.selection = new vscode.Selection(pos, pos.translate(0, key.length));
  editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenter);
}

/** The tool of a tree node, or a server then one of its tools picked in two quick picks. */
async function pickTool(mcp: McpFeature, arg: unknown): Promise<{ server: McpServer; tool: Tool } | undefined> {
  let server: McpServer | undefined;
  let toolName: string | undefined;
  if (isNode(arg) && arg.kind === 'tool') {
    server = mcp.manager.get(arg.server);
    toolName = arg.name;
  } else {
    server = await pickServer(mcp, arg, (x) => x.state.kind === 'ready' && x.tools.length > 0, 'Call Tool: server');
    if (!server) return undefined;
    const pick = await vscode.window.showQuickPick(
      server.tools.map((t) => ({ label: t.name, ...(t.description ? { detail: t.description.split('\n')[0] } : {}) })),
      { title: `Call Tool on ${server.name}`, matchOnDetail: true },
    );
    toolName = pick?.label;
  }
  const tool = server?.tools.find((t) => t.name === toolName);
  return server && tool ? { server, tool } : undefined;
}

/** The arguments as JSON text: given (scripted use: tests, keybindings with args) or typed, checked against the schema. */
function askToolArguments(server: McpServer, tool: Tool, preset: unknown): Thenable<string | undefined> {
  if (typeof preset === 'object' && preset !== null) return Promise.resolve(JSON.stringify(preset));
  return vscode.window.showInputBox({
    title: `Call ${tool.name} on ${server.name}`,
    prompt: 'Arguments as a JSON object (checked against the tool\u2019s input schema)',
    value: exampleArguments(tool),
    ignoreFocusOut: true,
    validateInput: (v) => {
      const r = parseToolArguments(tool, v);
      return r.ok ? undefined : r.message;
    },
  });
}

/** Calls the tool under a cancellable progress notification. */
function callWithProgress(server: McpServer, tool: Tool, args: Record<string, unknown>): Thenable<unknown> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Calling ${tool.name} on ${server.name}…`, cancellable: true },
    (progress, token) => {
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort());
      // While the executor reconnects the call waits: say so, and that it goes on by itself.
      let waiting = false;
      const show = () => {
        const now = server.connection === 'recovering';
        if (now === waiting) return;
        waiting = now;
        progress.report({
          message: now ? `waiting for executor ${server.executor?.label ?? ''} to reconnect; the call continues then` : '',
        });
      };
      show();
      const sub = server.onDidChange(show);
      // Cancel sends notifications/cancelled (the SDK does, on abort); the server's progress shows here.
      let percent = 0;
      const onprogress = (p: { progress: number; total?: number; message?: string }) => {
        const step = progressStep(p, percent);
        percent += step.increment ?? 0;
        progress.report(step);
      };
      return server
        .callTool(tool.name, args, { signal: abort.signal, onprogress, resetTimeoutOnProgress: true })
        .finally(() => sub.dispose());
    },
  );
}

/**
 * A call that fails with "URL elicitation required" (-32042; e.g. a third-party sign-in first):
 * each page is offered (opened only on Open), then a pick offers to call again once the user is
 * done in the browser. Declining any of them ends with the server's error; Cancel with nothing.
 */
async function callNeedingUrls(server: McpServer, tool: Tool, args: Record<string, unknown>): Promise<unknown> {
  try {
    return await callWithProgress(server, tool, args);
  } catch (e) {
    const pages = requiredUrlElicitations(e);
    if (!pages) throw e;
    for (const page of pages) {
      const answer = await elicitUrlWithQuickPick(server.name, page, new AbortController().signal);
      if (answer.action !== 'accept') throw e;
    }
    const again = await vscode.window.showQuickPick(['Call Again', 'Cancel'], {
      title: `${server.name} · ${tool.name}: finish in the browser, then call again`,
      ignoreFocusOut: true,
    });
    if (again !== 'Call Again') return undefined;
    return callWithProgress(server, tool, args);
  }
}

/** Results are virtual documents of this scheme: read-only, and closing one never asks to save it. */
export const RESULT_SCHEME = 'execbridge-mcp-result';
const results = new Map<string, string>();
/** Results kept for reopening (a tab restored after the oldest are gone shows a note instead). */
const MAX_RESULTS = 50;
let resultSeq = 0;

/** The content provider behind result documents (registered by the MCP feature). */
export function registerResultDocuments(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(RESULT_SCHEME, {
    provideTextDocumentContent: (uri) => results.get(uri.query) ?? '(this result is no longer kept; call the tool again)',
  });
}

/** Shows `content` in a read-only editor titled `title` (e.g. `memory · read_graph.json`). */
async function showReadOnly(content: string, language: string, title: string): Promise<void> {
  const key = String(++resultSeq);
  results.set(key, content);
  for (const old of results.keys()) if (results.size > MAX_RESULTS) results.delete(old);
  const uri = vscode.Uri.from({ scheme: RESULT_SCHEME, path: `/${title.replace(/[/\\]/g, '_')}`, query: key });
  const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), language);
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** Picks a tool, asks for its arguments, calls it and shows the result (also returned, for scripts). */
export async function callTool(mcp: McpFeature, arg: unknown, presetArgs: unknown): Promise<unknown> {
  const picked = await pickTool(mcp, arg);
  if (!picked) return undefined;
  const { server, tool } = picked;
  const text = await askToolArguments(server, tool, presetArgs);
  if (text === undefined) return undefined;
  const parsed = parseToolArguments(tool, text);
  if (!parsed.ok) throw new Error(parsed.message);
  const result = await withSignIn(server, () => callNeedingUrls(server, tool, parsed.args));
  if (result === undefined) return undefined;
  await showReadOnly(JSON.stringify(result, null, 2), 'json', `${server.name} · ${tool.name}.json`);
  return result;
}

/** A resource node of the tree: its one text content as is, anything else as JSON. */
export async function readResource(mcp: McpFeature, arg: unknown): Promise<void> {
  if (!isNode(arg) || arg.kind !== 'resource') return;
  const server = mcp.manager.get(arg.server);
  if (!server) return;
  const result = await server.readResource(arg.uri);
  const first = result.contents[0];
  const content = first && 'text' in first && result.contents.length === 1 ? first.text : JSON.stringify(result, null, 2);
  const json = first && 'text' in first && first.mimeType === 'application/json';
  await showReadOnly(content, json ? 'json' : 'plaintext', `${server.name} · ${arg.uri.split('/').pop() || arg.uri}`);
}

/** "Sign In…" on a remote server (the browser, or client credentials), which then starts. */
export async function signIn(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, (x) => !!x.entry.definition?.remote, 'Sign In to MCP Server');
  if (s) await signInToServer(s);
}

/** "Sign Out": deletes the server's stored sign-in (its SecretStorage entry) and stops it. */
export async function signOut(mcp: McpFeature, arg: unknown): Promise<void> {
  const s = await pickServer(mcp, arg, (x) => x.auth.status.kind === 'signedIn', 'Sign Out of MCP Server');
  if (s) await signOutOfServer(s);
}

export async function clearInputs(mcp: McpFeature): Promise<void> {
  const n = await mcp.forgetInputs();
  void vscode.window.showInformationMessage(
    `Exec Bridge: forgot ${n} stored MCP input value(s); you will be asked again on the next start.`,
  );
}

/** For tests and bug reports: the tree and the servers as plain data. */
export async function snapshot(mcp: McpFeature): Promise<unknown> {
  const list = await mcp.provider;
  return {
    tree: mcp.tree.snapshot(),
    servers: await Promise.all(
      mcp.manager.servers.map(async (s) => ({
        name: s.name,
        state: s.state,
        tools: s.tools.map((t) => t.name),
        auth: s.auth.status,
        // Read from SecretStorage itself: whether a sign-in is kept for it.
        signInStored: await s.auth.isStored(),
      })),
    ),
    // What VS Code's own MCP list was given (undefined where VS Code has no provider API).
    vscodeList: list && {
      socket: list.gateway.socketPath,
      definitions: list.definitions(),
      sessions: Object.fromEntries(mcp.manager.servers.map((s) => [s.name, list.gateway.sessionCount(s.name)])),
    },
  };
}
