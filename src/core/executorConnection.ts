import { ExecServerClient, SessionExpiredError, defaultExecutorDir, sshConnector } from '../client';
import type { AskpassRequest, RemoteInfo, SshConnector, SshProgress, ClientOptions, ConnectionState } from '../client';
import { DisposableStore, Emitter, errorMessage, type Event } from '../util';
import { bundledConnector, bundledExitText, resumeOnOlderDaemon } from './bundledConnector';
import type { BundledServer } from './bundledServer';
import { describeExecutor, type ExecutorConfig } from './executorConfig';
import { describeEndpoint, executorEndpoint } from './executorEndpoint';
import { RememberedResume } from './rememberedResume';
import type { RememberedProcess, SessionMemory, TerminalInfo } from './sessionMemory';
import { settleLeftovers } from './sessionResume';

// Moved to bundledConnector.ts; importers of this file keep these names.
export { bundledExitText, RECONNECT_TO_RESTART } from './bundledConnector';

/** A first SSH connect may upload the bundle (about 1.4 MB) on a slow link. */
const SSH_ATTEMPT_MS = 60_000;

/** The executor as the UI shows it: the client's own states plus the time before there is a client. */
export type ExecutorState =
  | { kind: 'idle' }
  | { kind: 'connecting' }
  | { kind: 'connected'; sessionId: string }
  /** `until`: when recovery gives up (the session's TTL on the executor); undefined: never while it may exist. */
  | { kind: 'recovering'; since: number; attempt: number; cause: string; until?: number }
  | { kind: 'failed'; message: string };

export interface ExecutorConnectionDeps {
  /** Needed for the `bundled` executor. */
  bundled?: BundledServer;
  /** The token for a WebSocket executor's `tokenSecret` (from SecretStorage); undefined = none. */
  getToken(secretName: string): Promise<string | undefined>;
  /**
   * Whether this is the executor the user works with now. An executor that is not, and runs nothing
   * through its client, stops resuming a lost connection (idle: it connects again when next used).
   */
  isActive?(): boolean;
  /** The bundle an SSH executor installs on its host (`dist/cli.js`; node-pty beside it). */
  sshBundle?: { cliPath: string; nodePtyDir?: string | null };
  /**
   * What the user does to start the bundled daemon again once it died, said after "… is gone, and
   * what ran on it ended with it." (default: the extension's Reconnect; `exec-bridge mcp` says its own).
   */
  bundledRestartHint?: string;
  /** An SSH executor's steps (connecting, installing, starting), for a progress notification. */
  onSshProgress?(executor: string, progress: SshProgress): void;
  /** Where an SSH executor's password and passphrase prompts go (an input box); none: ssh's BatchMode. */
  sshAskpass?: (executor: string, request: AskpassRequest, signal: AbortSignal) => Promise<string | undefined>;
  /** Where the session ids and their processes are remembered (a window reload resumes them). */
  memory?: SessionMemory;
  /**
   * How long this executor should keep the window's session (its commands, shells, MCP servers)
   * once the connection drops: asked in `initialize` (setting execBridge.sessionTtlSeconds).
   */
  sessionTtlMs?(): number;
  /** Client tuning (deadline, keepalive); tests shorten them. */
  clientOptions?: Partial<Omit<ClientOptions, 'endpoint' | 'connector' | 'log'>>;
  log?(line: string): void;
}

/**
 * One executor and its (at most one) client. `connect()` is idempotent while connected or
 * connecting; after a failure it builds a new client (for `bundled`, restarting the server first
 * if it died). Everything bound to a client lives in `scope`, which is dropped with that client.
 */
export class ExecutorConnection {
  private clientValue: ExecServerClient | undefined;
  private connecting: Promise<ExecServerClient> | undefined;
  private stateValue: ExecutorState = { kind: 'idle' };
  private readonly stateEmitter = new Emitter<ExecutorState>();
  private readonly clientStateEmitter = new Emitter<ConnectionState>();
  /** Per-connection disposables (client listeners); replaced for each new client. */
  private scope = new DisposableStore();
  private disposed = false;
  private ssh: SshConnector | undefined;
  /** Why the current client is being failed on purpose (clearer than the client's own words). */
  private failureReason: string | undefined;
  /** Another window took this executor's session over (reason `takenOver`): no resume, no memory, until `reconnect`. */
  private takenOver = false;
  /** A remembered session waiting out its back-off (`resumeRemembered`): try now, or give up. */
  private resuming: RememberedResume | undefined;
  readonly onDidChangeState: Event<ExecutorState> = this.stateEmitter.event;
  /** The current client's raw state changes (for terminals' recovery lines). */
  readonly onClientState: Event<ConnectionState> = this.clientStateEmitter.event;
  private readonly restoredEmitter = new Emitter<RestoredSession>();
  /**
   * A connect found a remembered session (a window reload): resumed, with the terminals to reopen,
   * or expired. Fires after the client is in place, before `connect()` resolves.
   */
  readonly onDidRestore: Event<RestoredSession> = this.restoredEmitter.event;

