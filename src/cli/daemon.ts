import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { machine, type } from 'node:os';
import { dirname, join } from 'node:path';
import { closeInheritedFds, ExecServer, sandboxPlanner } from '../server';
import { bundleKey, DAEMON_IDLE_MS, daemonPaths, liveDaemon, readDaemonState, ExecServerClient, type DaemonState } from '../client';
import { tuneYoungGeneration } from '../rpc';
import { errorMessage, formatDuration } from '../util';
import { exitWhenIdle } from './serve';
import { DAEMON_USAGE } from './usage';

/** The exec-server's own default (src/server/execServer.ts). */
const DEFAULT_SESSION_TTL_MS = 30_000;

/*
 * The per-user executor daemon: one long-lived exec-server per user and version, listening on a unix
 * socket in the private directory (0700, hidden from every sandbox), with a random token in a 0600
 * file beside it. `ensureDaemon` finds it through its state file or starts it under a lock file, so
 * two clients starting it at once get one daemon. It exits after an idle time with no connection
 * and no session.
 */

/** `exec-bridge daemon run`: the daemon itself (started by `ensureDaemon`, detached). */
async function runDaemon(argv: string[]): Promise<number> {
  // Before anything else: an inherited descriptor would reach every command we start, sandboxed too.
  const closedFds = closeInheritedFds();
  let key: string | undefined;
  let idleMs = DAEMON_IDLE_MS;
  const spool: { processBytes?: number; totalBytes?: number } = {};
  let ttlMs: number | undefined;
  let maxTtlMs: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    if (argv[i] === '--key' && v) key = argv[++i];
    else if (argv[i] === '--idle-exit-ms' && v) idleMs = Number(argv[++i]);
    else if (argv[i] === '--session-ttl-ms' && v) ttlMs = Number(argv[++i]);
    // The output spool's caps, as `serve`'s --spool-process-bytes / --spool-total-bytes (defaults 64 MiB, 1 GiB).
    else if (argv[i] === '--spool-process-bytes' && v) spool.processBytes = Number(argv[++i]);
    else if (argv[i] === '--spool-total-bytes' && v) spool.totalBytes = Number(argv[++i]);
    else if (argv[i] === '--max-session-ttl-ms' && v) maxTtlMs = Number(argv[++i]);
    else {
      process.stderr.write(`exec-bridge daemon run: unknown option ${argv[i]}\n`);
      return 2;
    }
  }
  key ??= bundleKey(process.argv[1]!);
  const paths = daemonPaths(key);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('hex');
  writeFileSync(`${paths.token}.${process.pid}`, token + '\n', { mode: 0o600 });
  renameSync(`${paths.token}.${process.pid}`, paths.token);
  const log = (line: string) => process.stderr.write(`[${new Date().toISOString()}] ${line}\n`);
  if (closedFds?.length) log(`closed inherited descriptors ${closedFds.join(', ')}`);
  // The same V8 young-generation tuning as `serve` (src/rpc/youngGc.ts): this server lives for days.
  if (!tuneYoungGeneration()) log('young-generation tuning not available in this runtime');
  const sandbox = await sandboxPlanner({ log });
  if (sandbox.problem) log(`sandboxed commands will be refused until this is fixed: ${sandbox.problem}`);
  const server = new ExecServer({
    token,
    sessionTtlMs: ttlMs,
    spoolProcessBytes: spool.processBytes,
    spoolTotalBytes: spool.totalBytes,
    maxSessionTtlMs: maxTtlMs,
    planner: sandbox.planner,
    sandboxAvailable: sandbox.sandboxAvailable,
    log,
  });
  await server.listenUnix(paths.socket);
  const state: DaemonState = {
    pid: process.pid,
    key,
    socket: paths.socket,
    startedAt: Date.now(),
    sessionTtlMs: ttlMs ?? DEFAULT_SESSION_TTL_MS,
    idleExitMs: idleMs,
    // What an SSH client's fast path reports without starting Node (src/client/sshShare.ts).
    platform: `${type()} ${machine()}`,
    node: process.execPath,
    nodeVersion: process.version,
  };
  writeFileSync(`${paths.state}.${process.pid}`, JSON.stringify(state) + '\n', { mode: 0o600 });
  renameSync(`${paths.state}.${process.pid}`, paths.state);
  log(`daemon ${key} listening on ${paths.socket} (pid ${process.pid}, idle exit after ${idleMs} ms)`);
  // An installed bundle (~/.exec-bridge/server/<version>/, see sshConnector) is in use while this
  // file names a live daemon: installing another version removes only unused ones.
  const installDir = dirname(dirname(process.argv[1]!));
  const inUse = join(installDir, 'daemon.pid');
  if (existsSync(join(installDir, '.complete'))) writeFileSync(inUse, `${process.pid}\n`);
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log(`stopping (${why})`);
    // Only our own state: a successor may already have written its own.
    if (readDaemonState(paths)?.pid === process.pid) {
      rmSync(paths.state, { force: true });
      rmSync(paths.token, { force: true });
    }
    try {
      if (readFileSync(inUse, 'utf8').trim() === String(process.pid)) rmSync(inUse, { force: true });
    } catch {
      // not an installed bundle
    }
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The relay that started us may go with its terminal or ssh session: we stay.
  process.on('SIGHUP', () => undefined);
  process.stdout.on('error', () => undefined);
  process.stdout.write('ready\n');
  exitWhenIdle(server, idleMs, () => void stop('idle'));
  return new Promise<number>(() => undefined);
}

