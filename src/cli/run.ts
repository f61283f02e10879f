import { existsSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_SESSION_TTL_MS, ExecServerClient, isExecClientError, redact, sshConnector, executorPath } from '../client';
import type { ConnectionState, Connector, ProcessCompletion, ProcessHandle } from '../client';
import { sandboxForPolicy, type SandboxPolicyName } from '../protocol';
import { errorMessage, formatDuration, shellLine } from '../util';
import { HelpRequested, parseRunArgs, runArgv, UsageError, RUN_USAGE, type RunArgs } from './runArgs';
import { startRunServer, type RunServer } from './runServer';
import { readTokenFile } from './tokenFile';

export { parseRunArgs, RUN_USAGE } from './runArgs';

/**
 * How to start this CLI again from a shell: `node <this cli.js>` (absolute), with the Node that runs
 * us when `node` on the PATH is another one. `exec-bridge` itself is on no PATH by default.
 */
export function cliInvocation(): string[] {
  const script = process.argv[1] ?? 'dist/cli.js';
  const onPath = (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d !== '')
    .map((d) => join(d, 'node'))
    .find((p) => existsSync(p));
  let same = false;
  try {
    same = onPath !== undefined && realpathSync(onPath) === realpathSync(process.execPath);
  } catch {
    // unreadable: say which Node
  }
  return [same ? 'node' : process.execPath, resolve(script)];
}

type Say = (line: string) => void;

/** The `exec-bridge run` line that runs `args` again: pasted, it works (same executor, cwd, stdin, …). */
function rerunLine(args: RunArgs): string {
  return shellLine([...cliInvocation(), 'run', ...runArgv(args)]);
}

/** `exec-bridge run`: resolves with the exit status for the process. */
export async function runCommand(argv: string[]): Promise<number> {
  const args = parseOrExplain(argv);
  if (typeof args === 'number') return args;
  const say = (line: string) => process.stderr.write(`exec-bridge: ${line}\n`);
  const debug = args.verbose ? say : () => undefined;

  let client: ExecServerClient | undefined;
  const cleanup = new Cleanup();
  try {
    client = await connectExecutor(args, say, debug, cleanup);
    // From the start's request on, Ctrl-C is ours: the executor may have started the command before
    // its answer arrives, and Node's default would end `run` and leave the command running.
    const early = holdSignalsDuringStart(say);
    let handle: ProcessHandle;
    try {
      handle = await startOnExecutor(client, args);
    } finally {
      early.stop();
    }
    debug(`started process ${handle.processId}`);
    // Ours before the first byte of output is too: whoever sees that byte may interrupt at once.
    cleanup.add(forwardInterrupts(handle, say, early.held()));
    const output = streamOutput(client, handle, cleanup);
    if (args.stdin || args.tty) cleanup.add(forwardStdin(handle, args.tty && Boolean(process.stdin.isTTY)));
    if (args.tty && process.stdout.isTTY && client.capabilities.processResize) cleanup.add(forwardResize(handle));
    return await exitStatus(handle, args, output, say);
  } catch (e) {
    if (isExecClientError(e)) {
      say(e.message);
      const notFound = e.kind === 'rpc' && (e as { data?: { kind?: string } }).data?.kind === 'spawnNotFound';
      return notFound ? 127 : 255;
    }
    say(errorMessage(e));
    return 255;
  } finally {
    client?.dispose();
    await cleanup.run();
  }
}

/** The parsed command line, or the exit status once the usage was printed (`--help`: 0; a mistake: 2). */
function parseOrExplain(argv: string[]): RunArgs | number {
  try {
    return parseRunArgs(argv);
  } catch (e) {
    if (e instanceof HelpRequested) {
      process.stdout.write(RUN_USAGE + '\n');
      return 0;
    }
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`exec-bridge run: ${e.message}\n${RUN_USAGE}\n`);
    return 2;
  }
}

