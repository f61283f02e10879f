import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage, pidAlive, privateDir, socketAccepts } from '../util';

/*
 * Finding or starting the per-user executor daemon (src/cli/daemon.ts runs it). No server code
 * here: the extension host and `exec-bridge connect` use this to reach the daemon.
 */

declare const __EXEC_BRIDGE_VERSION__: string | undefined;
export const CLI_VERSION = typeof __EXEC_BRIDGE_VERSION__ === 'string' ? __EXEC_BRIDGE_VERSION__ : '0.0.0-dev';

/** Default idle time before a daemon with nothing to do exits. */
export const DAEMON_IDLE_MS = 300_000;

/**
 * The executor's files, relative to the folder of `dist/cli.js`: the dispatcher and the bundle of
 * serve, daemon and connect (src/cli/commands.ts). What an SSH host gets, and what names a
 * daemon's version (the other commands' bundles are clients of it).
 */
export const EXECUTOR_FILES = ['cli.js', 'cli/server.js'];

/** EXECUTOR_FILES as paths beside `cliPath`. */
export function executorFiles(cliPath: string): string[] {
  return EXECUTOR_FILES.map((f) => join(dirname(cliPath), f));
}

/** 12 hex of the sha256 of the executor's files (each with its name and length, so a byte moved between them counts). */
export function executorHash(cliPath: string): string {
  const h = createHash('sha256');
  for (const [i, abs] of executorFiles(cliPath).entries()) {
    const b = readFileSync(abs);
    h.update(`${EXECUTOR_FILES[i]}\0${b.length}\0`).update(b);
  }
  return h.digest('hex').slice(0, 12);
}

/** `<version>-<executorHash>`: a rebuilt bundle is another version. */
export function bundleKey(cliPath: string): string {
  return `${CLI_VERSION}-${executorHash(cliPath)}`;
}

export interface DaemonPaths {
  dir: string;
  socket: string;
  token: string;
  state: string;
  lock: string;
  log: string;
}

export function daemonPaths(key: string, env: NodeJS.ProcessEnv = process.env): DaemonPaths {
  const dir = join(privateDir(env), `daemon-${key}`);
  return {
    dir,
    socket: join(dir, 'sock'),
    token: join(dir, 'token'),
    state: join(dir, 'state.json'),
    lock: join(dir, 'lock'),
    log: join(dir, 'daemon.log'),
  };
}

export interface DaemonState {
  pid: number;
  key: string;
  socket: string;
  startedAt: number;
  /** How long a detached session lives (older daemons do not say). */
  sessionTtlMs?: number;
  idleExitMs?: number;
  /** `uname -sm` as Node sees it, and the daemon's Node (older daemons do not say). */
  platform?: string;
  node?: string;
  nodeVersion?: string;
}

export interface DaemonInfo extends DaemonState {
  /** Bearer token for the socket. Never log it. */
  token: string;
  /** The socket's client URL (`ws+unix:PATH:/`). */
  url: string;
  /** Whether this call started it. */
  started: boolean;
}

export function readDaemonState(paths: DaemonPaths): DaemonState | undefined {
  try {
    const s = JSON.parse(readFileSync(paths.state, 'utf8')) as DaemonState;
    return typeof s.pid === 'number' && typeof s.socket === 'string' ? s : undefined;
  } catch {
    return undefined;
  }
}

export async function liveDaemon(paths: DaemonPaths): Promise<DaemonInfo | undefined> {
  const st = readDaemonState(paths);
  if (!st || !pidAlive(st.pid) || !(await socketAccepts(st.socket))) return undefined;
  let token: string;
  try {
    token = readFileSync(paths.token, 'utf8').trim();
  } catch {
    return undefined;
  }
  return { ...st, token, url: `ws+unix:${st.socket}:/`, started: false };
}

/**
 * The live daemons of this user other than `key`'s (other versions: an extension update leaves the
 * older one running what it ran), newest-started first. Each is checked as `liveDaemon` does.
 */
export async function otherLiveDaemons(key: string, env: NodeJS.ProcessEnv = process.env): Promise<DaemonInfo[]> {
  let names: string[];
  try {
    names = readdirSync(privateDir(env));
  } catch {
    return [];
  }
  const found: DaemonInfo[] = [];
  for (const name of names) {
    if (!name.startsWith('daemon-') || name === `daemon-${key}`) continue;
    const live = await liveDaemon(daemonPaths(name.slice('daemon-'.length), env));
    if (live) found.push(live);
  }
  return found.sort((a, b) => b.startedAt - a.startedAt);
}

