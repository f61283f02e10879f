import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Emitter, type Event } from '../util/emitter';
import { makePrivateSubdir, sweepDeadDirs, TOKEN_DIR_PREFIX } from '../util/privateDir';

export interface BundledServerOptions {
  /** Absolute path of `dist/cli.js`. */
  cliPath: string;
  /** The Node to run it with; in an extension host `process.execPath` (Electron as Node). */
  nodePath?: string;
  /** Give up waiting for the URL line after this long. Default 15 000 ms. */
  startTimeoutMs?: number;
  /** Extra server arguments (e.g. `--verbose`). */
  extraArgs?: string[];
  log?(line: string): void;
}

export interface BundledServerInfo {
  url: string;
  /** Bearer token for the WebSocket upgrade. Never log it. */
  token: string;
  pid: number;
}

/** The first `ws://` URL the server prints on stdout (docs/protocol.md §1). */
export function parseListenUrl(text: string): string | undefined {
  return /ws:\/\/[0-9A-Za-z.:[\]-]+/.exec(text)?.[0];
}

/**
 * The bundled executor: `dist/cli.js serve` on loopback, port 0, with a fresh random token in a
 * 0600 file. It runs as the leader of its own process group so that stopping it (on deactivate,
 * on failure, or before a restart) kills the server and everything it started in one go. Its
 * stdin is a pipe from us that we never write to: if the extension host dies, even by SIGKILL,
 * the pipe closes and the server (`--exit-with-stdin`) stops with everything it started.
 */
export class BundledServer {
  private child: ChildProcess | undefined;
  private info: BundledServerInfo | undefined;
  private starting: Promise<BundledServerInfo> | undefined;
  private tokenDir: string | undefined;
  private readonly exited = new Emitter<{ code: number | null; signal: string | null }>();
  /** Fires when a started server exits (expected or not). */
  readonly onDidExit: Event<{ code: number | null; signal: string | null }> = this.exited.event;

  constructor(private readonly options: BundledServerOptions) {}

  /** The exec-server bundle (also what an SSH executor installs on its host). */
  get cliPath(): string {
    return this.options.cliPath;
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }
  get running(): boolean {
    return this.pid !== undefined && this.info !== undefined;
  }

  /** Starts the server if it is not running; resolves with its URL and token. */
  ensureStarted(): Promise<BundledServerInfo> {
    if (this.info && this.pid !== undefined) return Promise.resolve(this.info);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private start(): Promise<BundledServerInfo> {
    const { log } = this.options;
    const token = randomBytes(32).toString('hex');
    // A 0600 file in a 0700 folder of our private directory, which no sandbox can see (a
    // network-on command could otherwise read it and drive the server unsandboxed); removed as soon
    // as the server has read it, and swept if we die first.
    sweepDeadDirs(TOKEN_DIR_PREFIX);
    this.tokenDir = makePrivateSubdir(TOKEN_DIR_PREFIX);
    const tokenFile = join(this.tokenDir, 'token');
    writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
    const args = [
      this.options.cliPath,
      'serve',
      '--listen',
      'ws://127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--exit-with-stdin',
      ...(this.options.extraArgs ?? []),
    ];
    const child = spawn(this.options.nodePath ?? process.execPath, args, {
      // Electron's binary behaves as plain Node with this; harmless under Node.
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    this.child = child;
    // The lifeline: never written, closed by the OS when this process goes away.
    child.stdin?.on('error', () => undefined);
    log?.(`bundled exec-server starting (pid ${child.pid ?? '?'})`);
    return new Promise<BundledServerInfo>((resolve, reject) => {
      let out = '';
      let err = '';
      let settled = false;
      const timer = setTimeout(
        () => finish(new Error(`the bundled exec-server printed no URL within ${this.options.startTimeoutMs ?? 15_000} ms`)),
        this.options.startTimeoutMs ?? 15_000,
      );
      const finish = (error?: Error, url?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error || !url || child.pid === undefined) {
          this.killGroup(child);
          const detail = err.trim() ? `: ${err.trim().split('\n').slice(-3).join(' | ')}` : '';
          reject(new Error(`${error?.message ?? 'the bundled exec-server did not start'}${detail}`));
          return;
        }
        this.info = { url, token, pid: child.pid };
        // The token file is only needed while the server reads it at startup.
        this.removeTokenDir();
        log?.(`bundled exec-server listening on ${url} (pid ${child.pid})`);
        resolve(this.info);
      };
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (d: string) => {
        out += d;
        const url = parseListenUrl(out);
        if (url && out.includes('\n')) finish(undefined, url);
      });
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (d: string) => {
        err = (err + d).slice(-4096);
        for (const line of d.split('\n')) if (line.trim()) log?.(`[bundled] ${line.trim()}`);
      });
      child.once('error', (e) => finish(e));
      child.once('exit', (code, signal) => {
        finish(new Error(`the bundled exec-server exited (${signal ?? code}) before listening`));
        if (this.child === child) this.info = undefined;
        log?.(`bundled exec-server exited (${signal ?? `code ${code}`})`);
        this.exited.fire({ code, signal });
      });
    });
  }

  /**
   * Stops the server and its process group: SIGTERM (the server then kills its own children's
   * groups), SIGKILL to the group after `graceMs`. Resolves when the server is gone.
   */
  stop(graceMs = 2000): Promise<void> {
    const child = this.child;
    this.info = undefined;
    this.removeTokenDir();
    if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.killGroup(child, 'SIGKILL');
        resolve();
      }, graceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        // Anything left in the group (a child that ignored the server's kill) goes too.
        this.killGroup(child, 'SIGKILL');
        resolve();
      });
      this.killGroup(child, 'SIGTERM');
    });
  }

  dispose(): void {
    void this.stop();
    this.exited.dispose();
  }

  private killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  private removeTokenDir(): void {
    if (this.tokenDir) rmSync(this.tokenDir, { recursive: true, force: true });
    this.tokenDir = undefined;
  }
}