/** Connects to the executor of `args`; the bundled one is started first, and `cleanup` stops it. */
async function connectExecutor(args: RunArgs, say: Say, debug: Say, cleanup: Cleanup): Promise<ExecServerClient> {
  let url: string;
  let token: string | undefined;
  let connector: Connector | undefined;
  let bundled: RunServer | undefined;
  if (args.ssh !== undefined) {
    url = `ssh://${args.ssh}`;
    connector = sshConnector({
      target: args.ssh,
      sshOptions: args.sshOptions,
      cliPath: process.argv[1]!,
      log: debug,
      progress: (p) => {
        if (p.step === 'installing') say(`installing exec-server ${p.version} on ${args.ssh} (${(p.bytes / 1e6).toFixed(1)} MB)…`);
      },
    });
  } else if (args.bundled) {
    const server = await startRunServer();
    bundled = server;
    cleanup.add(() => server.stop());
    url = server.url;
    token = server.token;
    debug(`bundled exec-server at ${url}`);
  } else {
    url = args.url!;
    token = args.tokenFile ? readTokenFile(args.tokenFile) : process.env.EXEC_BRIDGE_TOKEN;
  }
  const client = await ExecServerClient.connect({
    endpoint: { kind: 'websocket', url, token },
    // A first ssh connect may upload the bundle: more than the default 5 s per attempt.
    ...(connector ? { connector, attemptTimeoutMs: 60_000 } : {}),
    clientName: 'exec-bridge-run',
    deadlineMs: args.deadlineMs,
    // Never giving up is worth it only if the executor keeps the command that long: ask for a night.
    sessionTtlMs: args.sessionTtlMs ?? (args.deadlineMs === 0 ? DEFAULT_SESSION_TTL_MS : null),
    log: args.verbose ? (line) => say(line) : undefined,
  });
  debug(`connected to ${redact(url)} (session ${client.sessionId})`);
  watchConnection(client, say, bundled !== undefined);
  if (bundled) {
    const server = bundled;
    // Its commands die with it (the orphan guard): end the run now, in words that fit here.
    void server.died.then((how) =>
      client.dispose(
        `the bundled exec-server (pid ${server.pid}, started for this run) exited (${how}), and the command ended with it. To run it again: ${rerunLine(args)}`,
      ),
    );
  }
  return client;
}

/** Starts the command: in `--cwd` (ours with the bundled server), else where the executor starts processes. */
function startOnExecutor(client: ExecServerClient, args: RunArgs): Promise<ProcessHandle> {
  const cwd = args.cwd
    ? args.bundled
      ? resolve(args.cwd)
      : args.cwd
    : args.bundled
      ? process.cwd()
      : (executorPath(client.environmentInfo?.cwd) ?? process.cwd());
  return client.startProcess({
    argv: args.argv,
    cwd,
    tty: args.tty,
    pipeStdin: !args.tty && args.stdin,
    ...(args.sandbox
      ? { sandbox: sandboxForPolicy({ policy: args.sandbox, cwd: pathToFileURL(cwd).href, network: args.sandboxNetwork }) }
      : {}),
    ...(args.networkAllow.length > 0 ? { managedNetwork: { allow: args.networkAllow, deny: args.networkDeny } } : {}),
    ...(args.tty && process.stdout.isTTY ? { ptySize: { cols: process.stdout.columns, rows: process.stdout.rows } } : {}),
  });
}

/**
 * The process's output to our stdout and stderr. A slow reader of our stdout (a pipe) holds the
 * stream back end to end instead of us buffering it. `stdoutGone`: our stdout's reader went away.
 */
