import * as vscode from 'vscode';
import { McpServerManager, McpTreeModel, rootsFor } from '../mcp';
import type { McpInputDefinition, McpExecutor, McpExecutorHost, McpServer, LogEntry } from '../mcp';
import { Emitter, errorMessage } from '../util';
import type { FeatureContext } from './context';
import { registerResultDocuments } from './mcpCommands';
import { elicitUrlWithQuickPick, elicitWithQuickInput } from './mcpElicitation';
import { LmSampler } from './mcpSampling';
import type { McpFeature } from './mcpFeatureApi';
import { type McpProviderHandle, registerMcpProvider } from './mcpProvider';
import { McpConfigSource } from './mcpConfigSource';
import { McpTreeProvider } from './mcpView';
import { notifyBlocked, writeServerSandbox } from './mcpSandbox';
import { McpSignIn } from './mcpAuth';

const INPUT_SECRET_PREFIX = 'execBridge.mcp.input.';

export type { McpFeature } from './mcpFeatureApi';

/**
 * The executor seam for the manager, over the extension's ExecutorManager: `executor` names an
 * entry of `execBridge.executors` (undefined = the active one). It fires when the active executor
 * changes and when an executor (re)connects — never for connecting/failing, so a server waiting
 * for its executor cannot spin on failed connection attempts.
 */
class ExtensionExecutorHost implements McpExecutorHost {
  private readonly emitter = new Emitter<void>();
  readonly onDidChange = this.emitter.event;

  constructor(private readonly ext: FeatureContext) {
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
 * manager, the "MCP Servers" tree and per-server output channels. The `execBridge.mcp.*` commands
 * are in the command table (commands.ts). Call `shutdown()` from deactivate before the executors
 * are disposed.
 */
export function registerMcpFeature(ext: FeatureContext): McpFeature {
  const secrets = ext.context.secrets;
  const settings = () => vscode.workspace.getConfiguration('execBridge.mcp');
  let trace = settings().get<boolean>('trace', false);
  const sampler = new LmSampler();
  ext.disposables.add(sampler);
  const signIn = new McpSignIn(secrets);
  ext.disposables.add(signIn);
  const source = new McpConfigSource(ext.log);
  const manager = newManager(ext, { source, signIn, sampler, trace: () => trace });
  const tree = new McpTreeModel(manager);
  const outputs = new McpOutputChannels();
  const provider = new McpTreeProvider(tree);
  // The executor's sandbox blocked a host or a path for a server: say so, and offer to allow it.
  ext.disposables.add(manager.onDidBlock(({ server, block }) => void notifyBlocked(manager, server, block, () => outputs.show(server))));
  ext.disposables.add(registerResultDocuments());

  // Servers start by themselves only in a trusted workspace, and only with the setting on.
  const autoStartAllowed = () => vscode.workspace.isTrusted && settings().get<boolean>('autoStart', true);
  const apply = (config: Awaited<ReturnType<McpConfigSource['read']>>) => {
    manager.applyConfig(config, { autoStart: autoStartAllowed() });
    for (const s of manager.servers) outputs.attach(s);
    outputs.detachMissing(manager.servers);
  };
  source.onDidChange(apply);
  void source.read().then(apply, (e: unknown) => ext.log.error(`MCP: reading the configuration failed: ${errorMessage(e)}`));

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
      if (autoStartAllowed()) manager.autoStart();
    }),
  );
  const vscodeList = offerToVscode(ext, manager);

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

  return {
    manager,
    tree,
    provider: vscodeList,
    signIn,
    showOutput: (server) => outputs.show(server),
    reload: async () => manager.applyConfig(await source.read(), { autoStart: false }),
    forgetInputs: async () => {
      for (const input of manager.config.inputs) await secrets.delete(INPUT_SECRET_PREFIX + input.id);
      return manager.config.inputs.length;
    },
    shutdown,
  };
}

/**
 * The manager over this window: its executors, `${input:…}` answers from SecretStorage, sign-in,
 * and what servers may ask of the client (the workspace folders as roots, elicitation through
 * quick inputs, sampling with VS Code's language models).
 */
function newManager(
  ext: FeatureContext,
  { source, signIn, sampler, trace }: { source: McpConfigSource; signIn: McpSignIn; sampler: LmSampler; trace: () => boolean },
): McpServerManager {
  const rootsChanged = new Emitter<void>();
  const manager = new McpServerManager({
    host: new ExtensionExecutorHost(ext),
    clientInfo: { name: 'exec-bridge', version: String(ext.context.extension?.packageJSON?.version ?? '0.0.0') },
    resolveInput: (input) => resolveInput(ext.context.secrets, input),
    trace,
    auth: signIn.hooks(),
    client: {
      roots: {
        list: (executorId) => {
          const local = ext.executors.get(executorId)?.config.kind === 'bundled';
          const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => ({
            scheme: f.uri.scheme,
            authority: f.uri.authority,
            path: f.uri.path,
            name: f.name,
          }));
          return rootsFor(folders, executorId, local);
        },
        onDidChange: rootsChanged.event,
      },
      elicit: (server, params, signal) => elicitWithQuickInput(server, params, signal),
      elicitUrl: (server, params, signal) => elicitUrlWithQuickPick(server, params, signal),
      sample: sampler.sample,
      canSample: sampler.canSample,
    },
    // "Allow" for a sandboxed server: written where it is defined, then applied before its restart.
    saveSandbox: async (server, sandbox) => {
      await writeServerSandbox(server, sandbox);
      manager.applyConfig(await source.read(), { autoStart: false });
    },
  });
  ext.disposables.add(vscode.workspace.onDidChangeWorkspaceFolders(() => rootsChanged.fire()));
  ext.disposables.add(rootsChanged);
  return manager;
}

/** Our servers in VS Code's own MCP list (chat, agent mode), where VS Code has the API. */
function offerToVscode(ext: FeatureContext, manager: McpServerManager): Promise<McpProviderHandle | undefined> {
  return registerMcpProvider(
    manager,
    ext.context.extension?.extensionPath ?? '',
    () => ext.executors.active.name,
    (l) => ext.log.info(l),
  ).then(
    (h) => {
      if (h) {
        ext.disposables.add(h);
        ext.disposables.add(ext.executors.onDidChange(() => h.recheck()));
      }
      return h;
    },
    (e: unknown) => {
      ext.log.error(`MCP: offering our servers to VS Code failed: ${errorMessage(e)}`);
      return undefined;
    },
  );
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
