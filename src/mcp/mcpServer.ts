import type { Client } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Emitter, errorMessage, type Event } from '../util';
import { formatDiagnostic, needsExecutor, type McpServerDefinition, type McpServerEntry } from './config';
import type { SandboxBlock } from './serverSandbox';
import type { McpExecutor } from './executorHost';
import { isSignInRequired, McpAuthSession, type RemoteVia } from './authSession';
import { REMOTE_HOST, remoteVia, resolveLaunchOn, resolveRemoteOf, type ServerNotice } from './mcpSession';
import { RestartSchedule } from './restartSchedule';
import { connectRun, describeClose, endState, type RunEnd } from './serverConnect';
import type { McpServerChange, McpServerContext } from './serverContext';
import { ALL_LISTS, type ListKind } from './serverLists';
import { ServerLog } from './serverLog';
import { closeRun, newRun, StopRequested, throwIfStopped, type Run } from './serverRun';
import { canTransition, formatMs, isFinal, type McpServerState } from './serverState';
import { McpServerRequests } from './serverRequests';
import { SandboxBlockWatch } from './sandboxBlockWatch';
import { StartDeadline } from './startDeadline';

/**
 * One configured MCP server: its state machine, its process (through the exec client), its SDK
 * client, its lists and its log. The manager owns it; the tree model reads it (./serverView.ts);
 * what a ready server is asked is in ./serverRequests.ts.
 */
export class McpServer extends McpServerRequests {
  readonly log = new ServerLog();
  /** Sign-in for a remote (http/sse) server: status, "Sign in…", "Sign out" (./authSession.ts). */
  readonly auth: McpAuthSession;
  private readonly restarts: RestartSchedule;
  private disposed = false;

  private readonly changed = new Emitter<McpServerChange>();
  readonly onDidChange: Event<McpServerChange> = this.changed.event;
  private readonly noticed = new Emitter<ServerNotice>();
  /** The server's log messages and resource updates (the gateway forwards them to VS Code's client). */
  readonly onNotification: Event<ServerNotice> = this.noticed.event;
  private readonly blockedEmitter = new Emitter<SandboxBlock>();
  /** The executor's sandbox blocked something new (a host, a path) during this run: the UI offers to allow it. */
  readonly onDidBlock: Event<SandboxBlock> = this.blockedEmitter.event;
  /** Notices what the sandbox blocked (./sandboxBlockWatch.ts); `recordBlock` keeps it. */
  private readonly blockWatch = new SandboxBlockWatch(this.log, (b) => this.recordBlock(b));

  constructor(entry: McpServerEntry, ctx: McpServerContext) {
    super(entry, ctx);
    this.restarts = new RestartSchedule(ctx.clock, ctx.timings, this.log);
    this.auth = new McpAuthSession(entry.name, ctx.auth, (line) => this.log.lifecycle(line), 'Exec Bridge');
    this.auth.onDidChange(() => this.changed.fire('meta'));
    for (const e of entry.errors) this.log.lifecycle(`configuration error: ${formatDiagnostic(e)}`);
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
    if (entry.definition && this.lists.allTools.length > 0) this.applyToolFilter();
    // A policy change must not leave a restart scheduled that the new policy forbids.
    if (
      entry.definition?.restart !== 'onCrash' &&
      this.stateValue.kind === 'crashed' &&
      (this.stateValue.restartAt !== undefined || this.stateValue.waitingForExecutor)
    ) {
      this.restarts.cancel();
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
      throw new Error(
        first ? `cannot start "${this.name}": ${formatDiagnostic(first)}` : `cannot start "${this.name}": invalid configuration`,
      );
    }
    if (this.run) {
      if (!this.run.stopping) return this.run.settled.promise;
      // Restart: let the stop finish first.
      await this.run.done.promise;
      if (this.run) return this.run.settled.promise;
    }
    const attempt = this.restarts.beginStart(options.automatic === true);
    const run = newRun();
    this.run = run;
    this.runningDefinition = def;
    this.setState({ kind: 'starting', since: this.ctx.clock.now(), attempt });
    await this.runStart(run, def);
    return run.settled.promise;
  }