function streamOutput(client: ExecServerClient, handle: ProcessHandle, cleanup: Cleanup): { readonly stdoutGone: boolean } {
  const state = { held: false, stdoutGone: false };
  // Our reader went away (e.g. `| head`): stop the command, as a local pipeline would. No
  // 'drain' will ever come, so read again (or the exit would never arrive) and drop its output.
  const onOutputError = () => {
    state.stdoutGone = true;
    state.held = false;
    client.setIncomingPaused(false);
    void handle.terminate().catch(() => undefined);
  };
  process.stdout.on('error', onOutputError);
  cleanup.add(() => process.stdout.off('error', onOutputError));
  handle.onEvent((e) => {
    if (e.type !== 'output') return;
    if (state.stdoutGone && e.stream !== 'stderr') return;
    const out = e.stream === 'stderr' ? process.stderr : process.stdout;
    if (!out.write(e.data) && !state.held) {
      state.held = true;
      client.setIncomingPaused(true);
      out.once('drain', () => {
        if (!state.held) return;
        state.held = false;
        client.setIncomingPaused(false);
      });
    }
  });
  return state;
}

/** Waits for the command's end and its output, says what the sandbox blocked, and gives the exit status. */
async function exitStatus(handle: ProcessHandle, args: RunArgs, output: { readonly stdoutGone: boolean }, say: Say): Promise<number> {
  try {
    const done = await handle.completion;
    await Promise.all([output.stdoutGone ? undefined : flushed(process.stdout), flushed(process.stderr)]);
    if (done.sandboxDenied && args.sandbox) reportSandboxDenial(done, args, args.sandbox, say);
    return done.exitCode < 0 ? 255 : done.exitCode & 0xff;
  } catch (e) {
    if (isExecClientError(e) && e.kind === 'outputLost') {
      // The output can no longer be exact: stop the command rather than let it run unobserved.
      await handle.terminate().catch(() => undefined);
    }
    throw e;
  }
}

/** A command the `policy` sandbox denied: what it blocked, and the line that runs it again with that allowed. */
function reportSandboxDenial(done: ProcessCompletion, args: RunArgs, policy: SandboxPolicyName, say: Say): void {
  if (done.sandboxDeniedTarget) {
    const host = done.sandboxDeniedTarget;
    say(
      `sandbox denied: the sandbox blocked ${host} (\`${shellLine(args.argv)}\`, exit status ${done.exitCode}).` +
        ` If you trust it, allow it: ${rerunLine({ ...args, networkAllow: [...args.networkAllow, host] })}`,
    );
  } else {
    const net = args.sandboxNetwork ? '' : ' (network off)';
    say(
      `sandbox denied: \`${shellLine(args.argv)}\` was blocked by the ${policy} sandbox${net} (exit status ${done.exitCode}).` +
        ` If you trust it, run it again without the sandbox: ${rerunLine({ ...args, sandbox: 'full-access', networkAllow: [], networkDeny: [] })}`,
    );
  }
}

/** Resolves when everything written so far reached the OS (process.exit would drop the rest). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise<void>((resolvePromise) => {
    if (stream.writableLength === 0) resolvePromise();
    else stream.write('', () => resolvePromise());
  });
}

/** `bundled`: the server is our own child on loopback, so a lost connection most likely means it exited (which is said then). */
function watchConnection(client: ExecServerClient, say: (line: string) => void, bundled: boolean): void {
  let lostAt = 0;
  client.onDidChangeState((s: ConnectionState) => {
    if (s.kind === 'recovering' && s.attempt === 0) {
      lostAt = Date.now();
      const limit =
        s.until !== undefined ? `for up to ${formatDuration(s.until - s.since)}` : 'until the executor says the session is gone';
      say(`connection lost (${s.cause}); resuming ${limit}${bundled ? '' : ' — the command keeps running on the executor'}`);
    } else if (s.kind === 'connected' && lostAt > 0) {
      say(`resumed after ${Date.now() - lostAt} ms`);
      lostAt = 0;
    }
  });
}

