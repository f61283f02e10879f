/**
 * Start an exec-server for a test: ours (`node dist/cli.js serve`) or the real `codex exec-server`,
 * on 127.0.0.1 port 0, optionally with a bearer token; the bound URL is read from the one line
 * each prints on stdout. Each server runs in its own process group so `stop()` also takes down
 * the commands it started. Needs `npm run build` first for `ours`.
 *
 *   const server = await startExecServer('codex', { token: true });
 *   … new WebSocket(server.url, { headers: { Authorization: `Bearer ${server.token}` } }) …
 *   await server.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type ServerKind = 'ours' | 'codex';

/** Repository root, from the compiled location `<OUT_DIR>/test/helpers`. */
export const REPO_ROOT = join(__dirname, '..', '..', '..');
export const CLI_JS = join(REPO_ROOT, 'dist', 'cli.js');
export const CODEX_BIN = join(REPO_ROOT, 'node_modules', '.bin', 'codex');

export interface ExecServerProcess {
  kind: ServerKind;
  /** `ws://127.0.0.1:PORT` */
  url: string;
  /** The bearer token when started with `token: true`. */
  token: string | undefined;
  child: ChildProcess;
  /** Everything the server wrote on stderr so far (for failure messages). */
  stderr(): string;
  /** SIGTERM to the process group (SIGKILL after 3 s); resolves when the server exited. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Require a random bearer token (kept in a 0600 temp file). */
  token?: boolean;
  /** Extra command-line arguments. */
  args?: string[];
  /** How long to wait for the URL line. Default 20 s. */
  startTimeoutMs?: number;
  /** The server's environment (default: ours). */
  env?: NodeJS.ProcessEnv;
  /** Ours only: `unix:PATH` listens on a Unix socket (`url` is then `ws+unix:PATH:/`); default loopback TCP. */
  listen?: string;
  /** Descriptors the server inherits, by its fd number (≥ 3) → ours: without close-on-exec in the server, as a shell's would be. */
  inheritFds?: Record<number, number>;
}

export async function startExecServer(kind: ServerKind, options: StartOptions = {}): Promise<ExecServerProcess> {
  let token: string | undefined;
  let tokenDir: string | undefined;
  const authArgs: string[] = [];
  if (options.token) {
    token = randomBytes(24).toString('hex');
    tokenDir = mkdtempSync(join(tmpdir(), 'exec-bridge-token-'));
    const file = join(tokenDir, 'token');
    writeFileSync(file, token, { mode: 0o600 });
    authArgs.push(...(kind === 'ours' ? ['--token-file', file] : ['--ws-auth', 'capability-token', '--ws-token-file', file]));
  }
  const [cmd, args] =
    kind === 'ours'
      ? [process.execPath, [CLI_JS, 'serve', '--listen', options.listen ?? 'ws://127.0.0.1:0', ...authArgs, ...(options.args ?? [])]]
      : [CODEX_BIN, ['exec-server', '--listen', 'ws://127.0.0.1:0', ...authArgs, ...(options.args ?? [])]];
  const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe'];
  for (const [fd, ours] of Object.entries(options.inheritFds ?? {})) {
    while (stdio.length < Number(fd)) stdio.push('ignore'); // for fds above 2, 'ignore' leaves the number closed
    stdio[Number(fd)] = ours;
  }
  const child = spawn(cmd, args, { stdio, detached: true, env: options.env ?? process.env });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  const cleanupToken = () => {
    if (tokenDir) rmSync(tokenDir, { recursive: true, force: true });
  };
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      signalGroup(child, 'SIGTERM');
      const t = setTimeout(() => signalGroup(child, 'SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    // The server is gone; make sure commands it left behind are too.
    signalGroup(child, 'SIGKILL');
    cleanupToken();
  };
  try {
    const url = await readUrlLine(
      child,
      options.startTimeoutMs ?? 20_000,
      () => err,
      options.listen?.startsWith('unix:') ? /ws\+unix:\S+/ : undefined,
    );
    return { kind, url, token, child, stderr: () => err, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

function readUrlLine(child: ChildProcess, timeoutMs: number, stderr: () => string, pattern = /ws:\/\/[0-9.:]+/): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server printed no URL within ${timeoutMs} ms; stderr: ${stderr()}`)), timeoutMs);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before printing its URL; stderr: ${stderr()}`));
    });
  });
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}
