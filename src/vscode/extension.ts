import { isUnknownHostKey, type ClientOptions } from '../client';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { authProblem, BundledServer, outputSpoolFromSetting, sessionTtlMsFromSetting, RunRegistry, SessionMemory } from '../core';
import type { ExecutorConnection, ExecutorState } from '../core';
import { DisposableStore, errorMessage } from '../util';
import type { ExecBridgeApi } from './api';
import { ApprovalService } from './approvals';
import { registerCommands, type CommandContext } from './commands';
import { ExecutorManager } from './executorManager';
import { registerMcpFeature, type McpFeature } from './mcpFeature';
import { registerExecutorFiles } from './executorFileSystem';
import { registerExecutorsView } from './executorsView';
import { registerLmTools } from './lmTools';
import { registerStatusBar } from './statusBar';
import { registerTasks } from './tasks';
import { TerminalFeature } from './terminals';
import { checkHostKey } from './sshExecutors';

/**
 * The one object that owns everything (docs/architecture.md, "Lifetimes"). `disposables` lives as long
 * as the extension; `connectionScopeValue` holds what is bound to the active executor's connection
 * and is dropped when that connection fails or the active executor changes. Features get it as
 * their FeatureContext (context.ts), the command table as its CommandContext (commands.ts).
 */
export class Extension implements CommandContext {
  readonly disposables = new DisposableStore();
  private connectionScopeValue = new DisposableStore();
  readonly log: vscode.LogOutputChannel;
  readonly runs = new RunRegistry();
  readonly bundled: BundledServer;
  /** The session ids (and their terminals) this workspace resumes after a window reload. */
  readonly memory: SessionMemory;
  readonly executors: ExecutorManager;
  readonly approvals: ApprovalService;
  readonly terminals: TerminalFeature;
  /** Drained first on shutdown (its servers need the clients). */
  readonly mcp: McpFeature;

  constructor(readonly context: vscode.ExtensionContext) {
    // Disposed last, in shutdown(): the bundled server logs its exit after everything else is gone.
    this.log = vscode.window.createOutputChannel('Exec Bridge', { log: true });
    this.bundled = new BundledServer({
      cliPath: join(context.extensionPath, 'dist', 'cli.js'),
      ...daemonIdleFromEnv(),
      log: (line) => this.safeLog(line),
    });
    this.disposables.add(this.runs);
    this.memory = new SessionMemory(context.workspaceState);
    this.executors = this.disposables.add(
      new ExecutorManager(context.secrets, context.workspaceState, this.bundled, this.log, spoolOption(), this.memory, () =>
        // What every executor is asked to keep this window's session once its connection drops.
        sessionTtlMsFromSetting(vscode.workspace.getConfiguration('execBridge').get<number>('sessionTtlSeconds')),
      ),
    );
    this.approvals = this.disposables.add(new ApprovalService(context.workspaceState, this.log));
    this.terminals = this.disposables.add(new TerminalFeature(this));
    this.disposables.add(this.executors.onDidRestore(({ conn, restored }) => this.terminals.restore(conn, restored)));
    this.disposables.add(this.executors.onDidChange(() => this.bindActiveConnection()));
    this.disposables.add(
      this.executors.onDidChangeState(({ executor, state }) => {
        if (executor === this.executors.active.name && state.kind === 'connected') this.bindActiveConnection();
      }),
    );
    // The laptop woke up, the train left the tunnel: the user is back in the window, so an executor
    // that is offline tries to resume now instead of after its back-off (up to 30 s).
    this.disposables.add(
      vscode.window.onDidChangeWindowState((w) => {
        if (!w.focused) return;
        for (const c of this.executors.all())
          if (c.state.kind === 'recovering' && c.retryNow()) this.safeLog(`${c.name}: window focused; retrying now`);
      }),
    );
    registerStatusBar(this);
    registerExecutorsView(this);
    registerTasks(this);
    // Before restoreSessions (activate): a background process a model started is known again after a reload.
    registerLmTools(this, this.terminals, this.memory);
    registerExecutorFiles(this, () => this.terminals.terminals());
    this.mcp = registerMcpFeature(this);
  }

