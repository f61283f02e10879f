import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type GetPromptResult,
  type Implementation,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { inheritAllEnv } from '../client/envPolicy';
import { defaultExecutorDir } from '../client/executorPaths';
import type { ConnectionState } from '../client/types';
import type { Clock, TimerHandle } from '../util/clock';
import { Deferred } from '../util/deferred';
import { DisposableStore } from '../util/disposable';
import { Emitter, type Event } from '../util/emitter';
import { errorMessage } from '../util/errorMessage';
import { describeExitCode } from '../util/exitCode';
import { formatDiagnostic, isToolEnabled, resolveLaunch, type McpInputDefinition, type McpLaunch, type McpServerDefinition, type McpServerEntry } from './config';
import { ExecProcessTransport } from './execProcessTransport';
import { pathFromUri, type McpExecutor, type McpExecutorHost } from './executorHost';
import { ServerLog } from './serverLog';
import { canTransition, describeState, formatMs, isFinal, type McpServerState } from './serverState';

/** Knobs with defaults that tests shorten. */
export interface McpTimings {
  /** Interrupt → terminate grace on stop. Default 1000 ms. */
  graceMs: number;
  /** After terminate, how long to wait for the executor to confirm the end. Default 5000 ms. */
  closeConfirmMs: number;
  /** `restart: onCrash` delays; the length is the number of tries. Default [1000, 2000, 4000]. */
  restartDelaysMs: readonly number[];
  /** Ready for this long ⇒ the restart counter resets. Default 60 000 ms. */
  stableMs: number;
  /** list_changed debounce. Default 300 ms. */
  listChangedDebounceMs: number;
}

export const DEFAULT_TIMINGS: McpTimings = {
  graceMs: 1000,
  closeConfirmMs: 5000,
  restartDelaysMs: [1000, 2000, 4000],
  stableMs: 60_000,
  listChangedDebounceMs: 300,
};

/** What a server needs from its manager. */
export interface McpServerContext {
  host: McpExecutorHost;
  clock: Clock;
  timings: McpTimings;
  clientInfo: Implementation;
  /** Declared inputs of the whole configuration (a server may use any). */
  inputs(): readonly McpInputDefinition[];
  /** Asks the user (or secret storage) for an input; undefined = cancelled. */
  resolveInput(input: McpInputDefinition): Promise<string | undefined>;
  /** `${env:X}`: the extension host's environment. */
  env: Record<string, string | undefined>;
  /** Whether the JSON-RPC trace is on (read per message, so toggling applies at once). */
  trace(): boolean;
  /** Run servers under the orphan reaper on POSIX executors (orphanReaper.ts). */
  reapOrphans: boolean;
}

export type McpServerChange = 'state' | 'lists' | 'meta';

interface Run {
  readonly id: number;
  readonly abort: AbortController;
  executor?: McpExecutor;
  transport?: ExecProcessTransport;
  sdk?: Client;
  /** Set once a stop was asked for: the stop owns the final state from then on. */
  stopping?: { reason: string; final: 'stopped' | 'crashed' };
  timedOut?: boolean;
  finalized: boolean;
  /** Resolved when the run is ready or final: what `start()` callers wait for. */
  readonly settled: Deferred<void>;
  /** Resolved when the run reached its final state. */
  readonly done: Deferred<void>;
  readonly subscriptions: DisposableStore;
}

/** Aborts with this reason when a stop interrupts a start (so the start knows not to report it). */
class StopRequested extends Error {}

let runCounter = 0;

/**
 * One configured MCP server: its state machine, its process (through the exec client), its SDK
 * client, its lists and its log. The manager owns it; the tree model reads it.
 */
export class McpServer {
  readonly log = new ServerLog();
  private stateValue: McpServerState;
  private run: Run | undefined;
  private restartTimer: TimerHandle | undefined;
  private restartAttempts = 0;
  private readySince: number | undefined;
  private disposed = false;
  private entryValue: McpServerEntry;
  /** The definition the current/last run was started with (the entry may have changed since). */
  private runningDefinition: McpServerDefinition | undefined;

