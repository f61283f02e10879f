import * as vscode from 'vscode';
import { BUNDLED_EXECUTOR, defaultExecutorProblem, ExecutorConnection } from '../core';
import type { BundledServer, ExecutorConfig, ExecutorState, RestoredSession, SessionMemory } from '../core';
import type { ClientOptions } from '../client';
import { DisposableStore, Emitter, type Event } from '../util';
import { currentExecutors } from './listSettings';
import { askSshPrompt, SshProgressNotifier } from './sshExecutors';

const SECRET_PREFIX = 'execBridge.token.';

/**
 * The executors from settings (+ `bundled`), their connections, and which one is active.
 * Tokens come from SecretStorage only (never settings or logs).
 */
export class ExecutorManager {
  private readonly connections = new Map<string, ExecutorConnection>();
  private readonly store = new DisposableStore();
  private readonly changedEmitter = new Emitter<void>();
  private readonly stateEmitter = new Emitter<{ executor: string; state: ExecutorState }>();
  private readonly restoredEmitter = new Emitter<{ conn: ExecutorConnection; restored: RestoredSession }>();
  /** A connect resumed a remembered session (or found it expired): see ExecutorConnection.onDidRestore. */
  readonly onDidRestore: Event<{ conn: ExecutorConnection; restored: RestoredSession }> = this.restoredEmitter.event;
  private activeName: string = BUNDLED_EXECUTOR;
  /** The list or the active executor changed. */
  readonly onDidChange: Event<void> = this.changedEmitter.event;
  /** Any executor's state changed. */
  readonly onDidChangeState: Event<{ executor: string; state: ExecutorState }> = this.stateEmitter.event;

