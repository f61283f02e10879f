import type { SandboxType, ManagedNetworkSandboxContext } from '../protocol';
import type { CarveOut } from './sandbox/carveOutGuard';
import type { TransientDir } from './sandbox/coverRace';

/** What the process runner asks the sandbox layer to plan. Paths are local (already decoded). */
export interface SpawnRequest {
  argv: string[];
  arg0?: string | null;
  cwd: string;
  env: Record<string, string>;
  tty: boolean;
  /** The wire `sandbox` value; absent or null means no sandbox. */
  sandbox: unknown;
  /** Managed network (`enforceManagedNetwork` with our lists): only these destinations, through the executor's proxy. */
  managedNetwork?: { allow: string[]; deny?: string[] };
  /**
   * Codex's managed network (`enforceManagedNetwork` with its prepared context): the proxy is the
   * orchestrator's, already named in `env`; only these host loopback ports may be reached.
   */
  managedNetworkPorts?: ManagedNetworkSandboxContext;
}

/** How to actually start it: the program and args (possibly a sandbox launcher around argv). */
export interface SpawnPlan {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  sandboxType: SandboxType;
  /** The command really runs restricted (only then can a failure be a sandbox denial). */
  restricted: boolean;
  /** Decides `sandboxDenied` once, after exit, over the retained output. */
  isDenial(exitCode: number, output: Buffer[]): boolean;
  /** Managed network: the last destination (`host:port`) its proxy refused while this ran. */
  networkDenial?(): string | undefined;
  /** Managed network: each refusal as it happens, while the plan lives; returns the unsubscribe. */
  onNetworkDenial?(listener: (d: { target: string; reason: string }) => void): () => void;
  /** Releases what the plan created (temp files). Called once after the process is closed. */
  dispose(): void;
  /**
   * Pipes only: the same start without a shell launcher. `files` are opened read-only and handed
   * to the child as fds 3, 4, … (node-pty cannot pass extra fds, so PTYs use `file`/`args`).
   */
  pipeLaunch?: Launch;
  /** Pipes only: this start may use a sandbox started ahead of time (see `SandboxPrewarmer`). */
  prewarm?: PrewarmSpec;
  /**
   * The carve-outs inside writable roots whose mounts the sandbox relies on: a running sandbox is
   * stopped when one changes on the host (./sandbox/carveOutGuard.ts).
   */
  carveOuts?: CarveOut[];
  /** Pipes only: other servers' private directories the sandbox covers (a start that meets one vanishing runs again, ./sandbox/coverRace.ts). */
  covers?: string[];
  /** Pipes only: other processes' directories the sandbox hides under a tmpfs, as planned (likewise: one that vanishes under bwrap runs the start again). */
  transient?: TransientDir[];
}

export interface Launch {
  file: string;
  args: string[];
  /** Opened read-only and passed as fds 3, 4, …, in order. */
  files: string[];
}

/**
 * A sandbox can be built before its command is known: bwrap starts a stub (a shell reading its
 * script on stdin) inside the finished namespaces and mounts, and waits. A start with the same
 * `key` and `fingerprint` then only writes `script` to it. `key` names everything the sandbox was
 * built from (namespaces, mounts, cwd); `fingerprint` the host state the mounts captured (mount
 * table, identity of each bound path), so a workspace deleted and made again, or a new host mount,
 * never meets a sandbox built before it.
 */
export interface PrewarmSpec {
  /** What must match exactly (everything but `covers`). */
  key: string;
  /**
   * Other servers' private directories the sandbox covers. A waiting sandbox serves a start whose
   * covers are all among its own (hiding more is safe; hiding less is not).
   */
  covers?: string[];
  /**
   * Starts the stub sandbox. Its fd 0 is the script pipe, 1–2 stdout/stderr, `files` follow from
   * fd 3, and the command's real stdin comes right after them (the script moves it to 0).
   */
  launch: Launch;
  /** Computed when the sandbox is built and again at each start; only equal values may meet. */
  fingerprint(): string;
  /** Shell text for the stub: execs the command with its exact argv, environment and stdin. */
  script: string;
  /** A pre-started sandbox holds what its mounts rely on (placeholder stubs) until it ends. */
  retain(): () => void;
  /** It needs placeholder directories on the host (visible in the workspace while it waits). */
  holdsPlaceholders: boolean;
  /**
   * A managed network: each pre-started sandbox has listeners of its own (its own proxy, socket
   * folder and denials), started with it; `key` names the lists they enforce. The start that
   * takes the sandbox takes them too, so its denials stay its own and close with it.
   */
  listeners?: {
    /** Starts fresh listeners for one sandbox; `launch.args` is ignored in favour of `args`. */
    start(): Promise<PrewarmListeners>;
    /**
     * This start now runs with `l` (its denials are read there, its dispose closes them); false if
     * they do not serve exactly this start's snapshot (then the sandbox is not used).
     */
    adopt(l: PrewarmListeners): boolean;
  };
}

/** Listeners made for one pre-started sandbox (see `PrewarmSpec.listeners`). */
export interface PrewarmListeners {
  /** The stub's launch args, bound to these listeners. */
  args: string[];
  /** Closes them (the sandbox was never used). Idempotent. */
  release(): void;
}

export type SpawnPlanner = (req: SpawnRequest) => Promise<SpawnPlan>;

/**
 * `argv`, run so that the program sees `arg0` as its argv[0] when that differs from `argv[0]`:
 * through bash's `exec -a` (spawners like bwrap 0.8 and node-pty cannot set argv[0] themselves).
 * `--norc`: bash would otherwise read ~/.bashrc when stdin is a socket (its "rshd" heuristic).
 */
export function argvWithArg0(argv: readonly string[], arg0: string | null | undefined): string[] {
  const [file, ...rest] = argv;
  if (arg0 === undefined || arg0 === null || arg0 === file) return [...argv];
  return ['/bin/bash', '--norc', '--noprofile', '-c', 'exec -a "$0" "$@"', arg0, file!, ...rest];
}

/** The plan for a start without a sandbox: run argv as it is. */
export async function planUnsandboxed(req: SpawnRequest): Promise<SpawnPlan> {
  if ((req.sandbox !== undefined && req.sandbox !== null) || req.managedNetwork || req.managedNetworkPorts) {
    throw new Error('this exec-server was started without sandbox support; refusing to run the command unsandboxed');
  }
  return passthroughPlan(req);
}

/** Run argv as it is: nothing restricted, so nothing can be a denial. */
export function passthroughPlan(req: SpawnRequest): SpawnPlan {
  return {
    file: req.argv[0]!,
    args: req.argv.slice(1),
    env: req.env,
    cwd: req.cwd,
    sandboxType: 'none',
    restricted: false,
    isDenial: () => false,
    dispose: () => undefined,
  };
}

/** After a restricted plan's failed exit: whether the sandbox caused it, and the destination its proxy refused. */
export function judgeExit(plan: SpawnPlan, code: number, output: Buffer[]): [boolean, string | undefined] {
  try {
    const denied = plan.isDenial(code, output);
    return [denied, denied ? plan.networkDenial?.() : undefined];
  } catch {
    return [false, undefined];
  }
}