  private allToolsValue: Tool[] = [];
  private toolsValue: Tool[] = [];
  private resourcesValue: Resource[] = [];
  private resourceTemplatesValue: ResourceTemplate[] = [];
  private promptsValue: Prompt[] = [];
  private serverInfoValue: Implementation | undefined;
  private capabilitiesValue: ServerCapabilities | undefined;
  private instructionsValue: string | undefined;
  private executorValue: { id: string; label: string } | undefined;
  private connectionValue: ConnectionState['kind'] | undefined;

  private readonly changed = new Emitter<McpServerChange>();
  readonly onDidChange: Event<McpServerChange> = this.changed.event;

  constructor(
    entry: McpServerEntry,
    private readonly ctx: McpServerContext,
  ) {
    this.entryValue = entry;
    this.stateValue = { kind: 'stopped', since: ctx.clock.now(), stderrTail: [] };
    for (const e of entry.errors) this.log.lifecycle(`configuration error: ${formatDiagnostic(e)}`);
  }

  get name(): string {
    return this.entryValue.name;
  }
  get entry(): McpServerEntry {
    return this.entryValue;
  }
  get state(): McpServerState {
    return this.stateValue;
  }
  /** Enabled tools (after `enabledTools`/`disabledTools`). */
  get tools(): readonly Tool[] {
    return this.toolsValue;
  }
  /** Every tool the server offers, including the filtered-out ones. */
  get allTools(): readonly Tool[] {
    return this.allToolsValue;
  }
  get resources(): readonly Resource[] {
    return this.resourcesValue;
  }
  get resourceTemplates(): readonly ResourceTemplate[] {
    return this.resourceTemplatesValue;
  }
  get prompts(): readonly Prompt[] {
    return this.promptsValue;
  }
  get serverInfo(): Implementation | undefined {
    return this.serverInfoValue;
  }
  get capabilities(): ServerCapabilities | undefined {
    return this.capabilitiesValue;
  }
  get instructions(): string | undefined {
    return this.instructionsValue;
  }
  /** Where the current (or last) run happens. */
  get executor(): { id: string; label: string } | undefined {
    return this.executorValue;
  }
  /** The exec connection of the running server (`recovering` while it reconnects). */
  get connection(): ConnectionState['kind'] | undefined {
    return this.connectionValue;
  }
  /** The process id on the executor while running. */
  get processId(): string | undefined {
    return this.run?.transport?.process?.processId;
  }
  /** Running with a definition that no longer matches the configuration: "restart to apply". */
  get stale(): boolean {
    const running = this.runningDefinition;
    if (!this.run || !running) return false;
    return this.entryValue.definition?.fingerprint !== running.fingerprint;
  }
  /** The executor id this server should run on now (for executor switches). */
  get wantedExecutorId(): string | undefined {
    return this.ctx.host.resolveId(this.entryValue.definition?.executor);
  }
  /** Waiting in `crashed` for the executor to come back before restarting. */
  get waitingForExecutor(): boolean {
    return this.stateValue.kind === 'crashed' && this.stateValue.waitingForExecutor === true;
  }
  /** A run exists (starting, ready or stopping). */
  get isActive(): boolean {
    return this.run !== undefined;
  }

  describe(): string {
    return describeState(this.stateValue, this.ctx.clock.now());
  }

  /** Replaces the configuration entry (config reload). Filters apply at once; launch changes wait for a restart. */
  updateEntry(entry: McpServerEntry): void {
    const before = this.entryValue;
    this.entryValue = entry;
    if (JSON.stringify(before.errors) !== JSON.stringify(entry.errors)) {
      for (const e of entry.errors) this.log.lifecycle(`configuration error: ${formatDiagnostic(e)}`);
    }
    if (this.stale && before.definition?.fingerprint !== entry.definition?.fingerprint) {
      this.log.lifecycle('configuration changed: restart to apply');
    }
    if (entry.definition && this.allToolsValue.length > 0) this.applyToolFilter();
    // A policy change must not leave a restart scheduled that the new policy forbids.
    if (entry.definition?.restart !== 'onCrash' && this.stateValue.kind === 'crashed' && (this.stateValue.restartAt !== undefined || this.stateValue.waitingForExecutor)) {
      this.cancelRestart();
      this.setState({ ...this.stateValue, restartAt: undefined, waitingForExecutor: undefined, since: this.ctx.clock.now() });
    }
    this.changed.fire('meta');
  }

