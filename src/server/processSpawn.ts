import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync, statSync } from 'node:fs';
import type { Socket } from 'node:net';
import { isAbsolute, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import { isManagedNetworkLists, ManagedNetworkField } from '../protocol';
import type { ProcessStartRequest, ManagedNetworkLists, ManagedNetworkSandboxContext } from '../protocol';
import { RpcError } from '../rpc';
import { buildChildEnv } from './childEnv';
import { ENV_TOOL, findOnPath, isExecutableFile } from './executables';
import { closeChildEnds, type FifoPool } from './fifoPool';
import type { SandboxPrewarmer } from './prewarm';
import { SandboxUnavailableError } from './sandbox/errors';
import { argvWithArg0, type SpawnPlan, type SpawnPlanner } from './spawnPlan';
import { pathFromUri } from './uri';

/*
 * Starting a process: a `process/start` request becomes a plan (argv[0] resolved, sandbox applied),
 * and the plan a running child — on pipes (FIFOs, socket pairs, or a pre-started sandbox) or on a
 * PTY. What happens after the start (output, exit, seq numbers) is ./managedProcess.ts.
 */

let ptyModule: typeof NodePty | undefined;
function loadPty(): typeof NodePty {
  // Loaded on first use: a server that never starts a PTY never loads the native addon.
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ptyModule ??= require('node-pty') as typeof NodePty;
  } catch (e) {
    // E.g. an SSH host of another platform than the editor's: no node-pty build was shipped.
    const why = String((e as Error).message).split('\n')[0];
    throw new Error(
      `terminals (PTYs) are not available on this executor (${process.platform}-${process.arch}: ${why}); commands without a terminal work`,
    );
  }
  return ptyModule;
}

function spawnNotFound(): RpcError {
  return RpcError.internal('No such file or directory (os error 2)', { kind: 'spawnNotFound' });
}

/** argv[0] resolved as execvp would: through the child's PATH (or ours if it has none). */
function resolveExecutable(file: string, cwd: string, pathVar: string | undefined): string {
  if (file.includes('/')) {
    const p = isAbsolute(file) ? file : join(cwd, file);
    try {
      statSync(p);
    } catch {
      throw spawnNotFound();
    }
    if (!isExecutableFile(p)) throw RpcError.internal('Permission denied (os error 13)', { kind: 'spawnPermissionDenied' });
    return p;
  }
  // Relative entries are tried as they are (against our cwd), as before.
  const found = findOnPath(file, pathVar, { relativeDirs: true });
  if (found === undefined) throw spawnNotFound();
  return found;
}

let lastTurn: Promise<void> = Promise.resolve();

/**
 * Resolves when it is this start's turn to spawn: one spawn per turn of the event loop. A burst of
 * starts otherwise forks back to back in one turn (each fork costs ~1–2 ms, more in a bigger server),
 * and no child's exit, output or `closed` is handled until the last of them has been spawned.
 */
export function spawnTurn(): Promise<void> {
  const turn = lastTurn.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  lastTurn = turn;
  return turn;
}

/** A start request checked and planned: what to spawn, and argv[0] as resolved on the child's PATH. */
export interface PlannedStart {
  plan: SpawnPlan;
  argv0: string;
}

