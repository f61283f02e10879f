import type { Implementation } from '@modelcontextprotocol/sdk/types.js';
import { systemClock, DisposableStore, Emitter, type Clock, type Event } from '../util';
import type { McpAuthHooks } from './authSession';
import { MemoryAuthStore } from './authStore';
import { withAllowedHost, type McpConfig, type McpDiagnostic, type McpInputDefinition, type McpSandboxSettings } from './config';
import { allowEntryFor, dirToAllow, type SandboxBlock } from './serverSandbox';
import type { McpClientFeatures } from './clientFeatures';
import type { McpExecutorHost } from './executorHost';
import { McpServer } from './mcpServer';
import { DEFAULT_TIMINGS, type McpServerChange, type McpTimings } from './serverContext';

export interface McpManagerOptions {
  host: McpExecutorHost;
  clock?: Clock;
  timings?: Partial<McpTimings>;
  /** Sent in `initialize`. */
  clientInfo?: Implementation;
  /** Prompts for `${input:…}` (the extension keeps answers in SecretStorage). Default: no value. */
  resolveInput?: (input: McpInputDefinition) => Promise<string | undefined>;
  /** `${env:X}`; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Whether the JSON-RPC trace is on; default off. */
  trace?: () => boolean;
  /** Kill what a server leaves behind when it exits on its own (POSIX executors). Default true. */
  reapOrphans?: boolean;
  /** Roots, elicitation, sampling: what the client announces and answers (clientFeatures.ts). Default none. */
  client?: McpClientFeatures;
  /**
   * Writes a server's `executorSandbox` where its configuration lives (its `mcp.json` entry or its
   * settings entry) and applies the new configuration before resolving: what "Allow" in the tree or
   * the notification does. Without it nothing can be allowed from here.
   */
  saveSandbox?: (server: McpServer, settings: McpSandboxSettings) => Promise<void>;
  /** Sign-in to remote servers (src/mcp/authSession.ts). Default: kept in memory, no browser. */
  auth?: McpAuthHooks;
}

export interface McpServerChangeEvent {
  server: McpServer;
  change: McpServerChange;
}

/**
 * All configured MCP servers. It owns their lifetimes: every path that ends servers —
 * deactivate (`shutdown`), executor switch, configuration change, a failed connection — goes
 * through `drain`, which stops them concurrently and resolves when each is in a final state.
 */
export class McpServerManager {
  private serverMap = new Map<string, McpServer>();
  private readonly retiring = new Set<Promise<void>>();
  private configValue: McpConfig = { entries: [], inputs: [], diagnostics: [] };
  private readonly subscriptions = new DisposableStore();
  private readonly serverSubscriptions = new Map<McpServer, { dispose(): void }>();
  private readonly timings: McpTimings;
  private shuttingDown = false;
  private auth: McpAuthHooks | undefined;
  /** Stdio servers of 2025 by their launch (McpServerContext.legacyServers), shared by every server of this manager. */
  private readonly legacyServers = new Set<string>();

  private readonly serversChanged = new Emitter<void>();
  /** The set or order of servers changed (config reload). */
  readonly onDidChangeServers: Event<void> = this.serversChanged.event;
  private readonly serverChanged = new Emitter<McpServerChangeEvent>();
  /** One server's state, lists or metadata changed. */
  readonly onDidChangeServer: Event<McpServerChangeEvent> = this.serverChanged.event;
  private readonly blocked = new Emitter<{ server: McpServer; block: SandboxBlock }>();
  /** The executor's sandbox blocked something new for a sandboxed server (McpServer.onDidBlock, of any server). */
  readonly onDidBlock: Event<{ server: McpServer; block: SandboxBlock }> = this.blocked.event;

  constructor(private readonly options: McpManagerOptions) {
    this.timings = { ...DEFAULT_TIMINGS, ...options.timings };
    this.subscriptions.add(options.host.onDidChange(() => void this.onExecutorsChanged()));
  }

  get servers(): readonly McpServer[] {
    return [...this.serverMap.values()];
  }

  get(name: string): McpServer | undefined {
    return this.serverMap.get(name);
  }

  get config(): McpConfig {
    return this.configValue;
  }

  get diagnostics(): readonly McpDiagnostic[] {
    return this.configValue.diagnostics;
  }

  /**
   * Applies a (re)loaded configuration: new servers appear (and start when `autoStart`), removed
   * ones are drained, changed ones keep running and show "restart to apply"; tool filters and
   * policies apply at once. `autoStart: false` suppresses starting (e.g. untrusted workspace).
   */
  applyConfig(config: McpConfig, options: { autoStart?: boolean } = {}): void {
    if (this.shuttingDown) return;
    this.configValue = config;
    const next = new Map<string, McpServer>();
    const added: McpServer[] = [];
    for (const entry of config.entries) {
      let server = this.serverMap.get(entry.name);
      if (server) {
        server.updateEntry(entry);
      } else {
        server = this.createServer(entry);
        added.push(server);
      }
      next.set(entry.name, server);
    }
    for (const [name, server] of this.serverMap) {
      if (!next.has(name)) this.retire(server, 'removed from the configuration');
    }
    this.serverMap = next;
    this.serversChanged.fire();
    if (options.autoStart !== false) this.autoStart(added);
  }

  /**
   * The auto-start rule, for new servers and when starting becomes allowed (workspace trusted):
   * every server whose configuration says `autoStart` and that is not running starts.
   */
  autoStart(servers: readonly McpServer[] = this.servers): void {
    for (const s of servers) if (s.entry.definition?.autoStart && !s.isActive) void s.start({ automatic: true }).catch(() => undefined);
  }

  async start(name: string): Promise<void> {
    await this.require(name).start();
  }