/** Takes the lock file (O_EXCL, holding our pid); a lock whose holder is dead is broken. */
function tryLock(paths: DaemonPaths): boolean {
  try {
    const fd = openSync(paths.lock, 'wx', 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  let holder = NaN;
  try {
    holder = Number(readFileSync(paths.lock, 'utf8'));
  } catch {
    return false; // removed just now: try again
  }
  // An empty lock is one being written this instant; a dead holder's lock is stale.
  if (Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) {
    // Rename first so that two breakers cannot both remove a lock a third one just took.
    const stale = `${paths.lock}.stale-${process.pid}`;
    try {
      renameSync(paths.lock, stale);
      const again = Number(readFileSync(stale, 'utf8'));
      // We moved a fresh lock: put it back unless a newer one is already there.
      if (again !== holder) {
        try {
          linkSync(stale, paths.lock);
        } catch {
          // a newer lock is there
        }
      }
      rmSync(stale, { force: true });
    } catch {
      // someone else broke it
    }
  }
  return false;
}

export interface EnsureDaemonOptions {
  /** `dist/cli.js` (the daemon runs `node cliPath daemon run`). */
  cliPath: string;
  nodePath?: string;
  key?: string;
  idleExitMs?: number;
  sessionTtlMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Give up after this long (default 15 s). */
  timeoutMs?: number;
  log?(line: string): void;
}

/** The running daemon for this user and version, started (once, under the lock) if there is none. */
export async function ensureDaemon(options: EnsureDaemonOptions): Promise<DaemonInfo> {
  const env = options.env ?? process.env;
  const key = options.key ?? bundleKey(options.cliPath);
  const paths = daemonPaths(key, env);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    const live = await liveDaemon(paths);
    if (live) return live;
    if (tryLock(paths)) {
      try {
        const again = await liveDaemon(paths);
        if (again) return again;
        const st = await startDaemon(paths, key, options, env, deadline);
        return { ...st, started: true };
      } finally {
        rmSync(paths.lock, { force: true });
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the exec-bridge daemon did not start within ${options.timeoutMs ?? 15_000} ms (see ${paths.log})`);
}

async function startDaemon(
  paths: DaemonPaths,
  key: string,
  options: EnsureDaemonOptions,
  env: NodeJS.ProcessEnv,
  deadline: number,
): Promise<Omit<DaemonInfo, 'started'>> {
  rmSync(paths.state, { force: true });
  const args = [options.cliPath, 'daemon', 'run', '--key', key];
  if (options.idleExitMs !== undefined) args.push('--idle-exit-ms', String(options.idleExitMs));
  if (options.sessionTtlMs !== undefined) args.push('--session-ttl-ms', String(options.sessionTtlMs));
  const logFd = openSync(paths.log, 'a', 0o600);
  const child = spawn(options.nodePath ?? process.execPath, args, {
    env: { ...env, ELECTRON_RUN_AS_NODE: '1' },
    detached: true,
    stdio: ['ignore', 'pipe', logFd],
    windowsHide: true,
  });
  closeSync(logFd);
  options.log?.(`starting the exec-bridge daemon ${key} (pid ${child.pid ?? '?'})`);
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('no ready line')), Math.max(0, deadline - Date.now()));
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => {
        out += d;
        if (out.includes('ready\n')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`it exited (${signal ?? code})`));
      });
    });
  } catch (e) {
    if (child.exitCode === null) child.kill('SIGKILL');
    let tail = '';
    try {
      tail = readFileSync(paths.log, 'utf8').trim().split('\n').slice(-3).join(' | ');
    } catch {
      // no log
    }
    throw new Error(`the exec-bridge daemon did not start: ${errorMessage(e)}${tail ? `: ${tail}` : ''}`);
  }
  child.stdout!.destroy();
  child.removeAllListeners();
  child.unref();
  const live = await liveDaemon(paths);
  if (!live) throw new Error(`the exec-bridge daemon started but ${paths.socket} does not accept connections`);
  options.log?.(`exec-bridge daemon ${key} ready (pid ${live.pid})`);
  return live;
}