  /**
   * Starts the server unless it is already starting or ready; resolves when it is ready or in a
   * final state (read `state`). Rejects only when the configuration is invalid or the server was
   * disposed.
   */
  async start(options: { automatic?: boolean } = {}): Promise<void> {
    if (this.disposed) throw new Error(`MCP server "${this.name}" was removed`);
    const def = this.entryValue.definition;
    if (!def) {
      const first = this.entryValue.errors[0];
      throw new Error(first ? `cannot start "${this.name}": ${formatDiagnostic(first)}` : `cannot start "${this.name}": invalid configuration`);
    }
    if (this.run) {
      if (!this.run.stopping) return this.run.settled.promise;
      // Restart: let the stop finish first.
      await this.run.done.promise;
      if (this.run) return this.run.settled.promise;
    }
    if (!options.automatic) this.restartAttempts = 0;
    this.cancelRestart();
    const run: Run = {
      id: ++runCounter,
      abort: new AbortController(),
      finalized: false,
      settled: new Deferred<void>(),
      done: new Deferred<void>(),
      subscriptions: new DisposableStore(),
    };
    this.run = run;
    this.runningDefinition = def;
    this.setState({ kind: 'starting', since: this.ctx.clock.now(), attempt: this.restartAttempts + 1 });
    await this.runStart(run, def);
    return run.settled.promise;
  }

  /** Stops the server (interrupt, grace, terminate) and resolves in a final state. No-op when not running. */
  async stop(reason = 'stopped by the user', options: { final?: 'stopped' | 'crashed' } = {}): Promise<void> {
    const run = this.run;
    if (!run) {
      // A scheduled restart is a pending start: cancel it.
      if (this.stateValue.kind === 'crashed' && (this.stateValue.restartAt !== undefined || this.stateValue.waitingForExecutor)) {
        this.cancelRestart();
        this.setState({ ...this.stateValue, restartAt: undefined, waitingForExecutor: undefined, since: this.ctx.clock.now() });
      }
      return;
    }
    if (run.stopping) return run.done.promise;
    run.stopping = { reason, final: options.final ?? 'stopped' };
    run.abort.abort(new StopRequested(reason));
    if (!run.transport) {
      // Nothing was spawned yet (connecting, prompting): the start notices the abort and stops.
      if (this.stateValue.kind === 'starting') {
        this.finalize(run, { kind: run.stopping.final, reason, waitingForExecutor: run.executor?.client.state.kind === 'failed' });
      }
      return run.done.promise;
    }
    this.setState({ kind: 'stopping', since: this.ctx.clock.now(), reason });
    this.log.lifecycle(`stopping: ${reason}`);
    await this.closeRun(run);
    const exit = run.transport.exit;
    const unconfirmed = exit?.error && exit.exitCode === undefined ? ` (the executor did not confirm the end: ${exit.error.message}; it ends the process when the session expires)` : '';
    const clientFailed = run.executor?.client.state.kind === 'failed';
    this.finalize(run, { kind: run.stopping.final, reason: reason + unconfirmed, exitCode: exit?.exitCode, waitingForExecutor: clientFailed });
  }

  async restart(): Promise<void> {
    await this.stop('restarting');
    await this.start();
  }

