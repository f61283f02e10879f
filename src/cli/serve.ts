import { StdioTransport, tuneYoungGeneration } from '../rpc';
import { closeInheritedFds, ExecServer, isLoopbackHost, sandboxPlanner, type ExecServerOptions } from '../server';
import { errorMessage } from '../util';
import { readTokenFile } from './tokenFile';
import { SERVE_USAGE } from './usage';

interface ServeArgs {
  listen: string;
  tokenFile?: string;
  ttlMs?: number;
  maxTtlMs?: number;
  allowOrigins: string[];
  bwrapPath?: string;
  prewarmMs?: number;
  exitWithStdin?: boolean;
  idleExitMs?: number;
  verbose: boolean;
  spoolProcessBytes?: number;
  spoolTotalBytes?: number;
}

function parseServeArgs(args: string[]): ServeArgs {
  const out: ServeArgs = { listen: 'ws://127.0.0.1:0', allowOrigins: [], verbose: false };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag, inline] =
      a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--listen':
        out.listen = value();
        break;
      case '--token-file':
        out.tokenFile = value();
        break;
      case '--session-ttl-ms':
        out.ttlMs = nonNegativeInt(flag, value());
        break;
      case '--max-session-ttl-ms':
        out.maxTtlMs = nonNegativeInt(flag, value());
        break;
      case '--sandbox-prewarm-ms':
        out.prewarmMs = nonNegativeInt(flag, value());
        break;
      case '--allow-origin':
        out.allowOrigins.push(value());
        break;
      case '--bwrap-path':
        out.bwrapPath = value();
        break;
      case '--idle-exit-ms':
        out.idleExitMs = nonNegativeInt(flag, value());
        break;
      case '--spool-process-bytes':
        out.spoolProcessBytes = nonNegativeInt(flag, value());
        break;
      case '--spool-total-bytes':
        out.spoolTotalBytes = nonNegativeInt(flag, value());
        break;
      case '--exit-with-stdin':
        out.exitWithStdin = true;
        break;
      case '--verbose':
        out.verbose = true;
        break;
      case '-h':
      case '--help':
        process.stdout.write(SERVE_USAGE + '\n');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${a}`);
    }
  }
  return out;
}

function nonNegativeInt(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a non-negative integer, got ${v}`);
  return n;
}

/** `exec-bridge serve`: runs until SIGTERM/SIGINT, then kills every child process group and exits. */
export async function serveCommand(argv: string[]): Promise<number> {
  // Before anything else: an inherited descriptor would reach every command we start, sandboxed too.
  const closedFds = closeInheritedFds();
  let args: ServeArgs;
  try {
    args = parseServeArgs(argv);
  } catch (e) {
    process.stderr.write(`exec-bridge serve: ${errorMessage(e)}\n${SERVE_USAGE}\n`);
    return 2;
  }
  const log = (line: string) => {
    if (args.verbose) process.stderr.write(`[exec-bridge] ${line}\n`);
  };
  if (closedFds?.length) log(`closed inherited descriptors ${closedFds.join(', ')}`);
  // Dead output buffers freed every few MiB sent, a young generation that stops growing (src/rpc/youngGc.ts).
  if (!tuneYoungGeneration()) log('young-generation tuning not available in this runtime');
  let token: string | undefined = process.env.EXEC_BRIDGE_TOKEN || undefined;
  // Read once, then gone from our environment: nothing we spawn may inherit it (docs/security.md).
  delete process.env.EXEC_BRIDGE_TOKEN;
  if (args.tokenFile) {
    try {
      token = readTokenFile(args.tokenFile);
    } catch (e) {
      process.stderr.write(`exec-bridge serve: ${errorMessage(e)}\n`);
      return 2;
    }
  }
  const server = await makeServer(args, token, log);
  const stop = stopOnSignals(server, log);
  if (args.listen === 'stdio' || args.listen === 'stdio://') {
    const transport = new StdioTransport(process.stdin, process.stdout);
    // One connection: when it ends there is no one to resume the session, so stop.
    transport.onClose(() => void stop('stdin closed'));
    server.serve(transport);
    return new Promise<number>(() => undefined);
  }
  if (args.listen.startsWith('unix:')) return listenUnix(server, args, token, stop);
  return listenTcp(server, args, token, stop);
}

type Stop = (why: string) => Promise<void>;