/** `exec-bridge daemon status|stop|run`. */
export async function daemonCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'run') return runDaemon(rest);
  if (sub === undefined || sub === 'status' || sub === 'stop') {
    const paths = daemonPaths(bundleKey(process.argv[1]!));
    const live = await liveDaemon(paths);
    if (!live) {
      process.stdout.write('no exec-bridge daemon is running\n');
      return sub === 'stop' ? 0 : 1;
    }
    if (sub === 'stop') {
      process.kill(live.pid, 'SIGTERM');
      process.stdout.write(`stopped the exec-bridge daemon (pid ${live.pid})\n`);
    } else {
      const ttl =
        live.sessionTtlMs !== undefined
          ? `detached sessions live ${Math.round(live.sessionTtlMs / 1000)} s unless their client asks otherwise\n`
          : '';
      const idle = live.idleExitMs !== undefined ? `exits after ${Math.round(live.idleExitMs / 1000)} s idle\n` : '';
      process.stdout.write(`pid ${live.pid}\nsocket ${live.socket}\nversion ${live.key}\n${ttl}${idle}`);
      process.stdout.write(await sessionLines(live.url, live.token));
    }
    return 0;
  }
  process.stderr.write(`exec-bridge daemon: unknown subcommand ${sub}\n${DAEMON_USAGE}\n`);
  return 2;
}

/** The daemon's sessions (but the one this status call opens), a line each: `execBridge/sessions`. */
async function sessionLines(url: string, token: string): Promise<string> {
  let client: ExecServerClient | undefined;
  try {
    client = await ExecServerClient.connect({
      endpoint: { kind: 'websocket', url, token },
      clientName: 'exec-bridge-daemon-status',
      // Nothing to keep: this session ends as soon as the status is printed.
      sessionTtlMs: 1,
      deadlineMs: 5_000,
    });
    const { now, sessions } = await client.call('execBridge/sessions', {}, { signal: AbortSignal.timeout(10_000) });
    const others = sessions.filter((x) => x.sessionId !== client!.sessionId);
    const lines = others.map((x) => {
      const kept = `kept ${formatDuration(x.ttlMs)} once detached`;
      const state = x.attached
        ? `attached, ${kept}`
        : `detached ${formatDuration(now - (x.detachedAt ?? now))} ago, ends ${new Date(x.expiresAt ?? now).toISOString()} (in ${formatDuration((x.expiresAt ?? now) - now)})`;
      return `session ${x.sessionId} ${x.clientName || '?'}: ${state}, ${x.processes} process(es)\n`;
    });
    return `sessions ${others.length}\n${lines.join('')}`;
  } catch (e) {
    return `sessions: unknown (${errorMessage(e)})\n`;
  } finally {
    client?.dispose();
  }
}
