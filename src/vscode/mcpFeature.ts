import * as vscode from 'vscode';
import type { McpInputDefinition } from '../mcp/config';
import type { McpExecutor, McpExecutorHost } from '../mcp/executorHost';
import type { McpServer } from '../mcp/mcpServer';
import { McpServerManager } from '../mcp/serverManager';
import type { LogEntry } from '../mcp/serverLog';
import { McpTreeModel, type McpTreeNode } from '../mcp/treeModel';
import { exampleArguments, parseToolArguments } from '../mcp/toolArguments';
import { Emitter } from '../util/emitter';
import { registerCommand } from './commands';
import type { Extension } from './extension';
import { McpConfigSource } from './mcpConfigSource';
import { McpTreeProvider } from './mcpView';

const INPUT_SECRET_PREFIX = 'execBridge.mcp.input.';

/** What the extension keeps of the MCP feature. */
export interface McpFeature {
  readonly manager: McpServerManager;
  readonly tree: McpTreeModel;
  /** Deactivate: drain every server (call before the executors' clients are disposed). */
  shutdown(): Promise<void>;
}

/**
 * The executor seam for the manager, over the extension's ExecutorManager: `executor` names an
 * entry of `execBridge.executors` (undefined = the active one). It fires when the active executor
 * changes and when an executor (re)connects — never for connecting/failing, so a server waiting
 * for its executor cannot spin on failed connection attempts.
 */
class ExtensionExecutorHost implements McpExecutorHost {
  private readonly emitter = new Emitter<void>();
  readonly onDidChange = this.emitter.event;

  constructor(private readonly ext: Extension) {
    ext.disposables.add(ext.executors.onDidChange(() => this.emitter.fire()));
    ext.disposables.add(
      ext.executors.onDidChangeState(({ state }) => {
        if (state.kind === 'connected') this.emitter.fire();
      }),
    );
    ext.disposables.add(this.emitter);
  }

  async acquire(executor: string | undefined): Promise<McpExecutor> {
    const conn = executor === undefined ? this.ext.executors.active : this.ext.executors.get(executor);
    if (!conn) throw new Error(`there is no executor named "${executor}" (setting execBridge.executors)`);
    if (!vscode.workspace.isTrusted) throw new Error('the workspace is not trusted');
    const client = await conn.connect();
    return { id: conn.name, label: conn.name, client };
  }

  resolveId(executor: string | undefined): string | undefined {
    return executor ?? this.ext.executors.active.name;
  }
}

/** One LogOutputChannel per server, created when it first has something to say. */
class McpOutputChannels {
  private readonly channels = new Map<string, vscode.LogOutputChannel>();
  private readonly subscriptions = new Map<McpServer, { dispose(): void }>();

  attach(server: McpServer): void {
    if (this.subscriptions.has(server)) return;
    // Entries written before we subscribed (configuration errors) first.
    for (const e of server.log.all()) this.write(server.name, e);
    this.subscriptions.set(
      server,
      server.log.onDidAppend((e) => this.write(server.name, e)),
    );
  }

  detachMissing(present: readonly McpServer[]): void {
    for (const [server, sub] of this.subscriptions) {
      if (!present.includes(server)) {
        sub.dispose();
        this.subscriptions.delete(server);
      }
    }
  }

  show(server: McpServer): void {
    this.channel(server.name).show(true);
  }

  dispose(): void {
    for (const s of this.subscriptions.values()) s.dispose();
    for (const c of this.channels.values()) c.dispose();
    this.channels.clear();
  }

  private write(name: string, e: LogEntry): void {
    this.format(this.channel(name), e);
  }

  private format(ch: vscode.LogOutputChannel, e: LogEntry): void {
    switch (e.kind) {
      case 'lifecycle':
        ch.info(e.text);
        break;
      case 'stderr':
        // A server's stderr is its log, not an error.
        ch.info(`[stderr] ${e.text}`);
        break;
      case 'message':
        ch.info(`[server] ${e.text}`);
        break;
      case 'trace':
        ch.info(`[trace] ${e.text}`);
        break;
    }
  }

  private channel(name: string): vscode.LogOutputChannel {
    let ch = this.channels.get(name);
    if (!ch) {
      ch = vscode.window.createOutputChannel(`Exec Bridge MCP: ${name}`, { log: true });
      this.channels.set(name, ch);
    }
    return ch;
  }
}

/**
 * Wires the MCP feature into the extension: configuration (mcp.json + settings, watched), the
 * manager, the "MCP Servers" tree, per-server output channels and the `execBridge.mcp.*` commands.
 * Call `shutdown()` from deactivate before the executors are disposed.
 */