  async callTool(name: string, args: Record<string, unknown>, options: RequestOptions = {}): Promise<CallToolResult> {
    const sdk = this.readyClient();
    return (await sdk.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;
  }

  async readResource(uri: string, options: RequestOptions = {}): Promise<ReadResourceResult> {
    return this.readyClient().readResource({ uri }, options);
  }

  async getPrompt(name: string, args: Record<string, string> = {}, options: RequestOptions = {}): Promise<GetPromptResult> {
    return this.readyClient().getPrompt({ name, arguments: args }, options);
  }

  /** Round trip in ms. */
  async ping(options: RequestOptions = {}): Promise<number> {
    const t0 = this.ctx.clock.now();
    await this.readyClient().ping(options);
    return this.ctx.clock.now() - t0;
  }

  /** Re-reads tools/resources/prompts (also what list_changed does). */
  async refresh(kinds: readonly ('tools' | 'resources' | 'prompts')[] = ['tools', 'resources', 'prompts']): Promise<void> {
    const run = this.run;
    if (!run?.sdk || this.stateValue.kind !== 'ready') return;
    await this.loadLists(run, run.sdk, kinds, {});
    if (this.stateValue.kind === 'ready' && this.stateValue.tools !== this.toolsValue.length) {
      this.setState({ ...this.stateValue, tools: this.toolsValue.length });
    }
    this.changed.fire('lists');
  }

  /** Stops (if running) and releases everything; the server cannot be started again. */
  async dispose(reason = 'removed'): Promise<void> {
    this.cancelRestart();
    await this.stop(reason);
    this.disposed = true;
    this.cancelRestart();
    this.changed.dispose();
    this.log.dispose();
  }

  /**
   * Last resort when there is no time for a graceful stop (the extension host is going away):
   * sends `process/terminate` now, without waiting for anything.
   */
  terminateNow(): void {
    this.cancelRestart();
    const handle = this.run?.transport?.process;
    if (handle) void handle.terminate().catch(() => undefined);
  }

  /** Called by the manager when the executor host changed: restarts a server waiting for its executor. */
  onExecutorsChanged(): void {
    if (this.waitingForExecutor && !this.disposed) {
      this.log.lifecycle('the executor changed; restarting');
      void this.start({ automatic: true }).catch(() => undefined);
    }
  }

  // ------------------------------------------------------------------------------------------

  private async runStart(run: Run, def: McpServerDefinition): Promise<void> {
    const { clock } = this.ctx;
    let timer: TimerHandle | undefined;
    try {
      const executor = await this.ctx.host.acquire(def.executor);
      run.executor = executor;
      this.executorValue = { id: executor.id, label: executor.label };
      this.throwIfStopped(run);
      const launch = await this.resolve(def, executor);
      this.throwIfStopped(run);

      this.connectionValue = executor.client.state.kind;
      run.subscriptions.add(
        executor.client.onDidChangeState((s) => {
          if (this.run !== run) return;
          this.connectionValue = s.kind;
          if (s.kind === 'recovering') this.log.lifecycle(`exec connection lost (${s.cause}); the process keeps running, reconnecting…`);
          else if (s.kind === 'connected') this.log.lifecycle('exec connection recovered; the MCP session continues');
          this.changed.fire('meta');
          // The client failed for good: its processes are out of reach. Drain through the one stop path.
          if (s.kind === 'failed') void this.stop(`the connection to executor "${executor.label}" failed: ${s.error.message}`, { final: 'crashed' });
        }),
      );

      const timeoutMs = def.startupTimeoutMs;
      const t0 = clock.now();
      timer = clock.setTimeout(() => {
        run.timedOut = true;
        run.abort.abort(new Error(`did not become ready within ${formatMs(timeoutMs)}`));
      }, timeoutMs);

      const processId = `mcp-${def.name.replace(/[^\w.-]+/g, '_').slice(0, 40)}-${run.id}-${randomBytes(3).toString('hex')}`;
      const transport = new ExecProcessTransport({
        client: executor.client,
        launch: {
          processId,
          argv: launch.argv,
          cwd: launch.cwd ?? defaultExecutorDir(executor.client.environmentInfo) ?? '/',
          // The server inherits the executor's environment, as a locally spawned one would inherit ours.
          env: launch.env,
          envPolicy: inheritAllEnv(launch.unsetEnv),
        },
        log: this.log,
        trace: (dir, msg) => {
          if (this.ctx.trace()) this.log.append('trace', `${dir === 'send' ? '→' : '←'} ${truncate(JSON.stringify(msg), 4000)}`);
        },
        reapOrphans: this.ctx.reapOrphans && executor.client.environmentInfo?.platformOs !== 'windows',
        graceMs: this.ctx.timings.graceMs,
        closeConfirmMs: this.ctx.timings.closeConfirmMs,
        clock,
      });
      run.transport = transport;
      void transport.closed.then(() => this.onTransportClosed(run));

      const sdk = new Client(this.ctx.clientInfo, {
        capabilities: {},
        listChanged: {
          tools: { autoRefresh: false, debounceMs: this.ctx.timings.listChangedDebounceMs, onChanged: () => this.onListChanged(run, 'tools') },
          resources: { autoRefresh: false, debounceMs: this.ctx.timings.listChangedDebounceMs, onChanged: () => this.onListChanged(run, 'resources') },
          prompts: { autoRefresh: false, debounceMs: this.ctx.timings.listChangedDebounceMs, onChanged: () => this.onListChanged(run, 'prompts') },
        },
      });
      run.sdk = sdk;
      sdk.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        const data = typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data);
        this.log.append('message', `[${n.params.level}${n.params.logger ? ` ${n.params.logger}` : ''}] ${data}`);
      });
      sdk.onerror = (e) => this.log.lifecycle(`protocol error: ${e.message}`);