  constructor(
    readonly config: ExecutorConfig,
    private readonly deps: ExecutorConnectionDeps,
  ) {}

  get name(): string {
    return this.config.name;
  }
  get state(): ExecutorState {
    return this.stateValue;
  }
  /** The live client, if any (it may be recovering). */
  get client(): ExecServerClient | undefined {
    return this.clientValue;
  }

  /** Connects (or returns the current client); rejects with a message fit for the user. */
  connect(): Promise<ExecServerClient> {
    if (this.disposed) return Promise.reject(new Error('Exec Bridge is shutting down'));
    if (this.clientValue && this.clientValue.state.kind !== 'failed') {
      // Asked for while offline: the network may be back, so do not wait out the back-off.
      this.clientValue.retryNow();
      return Promise.resolve(this.clientValue);
    }
    // Used while a remembered session waits out its back-off: try again now.
    this.resuming?.wake();
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Recovering: try to resume now rather than after the back-off (window focus, the network came back). */
  retryNow(): boolean {
    if (this.resuming) {
      this.resuming.wake();
      return true;
    }
    return this.clientValue?.retryNow() ?? false;
  }

  /** How long the executor keeps this window's session once detached (undefined: it did not say, e.g. codex). */
  get sessionTtlMs(): number | undefined {
    return this.clientValue?.sessionTtlMs;
  }

  /** Drops the current client (processes keep running on the executor until the TTL) and connects to a new session. */
  async reconnect(): Promise<ExecServerClient> {
    // A remembered session still being resumed is given up: Reconnect means a new session.
    this.resuming?.abort();
    await this.connecting?.catch(() => undefined);
    this.takenOver = false;
    // A new session goes to this version's daemon (an older one, kept after an update, retires once idle).
    if (this.config.kind === 'bundled') this.deps.bundled?.useOwnVersion();
    this.deps.memory?.forget(this.name);
    this.dropClient(
      `${this.name} was reconnected; what ran through the old connection may still be running on the executor, but this terminal no longer follows it`,
    );
    return this.connect();
  }

  /**
   * Where commands run: the configured cwd (for `bundled`, the workspace folder), else the
   * executor user's home, else the server's own cwd. Home comes before the server's cwd because
   * that is often `/`, which would make a workspace-write sandbox meaningless.
   */
  defaultCwd(): string {
    if (this.config.cwd) return this.config.cwd;
    return defaultExecutorDir(this.clientValue?.environmentInfo) ?? '/';
  }

  /** The executor's login shell (from `initialize`), else /bin/sh. */
  shellPath(): string {
    return this.clientValue?.environmentInfo?.shell.path || '/bin/sh';
  }

  private setState(state: ExecutorState): void {
    this.stateValue = state;
    this.stateEmitter.fire(state);
  }

  /** The settings this executor's remembered session must have been made with. */
  private get configKey(): string {
    return JSON.stringify(this.config);
  }

  /** A stdio executor that is not our relay starts a new server per connection: nothing to resume. */
  private get resumable(): boolean {
    return (
      this.config.kind !== 'stdio' ||
      (/(^|\/)exec-bridge$/.test(this.config.command.at(-2) ?? '') && this.config.command.at(-1) === 'connect')
    );
  }

  private async open(): Promise<ExecServerClient> {
    const { log } = this.deps;
    this.dropClient(`${this.name} was reconnected`);
    this.setState({ kind: 'connecting' });
    try {
      const target =
        this.config.kind === 'ssh'
          ? { connector: this.sshConnector(this.config), attemptTimeoutMs: SSH_ATTEMPT_MS }
          : this.config.kind === 'bundled'
            ? { connector: await bundledConnector(this.deps.bundled) }
            : undefined;
      const endpoint = target ? undefined : await executorEndpoint(this.config, (name) => this.deps.getToken(name));
      log?.(`${this.name}: connecting (${endpoint ? describeEndpoint(endpoint) : describeExecutor(this.config)})`);
      // Taken over by another window: neither resume (that would take the session back) nor write the
      // workspace's memory (it is that window's now) until the user reconnects here.
      const memory = this.resumable && !this.takenOver ? this.deps.memory : undefined;
      const ttl = this.deps.sessionTtlMs?.();
      const options: ClientOptions = {
        clientName: 'exec-bridge-vscode',
        ...(ttl !== undefined ? { sessionTtlMs: ttl } : {}),
        // A reopened terminal (a reload, a long outage) replays its whole output from the spool.
        outputSpool: true,
        ...this.deps.clientOptions,
        ...(endpoint ? { endpoint } : target),
        onProcessTracking: (e) => {
          if (e.tracked) memory?.tracked(this.name, e);
          else memory?.untracked(this.name, e.processId);
        },
        log: (line) => log?.(`${this.name}: ${line}`),
      };
      const remembered = memory?.recall(this.name, this.configKey);
      let client: ExecServerClient;
      let expired: string | undefined;
      try {
        // A remembered session is this workspace's: a lingering extension host of its previous window
        // (code-server keeps one for a while after a reload) must not keep it from us.
        client = remembered
          ? await this.resumeRemembered(options, remembered.sessionId, remembered.offlineSince)
          : await ExecServerClient.connect(options);
      } catch (e) {
        if (!(e instanceof SessionExpiredError)) throw e;
        // After an extension update the session may live on in the older version's daemon.
        const older =
          remembered && this.config.kind === 'bundled'
            ? await resumeOnOlderDaemon(this.deps.bundled, options, remembered.sessionId, (line) => log?.(`${this.name}: ${line}`))
            : undefined;
        if (older) client = older;
        else {
          expired = e.message;
          log?.(`${this.name}: ${e.message}; starting a new session`);
          client = await ExecServerClient.connect(options);
        }
      }
      if (this.disposed) {
        client.dispose();
        throw new Error('Exec Bridge is shutting down');
      }
      memory?.session(this.name, this.configKey, client.sessionId);
      let terminals: RememberedProcess[] = [];
      if (remembered && !expired) {
        log?.(`${this.name}: resumed session ${client.sessionId} (${remembered.processes.length} process(es) remembered)`);
        terminals = await settleLeftovers(client, remembered.processes, (line) => log?.(`${this.name}: ${line}`));
        for (const p of remembered.processes) if (!terminals.includes(p)) memory?.untracked(this.name, p.processId);
      }
      this.adopt(client);
      if (remembered && (expired || terminals.length > 0)) {
        this.restoredEmitter.fire({
          client,
          terminals,
          ...(expired ? { expired, lostTerminals: remembered.processes.filter((p) => p.terminal).length } : {}),
        });
      }
      return client;
    } catch (e) {
      const message = errorMessage(e);
      log?.(`${this.name}: connect failed: ${message}`);
      this.setState({ kind: 'failed', message });
      throw new Error(message, { cause: e });
    }
  }

  private adopt(client: ExecServerClient): void {
    this.scope.dispose();
    this.scope = new DisposableStore();
    this.clientValue = client;
    this.failureReason = undefined;
    const onState = (s: ConnectionState) => {
      if (this.clientValue !== client) return;
      this.clientStateEmitter.fire(s);
      switch (s.kind) {
        case 'connected':
          this.rememberOffline(undefined);
          this.setState({ kind: 'connected', sessionId: s.sessionId });
          break;
        case 'recovering':
          if (this.deps.isActive?.() === false && client.trackedProcessCount === 0) {
            // Nobody uses it: no retries every few hundred ms for the next 25 s, no log lines.
            this.deps.log?.(`${this.name}: connection lost (${s.cause}); not in use, so not resuming (it connects again when needed)`);
            queueMicrotask(() => {
              if (this.clientValue === client) this.dropClient(`${this.name} is not in use; it connects again when needed`);
            });
            break;
          }
          this.rememberOffline(s.since);
          this.setState({ kind: 'recovering', since: s.since, attempt: s.attempt, cause: s.cause, until: s.until });
          break;
        case 'failed':
          if (s.error.reason === 'takenOver') this.takenOver = true;
          this.setState({ kind: 'failed', message: this.failureReason ?? s.error.message });
          // Per-connection things end with the client.
          this.scope.dispose();
          break;
      }
    };
    this.scope.add(client.onDidChangeState(onState));
    const bundled = this.config.kind === 'bundled' ? this.deps.bundled : undefined;
    if (bundled) {
      // If the daemon dies, its sessions die with it: fail fast instead of retrying a dead socket.
      this.scope.add(
        client.onDidChangeState((s) => {
          if (s.kind === 'recovering') bundled.checkAlive();
        }),
      );
      this.scope.add(
        bundled.onDidExit(({ pid }) => {
          if (this.clientValue === client && client.state.kind !== 'failed') {
            this.deps.memory?.forget(this.name);
            this.failureReason = bundledExitText(pid, this.deps.bundledRestartHint);
            this.deps.log?.(`${this.name}: ${this.failureReason}`);
            client.dispose(this.failureReason);
          }
        }),
      );
    }
    const st = client.state;
    if (st.kind === 'connected') this.setState({ kind: 'connected', sessionId: st.sessionId });
    else onState(st);
    this.deps.log?.(`${this.name}: connected, session ${client.sessionId}`);
  }

  /** Since when this window's executor is unreachable, kept with its remembered session (a reload goes on from it). */
  private rememberOffline(since: number | undefined): void {
    if (this.resumable && !this.takenOver) this.deps.memory?.offline(this.name, since);
  }

  /**
   * Resumes the remembered session (a window reload). An executor that cannot be reached — the
   * reload came during an outage — is tried again, with the client's back-off and state
   * `recovering` ("offline since …, retrying"), for as long as it may keep the session (this
   * window's TTL from when it became unreachable, `offlineSince` if the previous window was already
   * recovering, else now; plus a minute as the client allows), rather than failing at once and
   * leaving the terminals closed until something uses the executor. `retryNow`, `connect` and
   * `reconnect` (which gives it up) act on the wait. The bundled daemon is local: no wait there.
   */
  private async resumeRemembered(options: ClientOptions, sessionId: string, offlineSince?: number): Promise<ExecServerClient> {
    const resume: ClientOptions = { ...options, resumeSessionId: sessionId, takeOverSession: true };
    const ttl = this.deps.sessionTtlMs?.();
    if (this.config.kind === 'bundled' || ttl === undefined) return ExecServerClient.connect(resume);
    // Never later than now (a clock that went back).
    const since = Math.min(Date.now(), offlineSince ?? Date.now());
    // Set for the whole wait, so that a reconnect() during an attempt gives up after it too.
    const wait = new RememberedResume({
      name: this.name,
      options: resume,
      sessionId,
      since,
      until: since + ttl + 60_000,
      isDisposed: () => this.disposed,
      onRetry: (state) => this.setState(state),
      log: this.deps.log,
    });
    this.resuming = wait;
    try {
      return await wait.run();
    } finally {
      if (this.resuming === wait) this.resuming = undefined;
    }
  }

  /** Whether a session with processes is remembered for this executor (a reload to resume). */
  get hasRememberedProcesses(): boolean {
    return this.resumable && (this.deps.memory?.recall(this.name, this.configKey)?.processes.length ?? 0) > 0;
  }

  /** Mark `processId` as shown in a terminal: a window reload reopens it. */
  rememberTerminal(processId: string, info: TerminalInfo): void {
    if (this.resumable) this.deps.memory?.describe(this.name, processId, info);
  }

  /** A model read `processId`'s output up to event `seq`: after a reload its reads go on from there. */
  rememberAgentRead(processId: string, seq: number): void {
    if (this.resumable) this.deps.memory?.agentRead(this.name, processId, seq);
  }

  /** What the SSH executor's last connection found on its host (platform, Node, server version). */
  get remote(): RemoteInfo | undefined {
    return this.ssh?.remote;
  }

  private sshConnector(c: Extract<ExecutorConfig, { kind: 'ssh' }>): SshConnector {
    const bundle = this.deps.sshBundle;
    if (!bundle) throw new Error('SSH executors need the exec-server bundle (dist/cli.js), which this build does not have');
    this.ssh = sshConnector({
      target: c.ssh,
      sshOptions: c.sshOptions,
      cliPath: bundle.cliPath,
      ...(bundle.nodePtyDir !== undefined ? { nodePtyDir: bundle.nodePtyDir } : {}),
      log: (line) => this.deps.log?.(`${this.name}: ${line}`),
      progress: (p) => this.deps.onSshProgress?.(this.name, p),
      ...(this.deps.sshAskpass ? { askpass: (r, signal) => this.deps.sshAskpass!(this.name, r, signal) } : {}),
    });
    return this.ssh;
  }

  /** `reason`: the words in-flight work ends with. */
  private dropClient(reason: string): void {
    const client = this.clientValue;
    this.clientValue = undefined;
    this.scope.dispose();
    this.scope = new DisposableStore();
    if (client) {
      client.dispose(reason);
      if (!this.disposed) this.setState({ kind: 'idle' });
    }
  }

  /** `reason`: why (default: shutting down), for what still runs through it. */
  dispose(reason = 'Exec Bridge is shutting down'): void {
    if (this.disposed) return;
    this.disposed = true;
    this.resuming?.abort();
    this.dropClient(reason);
    this.stateEmitter.dispose();
    this.clientStateEmitter.dispose();
    this.restoredEmitter.dispose();
  }
}

/** What a connect found of a remembered session. */
export interface RestoredSession {
  client: ExecServerClient;
  /** Processes of the resumed session that were shown in terminals (still known to the executor). */
  terminals: RememberedProcess[];
  /** Set when the remembered session was gone (the words), with how many terminals it had. */
  expired?: string;
  lostTerminals?: number;
}