export function registerMcpFeature(ext: Extension): McpFeature {
  const secrets = ext.context.secrets;
  const host = new ExtensionExecutorHost(ext);
  const settings = () => vscode.workspace.getConfiguration('execBridge.mcp');
  let trace = settings().get<boolean>('trace', false);
  const manager = new McpServerManager({
    host,
    clientInfo: { name: 'exec-bridge', version: String(ext.context.extension?.packageJSON?.version ?? '0.0.0') },
    resolveInput: (input) => resolveInput(secrets, input),
    trace: () => trace,
  });
  const tree = new McpTreeModel(manager);
  const outputs = new McpOutputChannels();
  const source = new McpConfigSource(ext.log);
  const provider = new McpTreeProvider(tree);

  const apply = (config: Awaited<ReturnType<McpConfigSource['read']>>) => {
    manager.applyConfig(config, { autoStart: vscode.workspace.isTrusted && settings().get<boolean>('autoStart', true) });
    for (const s of manager.servers) outputs.attach(s);
    outputs.detachMissing(manager.servers);
  };
  source.onDidChange(apply);
  void source.read().then(apply, (e: unknown) => ext.log.error(`MCP: reading the configuration failed: ${e instanceof Error ? e.message : String(e)}`));

  const view = vscode.window.createTreeView('execBridge.mcpServers', { treeDataProvider: provider, showCollapseAll: true });
  ext.disposables.add(view);
  ext.disposables.add(provider);
  ext.disposables.add(source);
  ext.disposables.add(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('execBridge.mcp.trace')) trace = settings().get<boolean>('trace', false);
    }),
  );
  ext.disposables.add(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if (!settings().get<boolean>('autoStart', true)) return;
      for (const s of manager.servers) if (s.entry.definition?.autoStart && !s.isActive) void s.start({ automatic: true }).catch(() => undefined);
    }),
  );

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = () => {
    shutdownPromise ??= manager.shutdown().finally(() => {
      tree.dispose();
      outputs.dispose();
    });
    return shutdownPromise;
  };
  // If deactivate did not await shutdown(), still ask the executors to kill every server.
  ext.disposables.add({ dispose: () => (shutdownPromise ? undefined : manager.terminateAllNow()) });

  registerMcpCommands(ext, manager, tree, outputs, source);
  return { manager, tree, shutdown };
}

