import { bundleKey, ensureDaemon, otherLiveDaemons, type DaemonInfo } from '../client';
import { Emitter, pidAlive, type Event } from '../util';

export interface BundledServerOptions {
  /** Absolute path of `dist/cli.js`. */
  cliPath: string;
  /** The Node to run it with; in an extension host `process.execPath` (Electron as Node). */
  nodePath?: string;
  /** Give up starting the daemon after this long. Default 15 000 ms. */
  startTimeoutMs?: number;
  /** How long a detached session lives, for a daemon this starts (read at each start). */
  sessionTtlMs?(): number | undefined;
  /** The daemon's idle exit (no session, no connection), for a daemon this starts. */
  idleExitMs?: number;
  env?: NodeJS.ProcessEnv;
  log?(line: string): void;
}

export interface BundledServerInfo {
  /** `ws+unix:PATH:/`: the daemon's socket in the private directory. */
  url: string;
  /** Bearer token (from the daemon's 0600 token file). Never log it. */
  token: string;
  pid: number;
  /** `<version>-<hash>` of the daemon's bundle. */
  key?: string;
  socket?: string;
  startedAt?: number;
}

/**
 * The bundled executor: this user's executor daemon (src/cli/daemon.ts), found or started under its
 * lock by `ensureDaemon`. It is not a child of the extension host: a window reload, an extension
 * update or an extension-host crash leaves it and its sessions running, so the next extension host
 * resumes them. Its lifetimes (docs/architecture.md, "Lifetimes"): a detached session lives for the
 * TTL, the daemon exits after its idle time with no session and no connection.
 */
export class BundledServer {
  private info: DaemonInfo | undefined;
  /** `info` is another version's daemon, chosen by `useDaemon`. */
  private pinned = false;
  private starting: Promise<BundledServerInfo> | undefined;
  private readonly exited = new Emitter<{ pid: number }>();
  /** Fires once when the daemon we used is found gone (killed, crashed, stopped). */
  readonly onDidExit: Event<{ pid: number }> = this.exited.event;

  constructor(private readonly options: BundledServerOptions) {}

  /** The exec-server bundle (also what an SSH executor installs on its host). */
  get cliPath(): string {
    return this.options.cliPath;
  }

  /** The daemon's pid while it runs (as far as we know). */
  get pid(): number | undefined {
    return this.info && pidAlive(this.info.pid) ? this.info.pid : undefined;
  }
  get running(): boolean {
    return this.pid !== undefined;
  }
  /** The detached-session TTL of the daemon we use, if it says (older daemons do not). */
  get sessionTtlMs(): number | undefined {
    return this.info?.sessionTtlMs;
  }

  /**
   * The daemons of other versions that still run (an extension update leaves the older one with
   * what it ran): where a remembered session may live on. Newest-started first.
   */
  olderDaemons(): Promise<BundledServerInfo[]> {
    let key: string;
    try {
      key = bundleKey(this.options.cliPath);
    } catch {
      return Promise.resolve([]);
    }
    return otherLiveDaemons(key, this.options.env);
  }

  /**
   * Uses `daemon` (another version's, found by `olderDaemons`) instead of this version's, until it
   * exits or `useOwnVersion` is called: the window's session lives there (docs/architecture.md,
   * "An extension update").
   */
  useDaemon(daemon: BundledServerInfo): void {
    this.info = { ...daemon, started: false, key: daemon.key ?? '', socket: daemon.socket ?? '', startedAt: daemon.startedAt ?? 0 };
    this.pinned = true;
    this.options.log?.(
      `bundled executor: using the exec-bridge daemon of another version (${daemon.key ?? '?'}, pid ${daemon.pid}), which still runs this window's session`,
    );
  }

  /** Back to this version's daemon (a new session: Reconnect). */
  useOwnVersion(): void {
    if (!this.pinned) return;
    this.pinned = false;
    this.info = undefined;
  }

  /** Whether the daemon in use is another version's (`useDaemon`). */
  get usingOtherVersion(): boolean {
    return this.pinned && this.info !== undefined;
  }

  /** Finds the daemon, or starts it; resolves with its URL and token. */
  ensureStarted(): Promise<BundledServerInfo> {
    if (this.info && this.checkAlive()) return Promise.resolve(this.info);
    this.pinned = false;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Whether the daemon we use still runs; a dead one is reported once through `onDidExit`. */
  checkAlive(): boolean {
    const info = this.info;
    if (!info) return false;
    if (pidAlive(info.pid)) return true;
    this.info = undefined;
    this.options.log?.(`the exec-bridge daemon (pid ${info.pid}) is gone`);
    this.exited.fire({ pid: info.pid });
    return false;
  }

  private async start(): Promise<BundledServerInfo> {
    const { log } = this.options;
    const ttl = this.options.sessionTtlMs?.();
    const info = await ensureDaemon({
      cliPath: this.options.cliPath,
      nodePath: this.options.nodePath ?? process.execPath,
      ...(ttl !== undefined ? { sessionTtlMs: ttl } : {}),
      ...(this.options.idleExitMs !== undefined ? { idleExitMs: this.options.idleExitMs } : {}),
      ...(this.options.env ? { env: this.options.env } : {}),
      timeoutMs: this.options.startTimeoutMs ?? 15_000,
      ...(log ? { log } : {}),
    });
    this.info = info;
    log?.(
      `bundled executor: ${info.started ? 'started' : 'using'} the exec-bridge daemon (pid ${info.pid}, ${info.socket}` +
        // Each window asks for its own session's TTL (execBridge.sessionTtlSeconds); this is the daemon's default.
        `${info.sessionTtlMs !== undefined ? `, detached sessions of clients that ask for no TTL live ${Math.round(info.sessionTtlMs / 1000)} s` : ''})`,
    );
    return info;
  }

  /**
   * Stops the daemon (SIGTERM: it kills everything it runs, for every window of this user), SIGKILL
   * after `graceMs`. Not part of a normal shutdown, which only detaches (`forget`).
   */
  async stop(graceMs = 2000): Promise<void> {
    const pid = this.pid;
    this.info = undefined;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    for (const deadline = Date.now() + graceMs; Date.now() < deadline && pidAlive(pid);) await new Promise((r) => setTimeout(r, 25));
    if (pidAlive(pid)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }

  /** Lets go of the daemon without stopping it (the extension shuts down; sessions detach). */
  dispose(): void {
    this.info = undefined;
    this.exited.dispose();
  }
}