/** Checks a `process/start` request and asks the planner how to run it; nothing is spawned yet. */
export async function planStart(req: ProcessStartRequest, planner: SpawnPlanner): Promise<PlannedStart> {
  if (req.argv.length === 0) throw RpcError.invalidParams('argv must not be empty');
  let managedNetwork: ManagedNetworkLists | undefined;
  let managedNetworkPorts: ManagedNetworkSandboxContext | undefined;
  if (req.networkProxy !== undefined && req.networkProxy !== null)
    // Codex's executor-launched proxy: we announce `networkProxyLaunch: false`, and ignoring it could
    // leave a command without the proxy its orchestrator meant it to have.
    throw RpcError.internal(
      'networkProxy (an executor-launched codex proxy) is not supported on this exec-server (capability networkProxyLaunch is false); the command was not run',
      { kind: 'unsupported' },
    );
  if (req.enforceManagedNetwork) {
    // Ours: the lists (`{allow, deny?}`). Codex's: its prepared context (`{loopbackPorts, …}`), the
    // proxy being the orchestrator's. Anything else fails closed: we must not run as if we
    // enforced a network policy we cannot read. Without a `managedNetwork` at all, codex fails closed too.
    const parsed =
      req.managedNetwork === undefined || req.managedNetwork === null ? undefined : ManagedNetworkField.safeParse(req.managedNetwork);
    if (!parsed?.success)
      throw RpcError.internal(
        "enforceManagedNetwork needs managedNetwork: our {allow: [...], deny?: [...]} or codex's {loopbackPorts: [...]} with the proxy env; the command was not run",
        { kind: 'unsupported' },
      );
    if (isManagedNetworkLists(parsed.data)) managedNetwork = parsed.data;
    else managedNetworkPorts = parsed.data;
  }
  const cwd = pathFromUri(req.cwd, 'cwd');
  const env = buildChildEnv(req.env, req.envPolicy);
  try {
    if (!statSync(cwd).isDirectory()) throw spawnNotFound();
  } catch (e) {
    throw e instanceof RpcError ? e : spawnNotFound();
  }
  const argv0 = resolveExecutable(req.argv[0]!, cwd, env.PATH ?? process.env.PATH);
  let plan: SpawnPlan;
  try {
    // The planner gets the resolved program and the name the child should see as argv[0].
    plan = await planner({
      argv: [argv0, ...req.argv.slice(1)],
      arg0: req.arg0 ?? req.argv[0],
      cwd,
      env,
      tty: req.tty,
      sandbox: req.sandbox ?? null,
      ...(managedNetwork ? { managedNetwork } : {}),
      ...(managedNetworkPorts ? { managedNetworkPorts } : {}),
    });
  } catch (e) {
    if (e instanceof RpcError) throw e;
    // `reason` lets clients show why without parsing the message (the message stays as it was).
    const message = (e as Error).message;
    const reason = e instanceof SandboxUnavailableError ? e.reason : message;
    throw RpcError.internal(`sandbox unavailable: ${message}`, { kind: 'sandboxUnavailable', reason });
  }
  return { plan, argv0 };
}

/**
 * node-pty execs its `file` with argv[0] = file and cannot set argv0 itself. So that a PTY child sees
 * the name it was asked for (argv[0] as given, or `arg0`), pass the name when PATH lookup in the
 * child finds the same program, and use `exec -a` in bash for an explicit `arg0`.
 */
export function ptyLaunch(
  plan: SpawnPlan,
  resolved: string,
  requested: string,
  arg0: string | null | undefined,
): { file: string; args: string[] } {
  if (plan.file !== resolved) return { file: plan.file, args: plan.args }; // a sandbox launcher handles argv[0]
  if (arg0 && arg0 !== requested && existsSync('/bin/bash')) {
    const [file, ...args] = argvWithArg0([resolved, ...plan.args], arg0);
    return { file: file!, args };
  }
  // `resolved` came from this same PATH, so the child's execvp finds the same program by name.
  const viaPath = !requested.includes('/') && plan.env.PATH !== undefined;
  return { file: viaPath ? requested : resolved, args: plan.args };
}

/** Starts a PTY child; the caller attaches to its events in the same turn. */
export function spawnPty(launch: { file: string; args: string[] }, plan: SpawnPlan, size: { cols: number; rows: number }): IPty {
  // node-pty copies the env by assignment, which drops a variable named `__proto__`: `env` sets it.
  if (Object.hasOwn(plan.env, '__proto__') && ENV_TOOL)
    launch = { file: ENV_TOOL, args: [`__proto__=${plan.env['__proto__']}`, launch.file, ...launch.args] };
  return loadPty().spawn(launch.file, launch.args, {
    name: plan.env.TERM ?? 'xterm-256color',
    cols: size.cols,
    rows: size.rows,
    cwd: plan.cwd,
    env: plan.env,
    encoding: null,
  });
}