function registerMcpCommands(ext: Extension, manager: McpServerManager, tree: McpTreeModel, outputs: McpOutputChannels, source: McpConfigSource): void {
  const pickServer = async (arg: unknown, filter: (s: McpServer) => boolean = () => true, title = 'MCP server'): Promise<McpServer | undefined> => {
    if (typeof arg === 'string') return manager.get(arg);
    if (isNode(arg) && 'server' in arg) return manager.get(arg.server);
    const candidates = manager.servers.filter(filter);
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
  };

  registerCommand(ext, 'mcp.start', async (arg?: unknown) => {
    const s = await pickServer(arg, (x) => !x.isActive && !!x.entry.definition, 'Start MCP Server');
    if (!s) return;
    await s.start();
    if (s.state.kind !== 'ready') await explain(s, outputs);
  });
  registerCommand(ext, 'mcp.stop', async (arg?: unknown) => {
    const s = await pickServer(arg, (x) => x.isActive, 'Stop MCP Server');
    if (s) await s.stop();
  });
  registerCommand(ext, 'mcp.restart', async (arg?: unknown) => {
    const s = await pickServer(arg, (x) => !!x.entry.definition, 'Restart MCP Server');
    if (!s) return;
    await s.restart();
    if (s.state.kind !== 'ready') await explain(s, outputs);
  });
  registerCommand(ext, 'mcp.restartAll', () => manager.restartAll());
  registerCommand(
    ext,
    'mcp.showOutput',
    async (arg?: unknown) => {
      const s = await pickServer(arg, () => true, 'Show MCP Server Output');
      if (s) outputs.show(s);
    },
    { needsTrust: false },
  );
  registerCommand(
    ext,
    'mcp.showConfiguration',
    async (arg?: unknown) => {
      const s = await pickServer(arg, () => true, 'Show MCP Server Configuration');
      if (!s) return;
      const src = s.entry.source;
      if (src.kind === 'settings') {
        await vscode.commands.executeCommand('workbench.action.openSettings', 'execBridge.mcp.servers');
        return;
      }
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(src.file));
      const editor = await vscode.window.showTextDocument(doc);
      // Put the cursor on the server's key.
      const offset = doc.getText().indexOf(JSON.stringify(s.name));
      if (offset >= 0) {
        const pos = doc.positionAt(offset);
        editor.selection = new vscode.Selection(pos, pos.translate(0, JSON.stringify(s.name).length));
        editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenter);
      }
    },
    { needsTrust: false },
  );
  registerCommand(ext, 'mcp.callTool', async (arg?: unknown, presetArgs?: unknown) => {
    let server: McpServer | undefined;
    let toolName: string | undefined;
    if (isNode(arg) && arg.kind === 'tool') {
      server = manager.get(arg.server);
      toolName = arg.name;
    } else {
      server = await pickServer(arg, (x) => x.state.kind === 'ready' && x.tools.length > 0, 'Call Tool: server');
      if (!server) return undefined;
      const pick = await vscode.window.showQuickPick(
        server.tools.map((t) => ({ label: t.name, ...(t.description ? { detail: t.description.split('\n')[0] } : {}) })),
        { title: `Call Tool on ${server.name}`, matchOnDetail: true },
      );
      toolName = pick?.label;
    }
    const tool = server?.tools.find((t) => t.name === toolName);
    if (!server || !tool) return undefined;
    // Scripted use (tests, keybindings with args): arguments as the second parameter skip the prompt.
    const text =
      typeof presetArgs === 'object' && presetArgs !== null
        ? JSON.stringify(presetArgs)
        : await vscode.window.showInputBox({
      title: `Call ${tool.name} on ${server.name}`,
      prompt: 'Arguments as a JSON object (checked against the tool\u2019s input schema)',
      value: exampleArguments(tool),
      ignoreFocusOut: true,
      validateInput: (v) => {
        const r = parseToolArguments(tool, v);
        return r.ok ? undefined : r.message;
      },
    });
    if (text === undefined) return undefined;
    const parsed = parseToolArguments(tool, text);
    if (!parsed.ok) throw new Error(parsed.message);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Calling ${tool.name} on ${server.name}…`, cancellable: true },
      (_progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        return server.callTool(tool.name, parsed.args, { signal: abort.signal });
      },
    );
    const doc = await vscode.workspace.openTextDocument({ language: 'json', content: JSON.stringify(result, null, 2) });
    await vscode.window.showTextDocument(doc, { preview: true });
    return result;
  });
  registerCommand(ext, 'mcp.readResource', async (arg?: unknown) => {
    if (!isNode(arg) || arg.kind !== 'resource') return;
    const server = manager.get(arg.server);
    if (!server) return;
    const result = await server.readResource(arg.uri);
    const first = result.contents[0];
    const content = first && 'text' in first && result.contents.length === 1 ? first.text : JSON.stringify(result, null, 2);
    const doc = await vscode.workspace.openTextDocument({ content, language: first && 'text' in first && first.mimeType === 'application/json' ? 'json' : 'plaintext' });
    await vscode.window.showTextDocument(doc, { preview: true });
  });
  registerCommand(ext, 'mcp.reloadConfiguration', async () => {
    manager.applyConfig(await source.read(), { autoStart: false });
  });
  registerCommand(ext, 'mcp.clearInputs', async () => {
    for (const input of manager.config.inputs) await ext.context.secrets.delete(INPUT_SECRET_PREFIX + input.id);
    void vscode.window.showInformationMessage(`Exec Bridge: forgot ${manager.config.inputs.length} stored MCP input value(s); you will be asked again on the next start.`);
  });
  // For tests and bug reports: the tree as plain data.
  registerCommand(ext, 'mcp.snapshot', () => ({ tree: tree.snapshot(), servers: manager.servers.map((s) => ({ name: s.name, state: s.state, tools: s.tools.map((t) => t.name) })) }), {
    needsTrust: false,
  });
}

/** A final state that is not "ready": say why, with a way to the log. */
async function explain(server: McpServer, outputs: McpOutputChannels): Promise<void> {
  const st = server.state;
  const reason = st.kind === 'timedOut' || st.kind === 'crashed' ? st.reason : st.kind === 'stopped' ? (st.reason ?? 'stopped') : server.describe();
  const choice = await vscode.window.showErrorMessage(`Exec Bridge: MCP server "${server.name}" is ${server.describe()}: ${reason}`, 'Show Output');
  if (choice === 'Show Output') outputs.show(server);
}

/** `${input:id}`: from SecretStorage if answered before, else asked once and stored there. */
async function resolveInput(secrets: vscode.SecretStorage, input: McpInputDefinition): Promise<string | undefined> {
  const key = INPUT_SECRET_PREFIX + input.id;
  const stored = await secrets.get(key);
  if (stored !== undefined) return stored;
  let value: string | undefined;
  if (input.type === 'pickString') {
    value = await vscode.window.showQuickPick(input.options ?? [], { title: input.description, ignoreFocusOut: true });
  } else {
    value = await vscode.window.showInputBox({
      title: `MCP input "${input.id}"`,
      prompt: `${input.description} (kept in VS Code\u2019s secret storage)`,
      password: input.password,
      ignoreFocusOut: true,
      ...(input.default !== undefined ? { value: input.default } : {}),
    });
  }
  if (value !== undefined) await secrets.store(key, value);
  return value;
}

function isNode(v: unknown): v is McpTreeNode {
  return typeof v === 'object' && v !== null && 'kind' in v && 'id' in v;
}