  async stop(name: string, reason?: string): Promise<void> {
    await this.require(name).stop(reason);
  }

  async restart(name: string): Promise<void> {
    await this.require(name).restart();
  }

  /**
   * "Allow HOST for this server" (or "Allow writing DIR"): the block's host joins the server's
   * `networkAllow` (its directory its `writable`), the configuration is written (`saveSandbox`),
   * and the server restarts in the sandbox with it, so the next call gets through.
   */
  async allowBlocked(name: string, block: SandboxBlock): Promise<McpSandboxSettings> {
    const server = this.require(name);
    const current = server.sandbox;
    if (!current) throw new Error(`"${name}" does not run in the executor's sandbox`);
    if (!this.options.saveSandbox) throw new Error('this configuration cannot be written from here');
    let next: McpSandboxSettings;
    if (block.kind === 'host') next = withAllowedHost(current, allowEntryFor(block));
    else {
      if (current.policy !== 'workspace-write')
        throw new Error(`"${name}" runs read-only: a write outside its workspace needs "policy": "workspace-write" and "writable"`);
      const dir = dirToAllow(block.path);
      next = current.writable.includes(dir) ? current : { ...current, writable: [...current.writable, dir] };
    }
    await this.options.saveSandbox(server, next);
    server.log.lifecycle(
      block.kind === 'host'
        ? `allowed ${allowEntryFor(block)} for this server (executorSandbox.networkAllow)`
        : `allowed writing ${dirToAllow(block.path)} (executorSandbox.writable)`,
    );
    if (server.isActive) await server.restart();
    return next;
  }

  /** Restarts every server that is running (or crashed/timed out), concurrently. */
  async restartAll(): Promise<void> {
    const targets = this.servers.filter(
      (s) => s.entry.definition && (s.isActive || s.state.kind === 'crashed' || s.state.kind === 'timedOut'),
    );
    await Promise.all(targets.map((s) => s.restart().catch(() => undefined)));
  }

  /**
   * The one drain path: stops the selected servers (default all) concurrently and resolves when
   * each is in a final state. `final: 'crashed'` is for connection failures (so `onCrash` restarts
   * them when the executor is back).
   */
  async drain(reason: string, options: { filter?: (s: McpServer) => boolean; final?: 'stopped' | 'crashed' } = {}): Promise<void> {
    const targets = this.servers.filter((s) => options.filter?.(s) ?? true);
    await Promise.all([...targets.map((s) => s.stop(reason, { final: options.final ?? 'stopped' })), ...this.retiring]);
  }

  /** Deactivate: drains every server (including ones being removed) and releases the manager. */
  async shutdown(reason = 'Exec Bridge is shutting down'): Promise<void> {
    this.shuttingDown = true;
    this.subscriptions.dispose();
    const all = this.servers;
    await this.drain(reason);
    await Promise.all(all.map((s) => s.dispose(reason)));
    await Promise.all([...this.retiring]);
    for (const sub of this.serverSubscriptions.values()) sub.dispose();
    this.serverSubscriptions.clear();
    this.serverMap.clear();
    this.serversChanged.fire();
    this.serversChanged.dispose();
    this.serverChanged.dispose();
    this.blocked.dispose();
  }

  /** Synchronous last resort (see McpServer.terminateNow); prefer `shutdown()`. */
  terminateAllNow(): void {
    this.shuttingDown = true;
    for (const s of this.servers) s.terminateNow();
  }

  private require(name: string): McpServer {
    const s = this.serverMap.get(name);
    if (!s) throw new Error(`no MCP server named "${name}" is configured`);
    return s;
  }

  private createServer(entry: McpConfig['entries'][number]): McpServer {
    const o = this.options;
    const server = new McpServer(entry, {
      host: o.host,
      clock: o.clock ?? systemClock,
      timings: this.timings,
      clientInfo: o.clientInfo ?? { name: 'exec-bridge', version: '0.1.0' },
      inputs: () => this.configValue.inputs,
      resolveInput: o.resolveInput ?? (() => Promise.resolve(undefined)),
      env: o.env ?? process.env,
      trace: o.trace ?? (() => false),
      reapOrphans: o.reapOrphans ?? true,
      client: o.client,
      auth: (this.auth ??= o.auth ?? {
        store: new MemoryAuthStore(),
        openBrowser: () => Promise.reject(new Error('there is no browser to sign in with here')),
      }),
      legacyServers: this.legacyServers,
    });
    const subs = [
      server.onDidChange((change) => this.serverChanged.fire({ server, change })),
      server.onDidBlock((block) => this.blocked.fire({ server, block })),
    ];
    this.serverSubscriptions.set(server, { dispose: () => subs.forEach((x) => x.dispose()) });
    return server;
  }

  private retire(server: McpServer, reason: string): void {
    const p = server.dispose(reason).finally(() => {
      this.retiring.delete(p);
      this.serverSubscriptions.get(server)?.dispose();
      this.serverSubscriptions.delete(server);
    });
    this.retiring.add(p);
  }

  private async onExecutorsChanged(): Promise<void> {
    if (this.shuttingDown) return;
    // A running server whose executor id no longer matches (active executor switched) moves.
    const moving = new Set(this.servers.filter((s) => s.isActive && s.executor !== undefined && s.wantedExecutorId !== s.executor.id));
    for (const s of this.servers) if (!moving.has(s)) s.onExecutorsChanged();
    if (moving.size === 0) return;
    await this.drain('the executor changed', { filter: (s) => moving.has(s) });
    if (this.shuttingDown) return;
    for (const s of moving) if (this.serverMap.get(s.name) === s) void s.start().catch(() => undefined);
  }
}