  /** Stops the server (interrupt, grace, terminate) and resolves in a final state. No-op when not running. */
  async stop(reason = 'stopped by the user', options: { final?: 'stopped' | 'crashed' } = {}): Promise<void> {
    const run = this.run;
    if (!run) {
      // A scheduled restart is a pending start: cancel it.
      if (this.stateValue.kind === 'crashed' && (this.stateValue.restartAt !== undefined || this.stateValue.waitingForExecutor)) {
        this.restarts.cancel();
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
    await closeRun(run);
    const exit = run.transport.exit;
    const unconfirmed =
      exit?.error && exit.exitCode === undefined
        ? ` (the executor did not confirm the end: ${exit.error.message}; it ends the process when the session expires)`
        : '';
    const clientFailed = run.executor?.client.state.kind === 'failed';
    this.finalize(run, {
      kind: run.stopping.final,
      reason: reason + unconfirmed,
      exitCode: exit?.exitCode,
      waitingForExecutor: clientFailed,
    });
  }

  async restart(): Promise<void> {
    await this.stop('restarting');
    await this.start();
  }

  /**
   * Signs in to this remote server (the browser, or client credentials without one) and starts it
   * unless it runs; a running one uses the new tokens from its next request (a step-up).
   */
  async signIn(signal: AbortSignal = new AbortController().signal): Promise<void> {
    const def = this.remoteDefinition();
    const { url, oauth } = await resolveRemoteOf(def, this.ctx);
    await this.auth.signIn(new URL(url), oauth, signal, await this.viaOf(def));
    if (!this.run) await this.start();
  }

  /** Deletes the stored sign-in and stops the server if it runs (its session was signed in). */
  async signOut(): Promise<void> {
    const def = this.remoteDefinition();
    const { url, oauth } = await resolveRemoteOf(def, this.ctx);
    // Through an executor that is out of reach the sign-in is still deleted; the revocation then fails, and says why.
    const via = await this.viaOf(def).catch((e: unknown) => ({
      fetch: () => Promise.reject(new Error(`executor not available: ${errorMessage(e)}`)),
      executorId: this.ctx.host.resolveId(def.executor) ?? '',
    }));
    await this.auth.bind(new URL(url), oauth, via);
    // The running session ends first: the revocation after it may take its bound (10 s) on a silent server.
    if (this.run) await this.stop('signed out');
    await this.auth.signOut();
  }

  /** How a remote server's requests are made: through its executor (`"connectFrom": "executor"`), else undefined (from here). */
  private async viaOf(def: McpServerDefinition): Promise<RemoteVia | undefined> {
    return needsExecutor(def) ? remoteVia(await this.ctx.host.acquire(def.executor)) : undefined;
  }

  private remoteDefinition(): McpServerDefinition {
    const def = this.entryValue.definition;
    if (!def?.remote) throw new Error(`MCP server "${this.name}" is not a remote (http or sse) server: nothing to sign in to`);
    return def;
  }

  protected override onToolResult(result: CallToolResult): void {
    if (this.sandbox) this.blockWatch.scanToolResult(result);
  }

  /** Records a block once per run (the tree lists it; `onDidBlock` lets the UI offer to allow it). */
  private recordBlock(b: SandboxBlock): void {
    const key = b.kind === 'host' ? `host:${b.target}` : `path:${b.path}`;
    if (this.blocksValue.some((x) => (x.kind === 'host' ? `host:${x.target}` : `path:${x.path}`) === key)) return;
    this.blocksValue = [...this.blocksValue, b].slice(-20);
    this.log.lifecycle(
      b.kind === 'host' ? `the sandbox blocked ${b.target}: ${b.reason}` : `the sandbox blocked writing ${b.path}: ${b.evidence}`,
    );
    this.changed.fire('meta');
    this.blockedEmitter.fire(b);
  }

  /** Re-reads tools/resources/prompts (also what list_changed does). */
  async refresh(kinds: readonly ListKind[] = ALL_LISTS): Promise<void> {
    const run = this.run;
    if (!run?.sdk || this.stateValue.kind !== 'ready') return;
    await this.loadLists(run, run.sdk, kinds, {});
    if (this.stateValue.kind === 'ready' && this.stateValue.tools !== this.lists.tools.length) {
      this.setState({ ...this.stateValue, tools: this.lists.tools.length });
    }
    this.changed.fire('lists');
  }

  /** Stops (if running) and releases everything; the server cannot be started again. */
  async dispose(reason = 'removed'): Promise<void> {
    this.restarts.cancel();
    await this.stop(reason);
    this.disposed = true;
    this.restarts.cancel();
    this.changed.dispose();
    this.noticed.dispose();
    this.blockedEmitter.dispose();
    this.auth.dispose();
    this.log.dispose();
  }

  /**
   * Last resort when there is no time for a graceful stop (the extension host is going away):
   * sends `process/terminate` now, without waiting for anything.
   */
  terminateNow(): void {
    this.restarts.cancel();
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
    let deadline: StartDeadline | undefined;
    try {
      // A remote (http/sse) server needs no executor unless its requests go through one ("connectFrom").
      const executor = needsExecutor(def) ? await this.ctx.host.acquire(def.executor) : undefined;
      run.executor = executor;
      this.executorValue = executor ? { id: executor.id, label: executor.label } : REMOTE_HOST;
      throwIfStopped(run);
      const launch = executor && !def.remote ? await resolveLaunchOn(def, executor, this.ctx) : undefined;
      throwIfStopped(run);
      if (executor) this.watchConnection(run, executor);
      this.blocksValue = [];
      if (launch?.sandbox) this.blockWatch.watchRun(run, def, launch.sandbox, launch.cwd, () => this.run === run);

      const t0 = clock.now();
      deadline = new StartDeadline(run, clock, def.startupTimeoutMs);
      const { request } = deadline;
      const sdk = await connectRun(run, def, executor ? { executor, ...(launch ? { launch } : {}) } : undefined, request, t0, {
        ctx: this.ctx,
        log: this.log,
        onListChanged: (kind) => this.onListChanged(run, kind),
        onClosed: () => this.onTransportClosed(run),
        auth: this.auth,
        onInitialized: (client) => {
          this.capabilitiesValue = client.getServerCapabilities();
          this.serverInfoValue = client.getServerVersion();
          this.instructionsValue = client.getInstructions();
          this.protocolVersionValue = client.getNegotiatedProtocolVersion();
        },
        session: {
          onNotification: (n) => {
            if (this.run === run) this.noticed.fire(n);
          },
          origin: () => this.requestOrigin(),
          onBlocked: (b) => {
            if (this.run === run) this.blockWatch.hostRefused(b.target, b.reason);
          },
        },
      });
      await this.loadLists(run, sdk, ALL_LISTS, request);
      deadline.met();
      throwIfStopped(run);
      this.restarts.markReady(clock.now());
      this.log.lifecycle(
        `ready in ${clock.now() - t0} ms: ${this.lists.tools.length} tools, ${this.lists.resources.length} resources, ${this.lists.prompts.length} prompts`,
      );
      this.setState({ kind: 'ready', since: clock.now(), tools: this.lists.tools.length });
      run.settled.resolve();
    } catch (e) {
      deadline?.clear();
      await this.onStartFailed(run, def, e);
    }
  }

  /** Follows the exec connection for the tree and the log; a failed one ends the run through the one stop path. */
  private watchConnection(run: Run, executor: McpExecutor): void {
    this.connectionValue = executor.client.state.kind;
    run.subscriptions.add(
      executor.client.onDidChangeState((s) => {
        if (this.run !== run) return;
        // The client says `recovering` once per attempt: report (and redraw) each change of state once.
        const was = this.connectionValue;
        this.connectionValue = s.kind;
        if (was === s.kind) return;
        const kept = this.runningDefinition?.remote ? 'requests in flight through it fail' : 'the process keeps running';
        if (s.kind === 'recovering') this.log.lifecycle(`exec connection lost (${s.cause}); ${kept}, reconnecting…`);
        else if (s.kind === 'connected') this.log.lifecycle('exec connection recovered; the MCP session continues');
        this.changed.fire('meta');
        // The client failed for good: its processes are out of reach. Drain through the one stop path.
        if (s.kind === 'failed')
          void this.stop(`the connection to executor "${executor.label}" failed: ${s.error.message}`, { final: 'crashed' });
      }),
    );
  }

  /** A start that did not reach ready: says why, in the final state that fits. */
  private async onStartFailed(run: Run, def: McpServerDefinition, e: unknown): Promise<void> {
    if (run.stopping || run.finalized) return; // the stop (or the process end) owns the final state
    if (run.timedOut) {
      const reason = `did not answer initialize and the list requests within ${formatMs(def.startupTimeoutMs)}`;
      await this.failRun(run, 'timedOut', reason);
      return;
    }
    const message = errorMessage(e);
    if (!run.transport) {
      // Nothing was spawned: the executor is unreachable or the launch could not be resolved.
      const unavailable = !run.executor && needsExecutor(def);
      const waiting = unavailable && def.restart === 'onCrash';
      this.log.lifecycle(`could not start: ${message}`);
      this.finalize(run, {
        kind: unavailable ? 'crashed' : 'stopped',
        reason: unavailable ? `executor not available: ${message}` : message,
        waitingForExecutor: waiting,
      });
      return;
    }
    const exit = run.transport.exit;
    if (exit && !exit.requested) return; // onTransportClosed reports it as a crash
    // Waiting for the user to sign in is no crash (and no reason to restart on its own).
    if (isSignInRequired(e)) await this.failRun(run, 'stopped', message);
    else await this.failRun(run, 'crashed', `failed to start: ${message}`);
  }

  private async failRun(run: Run, kind: 'timedOut' | 'crashed' | 'stopped', reason: string): Promise<void> {
    if (run.stopping) return run.done.promise;
    run.stopping = { reason, final: 'stopped' };
    this.setState({ kind: 'stopping', since: this.ctx.clock.now(), reason });
    this.log.lifecycle(`${kind === 'timedOut' ? 'timed out' : kind === 'stopped' ? 'not started' : 'start failed'}: ${reason}; stopping`);
    await closeRun(run);
    this.finalize(run, { kind, reason, exitCode: run.transport?.exit?.exitCode });
    return undefined;
  }

  private onTransportClosed(run: Run): void {
    if (run.finalized || run.stopping) return;
    const exit = run.transport?.exit;
    const reason = describeClose(run);
    this.log.lifecycle(reason);
    const clientFailed = run.executor?.client.state.kind === 'failed';
    // Close the SDK side too (pending requests reject with "connection closed").
    void run.sdk?.close().catch(() => undefined);
    // A remote server that refused us before we signed in (the SDK closes on a failed initialize): no crash.
    const kind = isSignInRequired(exit?.error) ? 'stopped' : 'crashed';
    this.finalize(run, { kind, reason, exitCode: exit?.exitCode, waitingForExecutor: clientFailed });
  }

  private finalize(run: Run, end: RunEnd): void {
    if (run.finalized) return;
    run.finalized = true;
    run.subscriptions.dispose();
    this.forgetSubscriptions();
    if (this.run === run) this.run = undefined;
    this.connectionValue = undefined;
    const now = this.ctx.clock.now();
    const stderrTail = this.log.stderrTail(20);
    const hadLists = this.lists.clear();
    const state = endState(end, now, stderrTail, this.runningDefinition?.startupTimeoutMs ?? 0);
    if (state.kind === 'crashed') this.planRestart(state, end.waitingForExecutor === true);
    this.setState(state);
    this.log.lifecycle(`${this.stateValue.kind}: ${end.reason}`);
    if (hadLists) this.changed.fire('lists');
    run.settled.resolve();
    run.done.resolve();
  }

  /** Fills `restartAt`/`waitingForExecutor` of a crashed state per the `restart` policy and schedules it. */
  private planRestart(state: Extract<McpServerState, { kind: 'crashed' }>, waitForExecutor: boolean): void {
    const def = this.entryValue.definition;
    if (this.disposed || !def || def.restart !== 'onCrash') return;
    this.restarts.plan(state, waitForExecutor, () => {
      if (!this.disposed && this.stateValue.kind === 'crashed') void this.start({ automatic: true }).catch(() => undefined);
    });
  }

  private onListChanged(run: Run, kind: ListKind): void {
    if (this.run !== run || this.stateValue.kind !== 'ready') return;
    this.log.lifecycle(`${kind} list changed; refreshing`);
    this.refresh([kind]).catch((e: unknown) => this.log.lifecycle(`refreshing ${kind} failed: ${errorMessage(e)}`));
  }

  private async loadLists(run: Run, sdk: Client, kinds: readonly ListKind[], request: RequestOptions): Promise<void> {
    await this.lists.load(
      sdk,
      kinds,
      request,
      () => this.run === run,
      () => this.applyToolFilter(),
    );
  }

  private applyToolFilter(): void {
    this.lists.applyToolFilter(this.entryValue.definition);
    if (this.stateValue.kind === 'ready' && this.stateValue.tools !== this.lists.tools.length) {
      this.setState({ ...this.stateValue, tools: this.lists.tools.length });
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