/** The server with its sandbox planner (a problem with it is said once, here; sandboxed starts are refused then). */
async function makeServer(args: ServeArgs, token: string | undefined, log: (line: string) => void): Promise<ExecServer> {
  const sandbox = await sandboxPlanner({ bwrapPath: args.bwrapPath, log });
  if (sandbox.problem)
    process.stderr.write(`exec-bridge serve: sandboxed commands will be refused until this is fixed: ${sandbox.problem}\n`);
  const options: ExecServerOptions = {
    token,
    allowOrigins: args.allowOrigins,
    sessionTtlMs: args.ttlMs,
    maxSessionTtlMs: args.maxTtlMs,
    sandboxPrewarmMs: args.prewarmMs,
    spoolProcessBytes: args.spoolProcessBytes,
    spoolTotalBytes: args.spoolTotalBytes,
    log,
    planner: sandbox.planner,
    sandboxAvailable: sandbox.sandboxAvailable,
  };
  return new ExecServer(options);
}

/** The one way out: closes the server (killing every child) and exits 0; SIGTERM, SIGINT and SIGHUP take it. */
function stopOnSignals(server: ExecServer, log: (line: string) => void): Stop {
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log(`stopping (${why}); killing all child processes`);
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void stop('SIGHUP'));
  return stop;
}

/** `--listen unix:PATH`: WebSocket on a 0600 unix socket. */
function listenUnix(server: ExecServer, args: ServeArgs, token: string | undefined, stop: Stop): Promise<number> {
  const path = args.listen.slice('unix:'.length);
  if (!path.startsWith('/')) {
    process.stderr.write(`exec-bridge serve: --listen unix:PATH needs an absolute path, got ${args.listen}\n`);
    return Promise.resolve(2);
  }
  if (!token)
    process.stderr.write(
      `exec-bridge serve: WARNING: no token; any process of ${process.env.USER ?? 'this user'} that can reach ${path} can run commands.\n`,
    );
  return listenAndPrint(server, args, stop, () => server.listenUnix(path));
}

/** `--listen ws://HOST:PORT`, with a loud warning for who else can reach it. */
function listenTcp(server: ExecServer, args: ServeArgs, token: string | undefined, stop: Stop): Promise<number> {
  const m = /^ws:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(args.listen);
  if (!m) {
    process.stderr.write(`exec-bridge serve: --listen must be ws://HOST:PORT, unix:PATH or stdio, got ${args.listen}\n`);
    return Promise.resolve(2);
  }
  const host = m[1]!.replace(/^\[|\]$/g, '');
  if (!isLoopbackHost(host)) {
    if (!token) {
      process.stderr.write(
        `\n!!! WARNING: exec-bridge is listening on ${host} WITHOUT a token: anyone who can reach this port can run\n` +
          `!!! any command as ${process.env.USER ?? 'this user'}. Use --token-file, or listen on 127.0.0.1 and tunnel (ssh -L).\n\n`,
      );
    } else {
      process.stderr.write(`exec-bridge: listening on non-loopback ${host}; clients need the token.\n`);
    }
  } else if (!token) {
    // Loopback is not private: every local user and every process on this machine can connect.
    process.stderr.write(
      `\n!!! WARNING: exec-bridge is listening on ${host} WITHOUT a token: any local user or process can connect\n` +
        `!!! and run any command as ${process.env.USER ?? 'this user'}. Use --token-file FILE (a chmod 600 file holding a random token).\n\n`,
    );
  }
  return listenAndPrint(server, args, stop, () => server.listen(host, Number(m[2])));
}

/** Listens and prints the URL, the one line on stdout; then runs until stopped (by stdin's end or idleness if asked). */
async function listenAndPrint(server: ExecServer, args: ServeArgs, stop: Stop, listen: () => Promise<string>): Promise<number> {
  if (args.exitWithStdin) stopWithStdin(stop);
  try {
    const url = await listen();
    if (args.idleExitMs !== undefined) exitWhenIdle(server, args.idleExitMs, () => void stop('idle'));
    process.stdout.write(url + '\n');
  } catch (e) {
    process.stderr.write(`exec-bridge serve: cannot listen on ${args.listen}: ${errorMessage(e)}\n`);
    return 1;
  }
  return new Promise<number>(() => undefined);
}

function stopWithStdin(stop: Stop): void {
  process.stdin.on('end', () => void stop('stdin closed'));
  process.stdin.on('error', () => void stop('stdin closed'));
  process.stdin.resume();
}

/** Calls `onIdle` once the server has had no connection and no session for `ms` (checked at most every second). */
export function exitWhenIdle(server: ExecServer, ms: number, onIdle: () => void): void {
  let idleSince: number | undefined = server.idle ? Date.now() : undefined;
  const timer = setInterval(
    () => {
      if (!server.idle) idleSince = undefined;
      else if (idleSince === undefined) idleSince = Date.now();
      else if (Date.now() - idleSince >= ms) {
        clearInterval(timer);
        onIdle();
      }
    },
    Math.max(20, Math.min(1000, Math.floor(ms / 4))),
  );
  timer.unref();
}