  /** First-connect notifications of SSH executors. */
  private readonly sshNotifier = new SshProgressNotifier((name) => this.connections.get(name)?.state);

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly memento: vscode.Memento,
    private readonly bundled: BundledServer,
    private readonly log: vscode.LogOutputChannel,
    private readonly clientOptions: Partial<ClientOptions> = {},
    private readonly memory?: SessionMemory,
    /** How long executors should keep this window's session once detached (setting execBridge.sessionTtlSeconds). */
    private readonly sessionTtlMs?: () => number,
  ) {
    this.reload();
    this.activeName = this.resolveActive(memento.get<string>('execBridge.activeExecutor'));
    this.store.add(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('execBridge.executors') || e.affectsConfiguration('execBridge.defaultExecutor')) this.reload();
      }),
    );
  }

  get active(): ExecutorConnection {
    return this.connections.get(this.activeName) ?? this.connections.get(BUNDLED_EXECUTOR)!;
  }
  all(): ExecutorConnection[] {
    return [...this.connections.values()];
  }
  get(name: string): ExecutorConnection | undefined {
    return this.connections.get(name);
  }

  async setActive(name: string): Promise<void> {
    if (!this.connections.has(name)) throw new Error(`there is no executor named "${name}"`);
    if (name === this.activeName) return;
    this.activeName = name;
    await this.memento.update('execBridge.activeExecutor', name);
    this.log.info(`active executor: ${name}`);
    this.changedEmitter.fire();
  }

  /** Whether a token is stored for this WebSocket executor. */
  async hasToken(config: Extract<ExecutorConfig, { kind: 'websocket' }>): Promise<boolean> {
    return Boolean(await this.secrets.get(SECRET_PREFIX + config.tokenSecret));
  }

  /** Stores a WebSocket executor's token in SecretStorage; an empty token deletes it. */
  async setToken(config: Extract<ExecutorConfig, { kind: 'websocket' }>, token: string): Promise<void> {
    const key = SECRET_PREFIX + config.tokenSecret;
    if (token) await this.secrets.store(key, token);
    else await this.secrets.delete(key);
    this.log.info(`${config.name}: token ${token ? 'stored' : 'removed'} (SecretStorage "${key}")`);
  }

  private resolveActive(remembered: string | undefined): string {
    const configured = vscode.workspace.getConfiguration('execBridge').get<string>('defaultExecutor') || BUNDLED_EXECUTOR;
    for (const name of [remembered, configured]) if (name && this.connections.has(name)) return name;
    return BUNDLED_EXECUTOR;
  }

  private reportedDefault: string | undefined;
  /** An unknown `defaultExecutor` is said once per value (log + warning), with the names there are. */
  private checkDefault(): void {
    const configured = vscode.workspace.getConfiguration('execBridge').get<string>('defaultExecutor');
    const problem = defaultExecutorProblem(configured, [...this.connections.keys()]);
    if (!problem || this.reportedDefault === configured) return;
    this.reportedDefault = configured;
    this.log.warn(problem);
    void vscode.window.showWarningMessage(`Exec Bridge: ${problem}.`, 'Select Executor…').then((choice) => {
      if (choice) void vscode.commands.executeCommand('execBridge.selectExecutor');
    });
  }

  /** Re-reads `execBridge.executors`: keeps connections whose config is unchanged, drops the rest. */
  private reload(): void {
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
    const { executors, problems } = currentExecutors(folder);
    for (const p of problems) this.log.warn(`execBridge.executors: ${p.message} (ignored)`);
    if (problems.length > 0) {
      void vscode.window.showWarningMessage(`Exec Bridge: ${problems.length} executor setting(s) ignored: ${problems[0]!.message}`);
    }
    const next = new Map<string, ExecutorConnection>();
    for (const config of executors) {
      const old = this.connections.get(config.name);
      if (old && JSON.stringify(old.config) === JSON.stringify(config)) {
        next.set(config.name, old);
        continue;
      }
      old?.dispose(`the settings of ${config.name} changed`);
      const conn = new ExecutorConnection(config, {
        bundled: this.bundled,
        sshBundle: { cliPath: this.bundled.cliPath },
        onSshProgress: (name, p) => this.sshNotifier.onProgress(name, p),
        sshAskpass: askSshPrompt,
        getToken: async (secret) => (await this.secrets.get(SECRET_PREFIX + secret)) || undefined,
        clientOptions: this.clientOptions,
        ...(this.sessionTtlMs ? { sessionTtlMs: this.sessionTtlMs } : {}),
        ...(this.memory ? { memory: this.memory } : {}),
        isActive: () => this.active.name === config.name,
        log: (line) => this.log.info(line),
      });
      conn.onDidRestore((restored) => this.restoredEmitter.fire({ conn, restored }));
      conn.onDidChangeState((state) => {
        if (state.kind === 'connected' || state.kind === 'failed' || state.kind === 'idle') this.sshNotifier.end(conn.name);
        this.stateEmitter.fire({ executor: conn.name, state });
      });
      next.set(config.name, conn);
    }
    for (const [name, conn] of this.connections) if (!next.has(name)) conn.dispose(`${name} was removed from the settings`);
    this.connections.clear();
    for (const [k, v] of next) this.connections.set(k, v);
    if (!this.connections.has(this.activeName)) this.activeName = this.resolveActive(undefined);
    this.checkDefault();
    this.changedEmitter.fire();
  }

  /**
   * After a window reload: connects every executor whose remembered session has processes, so its
   * terminals come back without waiting for a first use (the session resumes, see onDidRestore).
   */
  restoreSessions(): void {
    for (const conn of this.connections.values()) {
      if (!conn.hasRememberedProcesses) continue;
      this.log.info(`${conn.name}: resuming the session remembered for this workspace`);
      conn.connect().catch((e: unknown) => this.log.warn(`${conn.name}: could not resume its session: ${String(e)}`));
    }
  }

  dispose(): void {
    this.store.dispose();
    this.restoredEmitter.dispose();
    for (const c of this.connections.values()) c.dispose();
    this.connections.clear();
    this.changedEmitter.dispose();
    this.stateEmitter.dispose();
  }
}