  /**
   * Per-connection wiring for the active executor's client, dropped with it: when that client
   * fails on its own (not when we replace it), say so once with what can actually be done.
   */
  private bindActiveConnection(): void {
    const conn = this.executors.active;
    const client = conn.client;
    if (client && this.boundClient === client) return;
    this.resetConnectionScope();
    this.boundClient = client;
    if (!client || client.state.kind === 'failed') return;
    this.connectionScopeValue.add(
      client.onDidChangeState((s) => {
        if (s.kind !== 'failed') return;
        this.resetConnectionScope();
        this.boundClient = undefined;
        // Replaced on purpose (reconnect, settings change, shutdown): nothing to report.
        if (conn.client !== client || conn.state.kind !== 'failed') return;
        const message = conn.state.message;
        void vscode.window
          .showErrorMessage(`Exec Bridge: lost the connection to ${conn.name} — ${message}`, 'Reconnect', 'Show Log')
          .then((choice) => {
            if (choice === 'Reconnect') void this.reconnect(conn);
            if (choice === 'Show Log') this.log.show(true);
          });
      }),
    );
  }
  private boundClient: unknown;

  private logClosed = false;
  /** For callbacks that may outlive the channel (child process exits during shutdown). */
  private safeLog(line: string): void {
    if (!this.logClosed) this.log.info(line);
  }

  private resetConnectionScope(): void {
    this.connectionScopeValue.dispose();
    this.connectionScopeValue = new DisposableStore();
  }

  connection(name: string | undefined): ExecutorConnection {
    const conn = name === undefined ? this.executors.active : this.executors.get(name);
    if (!conn) throw new Error(`there is no executor named "${name}"`);
    return conn;
  }

  async useExecutor(name: string): Promise<void> {
    await this.executors.setActive(name);
  }

  /**
   * Connects, or explains why not: "Not connected — Connect / Show Log" instead of an exception
   * (docs/style.md §6). Resolves whether a connection is there.
   */
  async connectOrExplain(conn: ExecutorConnection, options: { askHostKey?: boolean } = {}): Promise<boolean> {
    try {
      await conn.connect();
      return true;
    } catch (e) {
      const message = errorMessage(e);
      const config = conn.config;
      // A just-added SSH executor: the host-key question is the next step, not an error to dismiss.
      if (options.askHostKey && config.kind === 'ssh' && isUnknownHostKey(message)) {
        const trusted = await this.checkHostKeyOf(config.ssh, config.sshOptions);
        if (trusted) return this.connectOrExplain(conn);
      }
      this.explainNotConnected(conn, message);
      return false;
    }
  }

  /** The host-key modal (fingerprints, Trust and Connect); a scan that fails is said. Resolves whether the user trusted the keys. */
  private checkHostKeyOf(target: string, sshOptions: string[]): Promise<boolean> {
    return checkHostKey(target, sshOptions).catch((e: unknown) => {
      void vscode.window.showErrorMessage(`Exec Bridge: could not read the host key of ${target}: ${errorMessage(e)}`);
      return false;
    });
  }

  /** The notification is not awaited: a command that needed the connection ends now. A 401 offers Set Token…. */
  private explainNotConnected(conn: ExecutorConnection, message: string): void {
    void (async () => {
      const config = conn.config;
      const auth = config.kind === 'websocket' ? authProblem(conn.name, message, await this.executors.hasToken(config)) : undefined;
      const hostKey = config.kind === 'ssh' && isUnknownHostKey(message) ? config : undefined;
      const choice = auth
        ? await vscode.window.showErrorMessage(`Exec Bridge: not connected — ${auth}`, 'Set Token…', 'Show Log')
        : await vscode.window.showErrorMessage(
            `Exec Bridge: not connected to ${conn.name} — ${message}`,
            hostKey ? 'Check Host Key…' : 'Connect',
            'Show Log',
          );
      if (choice === 'Check Host Key…' && hostKey) {
        if (await this.checkHostKeyOf(hostKey.ssh, hostKey.sshOptions)) void this.connectOrExplain(conn);
      }
      if (choice === 'Show Log') this.log.show(true);
      if (choice === 'Connect') void this.connectOrExplain(conn);
      if (choice === 'Set Token…') void vscode.commands.executeCommand('execBridge.setExecutorToken', conn.name);
    })();
  }