/** A child started on pipes. Adopt it (listen to its streams) first, then call `begin`. */
export interface PipeChild {
  child: ChildProcess;
  /** Our ends of its stdio: stdin (only when piped), stdout, stderr. */
  streams: Array<Readable | Writable>;
  /** Releases the pre-started sandbox it runs in, if it runs in one. */
  release?: () => void;
  /** Lets the command run (a pre-started sandbox gets its script) and builds a sandbox for the next start like it. */
  begin(): void;
}

/**
 * Starts a child on pipes: in a matching pre-started sandbox if there is one, else on FIFOs from
 * `fifos` (socket pairs if none). `argv0` is what the child sees as argv[0]; `closed` resolves when
 * this process is closed (the next pre-started sandbox is built after that).
 */
export async function spawnPipes(
  plan: SpawnPlan,
  argv0: string | undefined,
  pipeStdin: boolean,
  options: { fifos?: FifoPool; prewarm?: SandboxPrewarmer },
  closed: Promise<void>,
): Promise<PipeChild> {
  const prewarmer = plan.prewarm && options.prewarm?.enabled ? options.prewarm : undefined;
  const warm = prewarmer?.take(plan.prewarm!, pipeStdin);
  if (warm) {
    return {
      child: warm.child,
      streams: warm.ends,
      release: warm.release,
      begin: () => {
        warm.run(plan.prewarm!.script);
        prewarmer!.prepare(plan.prewarm!, pipeStdin, closed); // for the next start like this one
      },
    };
  }
  const fifos = options.fifos;
  let ends: Array<{ ours: Socket; childFd: number }> | undefined;
  if (fifos?.available) {
    try {
      ends = await fifos.open(pipeStdin ? [true, false, false] : [false, false]);
    } catch {
      ends = undefined; // fall back to socket pairs rather than fail the start
    }
  }
  const fds = ends?.map((e) => e.childFd);
  const stdio: Array<'pipe' | 'ignore' | number> = fds
    ? pipeStdin
      ? [fds[0]!, fds[1]!, fds[2]!]
      : ['ignore', fds[0]!, fds[1]!]
    : [pipeStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'];
  const launch = plan.pipeLaunch ?? { file: plan.file, args: plan.args, files: [] };
  // Right before the fork: starts that waited together (for FIFOs) still fork one per turn.
  await spawnTurn();
  const fileFds: number[] = [];
  let child: ChildProcess;
  try {
    for (const f of launch.files) fileFds.push(openSync(f, 'r'));
    child = spawn(launch.file, launch.args, {
      cwd: plan.cwd,
      env: plan.env,
      argv0,
      // Own process group and session: signals and kills address the whole group.
      detached: true,
      stdio: [...stdio, ...fileFds],
    });
  } catch (e) {
    for (const end of ends ?? []) end.ours.destroy();
    throw RpcError.internal(`${(e as Error).message}`, { kind: 'spawnFailed' });
  } finally {
    // The child has its copies (fork happened synchronously); ours would keep the pipes open.
    closeChildEnds([...(fds ?? []), ...fileFds]);
  }
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (e: NodeJS.ErrnoException) => {
        reject(e.code === 'ENOENT' ? spawnNotFound() : RpcError.internal(`${e.message}`, { kind: 'spawnFailed' }));
      });
    });
  } catch (e) {
    for (const end of ends ?? []) end.ours.destroy();
    throw e;
  }
  return {
    child,
    streams: ends ? ends.map((e) => e.ours) : [...(child.stdin ? [child.stdin] : []), child.stdout!, child.stderr!],
    begin: () => prewarmer?.prepare(plan.prewarm!, pipeStdin, closed),
  };
}