/** Our stdin → the process's, one write at a time (stdin is paused while a write is on the wire). */
function forwardStdin(handle: ProcessHandle, raw: boolean): () => void {
  const stdin = process.stdin;
  if (raw) stdin.setRawMode(true);
  const onData = (chunk: Buffer) => {
    stdin.pause();
    handle.write(chunk).then(
      () => stdin.resume(),
      // The process exited or closed its stdin: stop reading ours.
      () => stdin.off('data', onData),
    );
  };
  stdin.on('data', onData);
  return () => {
    stdin.off('data', onData);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
    stdin.unref?.();
  };
}

interface HeldSignals {
  interrupts: number;
  terminate: boolean;
}

/**
 * While the start is being answered: a Ctrl-C (or SIGTERM) is held and given to the command once
 * it is known (`forwardInterrupts`); a second Ctrl-C quits at once, so that a start the executor
 * never answers can still be left, and says the command may then run on there.
 */
function holdSignalsDuringStart(say: (line: string) => void): { stop(): void; held(): HeldSignals } {
  const held: HeldSignals = { interrupts: 0, terminate: false };
  const quitting = (status: number) => {
    say('quitting before the executor answered the start: the command may have started there and run on until its session ends');
    process.exit(status);
  };
  const onSigint = () => {
    if (++held.interrupts > 1) return quitting(130);
    say('interrupt: waiting for the executor to answer the start, then the command gets it (Ctrl-C again to quit now)');
  };
  let termTimer: NodeJS.Timeout | undefined;
  const onSigterm = () => {
    held.terminate = true;
    termTimer ??= setTimeout(() => quitting(143), TERMINATE_WAIT_MS);
    termTimer.unref();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  return {
    stop: () => {
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigterm);
      if (termTimer) clearTimeout(termTimer);
    },
    held: () => held,
  };
}

/** How long a terminate may wait for the executor before `run` exits anyway (the connection may be down for hours). */
const TERMINATE_WAIT_MS = 5_000;

/**
 * SIGINT → interrupt (a TTY process gets the Ctrl-C byte); a second within 2 s → terminate;
 * SIGTERM → terminate. A terminate waits for the connection, which with `--deadline-ms 0` may be
 * down for the night: after TERMINATE_WAIT_MS `run` exits (255) and says the command may still run.
 */
function forwardInterrupts(handle: ProcessHandle, say: (line: string) => void, held: HeldSignals): () => void {
  let last = 0;
  let exitTimer: NodeJS.Timeout | undefined;
  const terminate = () => {
    void handle.terminate().catch(() => undefined);
    exitTimer ??= setTimeout(() => {
      say(
        `the executor did not answer the terminate within ${TERMINATE_WAIT_MS / 1000} s (the connection is down); exiting — the command may still run there until its session ends`,
      );
      process.exit(255);
    }, TERMINATE_WAIT_MS);
    exitTimer.unref();
  };
  const onSigint = () => {
    const now = Date.now();
    if (now - last < 2_000) {
      say('terminating');
      terminate();
    } else {
      void handle.write('\x03').catch(() => undefined);
    }
    last = now;
  };
  const onSigterm = () => terminate();
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  // What came while the start was answered, now that there is a process to give it to.
  if (held.terminate || held.interrupts > 1) terminate();
  else if (held.interrupts === 1) onSigint();
  return () => {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    if (exitTimer) clearTimeout(exitTimer);
  };
}

function forwardResize(handle: ProcessHandle): () => void {
  const onResize = () => void handle.resize(process.stdout.columns, process.stdout.rows).catch(() => undefined);
  process.stdout.on('resize', onResize);
  return () => process.stdout.off('resize', onResize);
}

/** Undo actions, run last-in first-out; one failing does not stop the others. */
class Cleanup {
  private readonly actions: Array<() => unknown> = [];
  add(action: () => unknown): void {
    this.actions.push(action);
  }
  async run(): Promise<void> {
    for (const a of this.actions.reverse()) {
      try {
        await a();
      } catch {
        // keep going
      }
    }
  }
}