      const request: RequestOptions = { signal: run.abort.signal, timeout: timeoutMs, maxTotalTimeout: timeoutMs };
      await sdk.connect(transport, request);
      this.capabilitiesValue = sdk.getServerCapabilities();
      this.serverInfoValue = sdk.getServerVersion();
      this.instructionsValue = sdk.getInstructions();
      const version = this.serverInfoValue ? `${this.serverInfoValue.name} ${this.serverInfoValue.version}` : 'unknown server';
      this.log.lifecycle(`initialized: ${version}, protocol ${transport.protocolVersion ?? '?'}, in ${clock.now() - t0} ms`);
      await this.loadLists(run, sdk, ['tools', 'resources', 'prompts'], request);
      clock.clearTimeout(timer);
      timer = undefined;
      this.throwIfStopped(run);
      this.readySince = clock.now();
      this.log.lifecycle(`ready in ${clock.now() - t0} ms: ${this.toolsValue.length} tools, ${this.resourcesValue.length} resources, ${this.promptsValue.length} prompts`);
      this.setState({ kind: 'ready', since: clock.now(), tools: this.toolsValue.length });
      run.settled.resolve();
    } catch (e) {
      if (timer !== undefined) clock.clearTimeout(timer);
      if (run.stopping || run.finalized) return; // the stop (or the process end) owns the final state
      if (run.timedOut) {
        const reason = `did not answer initialize and the list requests within ${formatMs(def.startupTimeoutMs)}`;
        await this.failRun(run, 'timedOut', reason);
        return;
      }
      const message = errorMessage(e);
      if (!run.transport) {
        // Nothing was spawned: the executor is unreachable or the launch could not be resolved.
        const unavailable = !run.executor;
        const waiting = unavailable && def.restart === 'onCrash';
        this.log.lifecycle(`could not start: ${message}`);
        this.finalize(run, { kind: unavailable ? 'crashed' : 'stopped', reason: unavailable ? `executor not available: ${message}` : message, waitingForExecutor: waiting });
        return;
      }
      const exit = run.transport.exit;
      if (exit && !exit.requested) return; // onTransportClosed reports it as a crash
      await this.failRun(run, 'crashed', `failed to start: ${message}`);
    }
  }

  private async failRun(run: Run, kind: 'timedOut' | 'crashed', reason: string): Promise<void> {
    if (run.stopping) return run.done.promise;
    run.stopping = { reason, final: 'stopped' };
    this.setState({ kind: 'stopping', since: this.ctx.clock.now(), reason });
    this.log.lifecycle(`${kind === 'timedOut' ? 'timed out' : 'start failed'}: ${reason}; stopping the process`);
    await this.closeRun(run);
    this.finalize(run, { kind, reason, exitCode: run.transport?.exit?.exitCode });
    return undefined;
  }

  private onTransportClosed(run: Run): void {
    if (run.finalized || run.stopping) return;
    const exit = run.transport?.exit;
    let reason: string;
    if (exit?.error && exit.exitCode === undefined) reason = `lost the server process: ${exit.error.message}`;
    else reason = `the server process exited on its own: ${describeExitCode(exit?.exitCode)}`;
    this.log.lifecycle(reason);
    const clientFailed = run.executor?.client.state.kind === 'failed';
    // Close the SDK side too (pending requests reject with "connection closed").
    void run.sdk?.close().catch(() => undefined);
    this.finalize(run, { kind: 'crashed', reason, exitCode: exit?.exitCode, waitingForExecutor: clientFailed });
  }

  private finalize(
    run: Run,
    end: { kind: 'stopped' | 'timedOut' | 'crashed'; reason: string; exitCode?: number | undefined; waitingForExecutor?: boolean },
  ): void {
    if (run.finalized) return;
    run.finalized = true;
    run.subscriptions.dispose();
    if (this.run === run) this.run = undefined;
    this.connectionValue = undefined;
    const now = this.ctx.clock.now();
    const stderrTail = this.log.stderrTail(20);
    const hadLists = this.allToolsValue.length + this.resourcesValue.length + this.resourceTemplatesValue.length + this.promptsValue.length > 0;
    this.allToolsValue = [];
    this.toolsValue = [];
    this.resourcesValue = [];
    this.resourceTemplatesValue = [];
    this.promptsValue = [];
    if (end.kind === 'stopped') {
      this.setState({ kind: 'stopped', since: now, reason: end.reason, stderrTail });
    } else if (end.kind === 'timedOut') {
      this.setState({ kind: 'timedOut', since: now, reason: end.reason, stderrTail, timeoutMs: this.runningDefinition?.startupTimeoutMs ?? 0 });
    } else {
      const state: Extract<McpServerState, { kind: 'crashed' }> = { kind: 'crashed', since: now, reason: end.reason, stderrTail };
      if (end.exitCode !== undefined) state.exitCode = end.exitCode;
      this.planRestart(state, end.waitingForExecutor === true);
      this.setState(state);
    }
    this.log.lifecycle(`${this.stateValue.kind}: ${end.reason}`);
    if (hadLists) this.changed.fire('lists');
    run.settled.resolve();
    run.done.resolve();
  }

  /** Fills `restartAt`/`waitingForExecutor` of a crashed state per the `restart` policy and schedules it. */
  private planRestart(state: Extract<McpServerState, { kind: 'crashed' }>, waitForExecutor: boolean): void {
    const def = this.entryValue.definition;
    if (this.disposed || !def || def.restart !== 'onCrash') return;
    const now = this.ctx.clock.now();
    if (this.readySince !== undefined && now - this.readySince >= this.ctx.timings.stableMs) this.restartAttempts = 0;
    this.readySince = undefined;
    if (waitForExecutor) {
      // Not counted as a try: the server did nothing wrong.
      state.waitingForExecutor = true;
      this.log.lifecycle('will restart when the executor is available again');
      return;
    }
    const delays = this.ctx.timings.restartDelaysMs;
    if (this.restartAttempts >= delays.length) {
      state.reason += ` — gave up after ${delays.length} automatic restarts`;
      return;
    }
    const delay = delays[this.restartAttempts] ?? 1000;
    this.restartAttempts++;
    state.restartAt = now + delay;
    this.log.lifecycle(`restarting in ${formatMs(delay)} (automatic restart ${this.restartAttempts} of ${delays.length})`);
    this.restartTimer = this.ctx.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.disposed && this.stateValue.kind === 'crashed') void this.start({ automatic: true }).catch(() => undefined);
    }, delay);
  }

  private cancelRestart(): void {
    if (this.restartTimer !== undefined) this.ctx.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
  }

  private async closeRun(run: Run): Promise<void> {
    if (run.sdk) await run.sdk.close().catch(() => undefined);
    if (run.transport) {
      await run.transport.close();
      await run.transport.closed;
    }
  }

  private throwIfStopped(run: Run): void {
    if (run.stopping || run.abort.signal.aborted) throw run.abort.signal.reason ?? new StopRequested('stopped');
  }

  private async resolve(def: McpServerDefinition, executor: McpExecutor): Promise<McpLaunch> {
    const info = executor.client.environmentInfo;
    const home = info?.userHomeDir ? pathFromUri(info.userHomeDir) : (this.ctx.env['HOME'] ?? '/');
    return resolveLaunch(def, this.ctx.inputs(), {
      userHome: home,
      pathSeparator: info?.platformOs === 'windows' ? '\\' : '/',
      env: this.ctx.env,
      resolveInput: (i) => this.ctx.resolveInput(i),
      readFile: async (p) => (await executor.client.readFile(p)).toString('utf8'),
    });
  }

  private readyClient(): Client {
    const run = this.run;
    if (!run?.sdk || this.stateValue.kind !== 'ready') throw new Error(`MCP server "${this.name}" is not ready (${this.describe()})`);
    return run.sdk;
  }

  private onListChanged(run: Run, kind: 'tools' | 'resources' | 'prompts'): void {
    if (this.run !== run || this.stateValue.kind !== 'ready') return;
    this.log.lifecycle(`${kind} list changed; refreshing`);
    this.refresh([kind]).catch((e: unknown) => this.log.lifecycle(`refreshing ${kind} failed: ${errorMessage(e)}`));
  }

  private async loadLists(run: Run, sdk: Client, kinds: readonly ('tools' | 'resources' | 'prompts')[], request: RequestOptions): Promise<void> {
    const caps = sdk.getServerCapabilities() ?? {};
    const jobs: Promise<void>[] = [];
    if (kinds.includes('tools') && caps.tools) {
      jobs.push(
        paginate((cursor) => sdk.listTools(cursor ? { cursor } : {}, request), (r) => r.tools).then((tools) => {
          if (this.run !== run) return;
          this.allToolsValue = tools;
          this.applyToolFilter();
        }),
      );
    }
    if (kinds.includes('resources') && caps.resources) {
      jobs.push(
        paginate((cursor) => sdk.listResources(cursor ? { cursor } : {}, request), (r) => r.resources).then((v) => {
          if (this.run === run) this.resourcesValue = v;
        }),
      );
      jobs.push(
        paginate((cursor) => sdk.listResourceTemplates(cursor ? { cursor } : {}, request), (r) => r.resourceTemplates).then((v) => {
          if (this.run === run) this.resourceTemplatesValue = v;
        }),
      );
    }
    if (kinds.includes('prompts') && caps.prompts) {
      jobs.push(
        paginate((cursor) => sdk.listPrompts(cursor ? { cursor } : {}, request), (r) => r.prompts).then((v) => {
          if (this.run === run) this.promptsValue = v;
        }),
      );
    }
    await Promise.all(jobs);
  }

  private applyToolFilter(): void {
    const def = this.entryValue.definition;
    this.toolsValue = def ? this.allToolsValue.filter((t) => isToolEnabled(def, t.name)) : [...this.allToolsValue];
    if (this.stateValue.kind === 'ready' && this.stateValue.tools !== this.toolsValue.length) {
      this.setState({ ...this.stateValue, tools: this.toolsValue.length });
    }
  }

  private setState(next: McpServerState): void {
    const prev = this.stateValue;
    if (prev.kind !== next.kind && !canTransition(prev.kind, next.kind)) {
      // A bug, but never one that may wedge a server: record it and go on.
      this.log.lifecycle(`internal: unexpected transition ${prev.kind} → ${next.kind}`);
    }
    this.stateValue = next;
    if (isFinal(next.kind) || next.kind !== prev.kind || next.kind === 'ready') this.changed.fire('state');
  }
}

/** Loops `nextCursor` (bounded: a server that returns cursors forever must not hang us). */
async function paginate<R extends { nextCursor?: string | undefined }, T>(fetch: (cursor: string | undefined) => Promise<R>, items: (r: R) => T[]): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const r = await fetch(cursor);
    out.push(...items(r));
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s;
}