  async reconnect(conn: ExecutorConnection): Promise<void> {
    this.log.info(`${conn.name}: reconnect requested`);
    if (conn.config.kind === 'bundled' && !this.bundled.running) this.log.info('bundled: (re)starting the bundled exec-server');
    try {
      await conn.reconnect();
    } catch (e) {
      this.explainNotConnected(conn, errorMessage(e));
    }
  }

  /**
   * Deactivate (window reload or close, extension update): drain MCP servers while their executors
   * are still connected, then close terminals — their processes keep running in the detached
   * session, which the next window of this workspace resumes (or the executor's TTL ends) — and
   * drop the clients. The bundled executor's daemon stays (it exits when idle).
   */
  async shutdown(): Promise<void> {
    // Bounded: a stuck MCP server must not keep the bundled executor alive.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
    await Promise.race([
      this.mcp.shutdown().catch((e: unknown) => console.error('Exec Bridge: error while stopping MCP servers', e)),
      limit,
    ]);
    clearTimeout(timer);
    try {
      this.connectionScopeValue.dispose();
      this.disposables.dispose();
    } catch (e) {
      console.error('Exec Bridge: error while shutting down', e);
    }
    await this.memory.flush();
    this.bundled.dispose();
    this.logClosed = true;
    this.log.dispose();
  }
}

/** EXEC_BRIDGE_DAEMON_IDLE_MS: how long a daemon this window starts stays without sessions (tests shorten it). */
function daemonIdleFromEnv(): { idleExitMs?: number } {
  const ms = Number(process.env.EXEC_BRIDGE_DAEMON_IDLE_MS);
  return Number.isInteger(ms) && ms > 0 ? { idleExitMs: ms } : {};
}

let current: Extension | undefined;

export function activate(context: vscode.ExtensionContext): ExecBridgeApi {
  const t0 = performance.now();
  const ext = new Extension(context);
  current = ext;
  registerCommands(ext);
  // After a window reload: resume the sessions this workspace remembers (terminals come back).
  if (vscode.workspace.isTrusted) ext.executors.restoreSessions();
  const activationMs = performance.now() - t0;
  ext.log.info(
    `activated in ${activationMs.toFixed(1)} ms${vscode.workspace.isTrusted ? '' : ' (untrusted workspace: nothing connects or runs until it is trusted)'}`,
  );
  return createApi(ext, activationMs);
}

export function deactivate(): Promise<void> | undefined {
  const ext = current;
  current = undefined;
  return ext?.shutdown();
}

function createApi(ext: Extension, activationMs: number): ExecBridgeApi {
  const stateEvents = new vscode.EventEmitter<{ executor: string; state: ExecutorState }>();
  ext.disposables.add(stateEvents);
  ext.disposables.add(ext.executors.onDidChangeState((e) => stateEvents.fire(e)));
  const approvalEvents = new vscode.EventEmitter<Parameters<Parameters<ExecBridgeApi['onDidRequestApproval']>[0]>[0]>();
  ext.disposables.add(approvalEvents);
  ext.disposables.add(ext.approvals.onDidRequest((p) => approvalEvents.fire(p)));
  const find = (name?: string) => ext.connection(name);
  return {
    activationMs,
    logUri: ext.context.logUri,
    executorNames: () => ext.executors.all().map((c) => c.name),
    get activeExecutor() {
      return ext.executors.active.name;
    },
    executorState: (name) => find(name).state,
    onDidChangeExecutorState: stateEvents.event,
    connect: async (name) => {
      if (!vscode.workspace.isTrusted) throw new Error('the workspace is not trusted');
      const conn = find(name);
      await conn.connect();
      return conn.state;
    },
    bundledServerPid: () => ext.bundled.pid,
    terminals: () => ext.terminals.terminals(),
    onDidOpenTerminal: ext.terminals.onDidOpenTerminal,
    onDidRequestApproval: approvalEvents.event,
    onWillOpenSignInPage: ext.mcp.signIn.onWillOpenSignInPage,
  };
}

/**
 * The client option of execBridge.outputSpoolMiB, read at each connection: a connection spreads
 * its client options when it opens, so the getter applies a changed setting to the next one.
 */
function spoolOption(): Partial<ClientOptions> {
  return {
    get outputSpool() {
      return outputSpoolFromSetting(vscode.workspace.getConfiguration('execBridge').get<number>('outputSpoolMiB'));
    },
  };
}
