import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { privateDir, privateDirCandidates } from '../../util/privateDir';
import { shellLine } from '../../util/shellQuote';
import { ENV_TOOL, findOnPath, isExecutableFile } from '../executables';
import { argvWithArg0, passthroughPlan, type SpawnPlan, type SpawnRequest } from '../spawnPlan';
import { bwrapArgs } from './bwrapArgs';
import { classifyExit, type DenialContext, type DenialVerdict } from './denial';
import { computeLayout, type Layout } from './layout';
import { resolvePolicy, SandboxUnsupportedError, type ResolvedPolicy } from './policy';
import { keyringOffFilter, networkOffFilter } from './seccomp';
import { SANDBOX_EXEC, seatbeltArgs, seatbeltProfile } from './seatbelt';

export type { SpawnPlan, SpawnRequest } from '../spawnPlan';
export { classifyExit, type DenialContext, type DenialVerdict } from './denial';
export { SandboxUnsupportedError } from './policy';

/** A sandboxed start that cannot be honoured. The message says what to do; the command did not run. */
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

export interface SandboxOptions {
  /** bubblewrap binary (default: $BWRAP_PATH, else `bwrap` on the server's PATH). */
  bwrapPath?: string;
}

/** A plan plus what the heuristic knows, for callers that want more than a boolean. */
export interface SandboxedSpawnPlan extends SpawnPlan {
  /** The full verdict behind `isDenial` (kind and the evidence line). */
  classify(exitCode: number, output: Buffer[]): DenialVerdict;
}

/**
 * Plans how to start a command: as it is (no sandbox or full access), or wrapped in the platform
 * sandbox. Never silently runs a sandboxed request unsandboxed: if the sandbox cannot be applied it
 * throws `SandboxUnavailableError` (or `SandboxUnsupportedError` for requests it cannot enforce).
 */
export async function planSpawn(req: SpawnRequest, opts: SandboxOptions = {}): Promise<SandboxedSpawnPlan> {
  return sharedPlanner(opts.bwrapPath).plan(req);
}

// One planner per bwrap path: it caches the (successful) bwrap probe and owns the placeholder registry.
const planners = new Map<string, SandboxPlanner>();
function sharedPlanner(bwrapPath: string | undefined): SandboxPlanner {
  const key = bwrapPath ?? '';
  let p = planners.get(key);
  if (!p) planners.set(key, (p = new SandboxPlanner({ bwrapPath })));
  return p;
}

export class SandboxPlanner {
  private bwrapReady: Promise<string> | undefined;
  private bwrapWorks = false;
  private readonly seccompPrograms = new Map<'net-off' | 'keyring-off', Buffer | null>();
  /** Placeholder stubs on the host for missing carve-outs that this planner claims, with their users. */
  private readonly stubs = new Map<string, number>();
  /** Stubs this planner made, or found claimed by another server: the last user removes them. */
  private readonly removable = new Set<string>();
  /** The file that marks a stub as in use by this planner (see `claimStub`). */
  private readonly claimName = `${CLAIM_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly opts: SandboxOptions & { platform?: NodeJS.Platform; stateDir?: string } = {},
  ) {}

  /** Whether sandboxed starts can run here, as far as the last check knows. */
  get available(): boolean {
    const platform = this.opts.platform ?? process.platform;
    if (platform === 'darwin') return isExecutableFile(SANDBOX_EXEC);
    return platform === 'linux' && this.bwrapWorks;
  }

  /** Checks now that a sandbox can be built here; undefined if it can, else what to fix. */
  async check(): Promise<string | undefined> {
    const platform = this.opts.platform ?? process.platform;
    if (platform === 'darwin') return this.available ? undefined : `${SANDBOX_EXEC} is missing`;
    if (platform !== 'linux') return `no sandbox is available on ${platform} (only Linux with bubblewrap and macOS with Seatbelt)`;
    try {
      await this.bwrap();
      return undefined;
    } catch (e) {
      return (e as Error).message.replace(/ The command was not run\.$/, '');
    }
  }

  async plan(req: SpawnRequest): Promise<SandboxedSpawnPlan> {
    if (req.argv.length === 0) throw new SandboxUnsupportedError('argv must not be empty');
    const policy = resolvePolicy(req.sandbox, req.cwd, req.env);
    if (policy.unrestricted) return unsandboxedPlan(req);
    const platform = this.opts.platform ?? process.platform;
    if (platform === 'linux') return this.planLinux(req, policy);
    if (platform === 'darwin') return this.planMac(req, policy);
    throw new SandboxUnavailableError(`no sandbox is available on ${platform} (only Linux with bubblewrap and macOS with Seatbelt); the command was not run. Start it without a sandbox (full access) if you trust it.`);
  }

  private async planLinux(req: SpawnRequest, policy: ResolvedPolicy): Promise<SandboxedSpawnPlan> {
    const bwrap = await this.bwrap();
    // A stub is a directory that holds nothing but claims (ours or another server's); one that
    // someone filled (e.g. `git init` on the host) is a real directory again.
    const layout = computeLayout(policy, isClaimedStub);
    // Every sandbox hides our private directory (FIFOs, the filter, tokens) and that of any other
    // server of this user: a pipe end or a secret reachable by path would be a way out.
    const hidden = [...new Set([this.stateDir(), ...privateDirCandidates()])].filter(ensureDir);
    // Network off: the full filter. Network on: still no kernel keyrings (they are not namespaced).
    const seccomp = this.seccompFile(policy.network === 'restricted' ? 'net-off' : 'keyring-off');
    const files = seccomp ? [seccomp] : [];
    const argv = [commandName(req), ...req.argv.slice(1)];
    const arg0 = req.arg0 && req.arg0 !== argv[0] ? req.arg0 : null;
    const sandbox = {
      layout,
      network: policy.network,
      cwd: req.cwd,
      seccompFd: seccomp ? 3 : undefined,
      tty: req.tty,
      asRoot: process.getuid?.() === 0,
      hidden,
    };
    const args = bwrapArgs({ ...sandbox, argv, arg0 });
    const placeholders = layout.mounts.filter((m) => m.kind === 'placeholder').map((m) => m.path);
    const retain = (): (() => void) => {
      for (const p of placeholders) this.retainStub(p);
      return () => placeholders.forEach((p) => this.releaseStub(p));
    };
    // node-pty has no spare fds to give, so for a PTY a tiny shell opens the filter as fd 3 and
    // execs bwrap, which reads it and closes it before running the command. Pipes get it directly.
    const launch = seccomp ? { file: '/bin/sh', args: ['-c', 'exec 3<"$0" && exec "$@"', seccomp, bwrap, ...args] } : { file: bwrap, args };
    const plan = this.finish(req, policy, layout, 'linuxSeccomp', launch, retain());
    if (req.tty) return plan;
    plan.pipeLaunch = { file: bwrap, args, files };
    // bwrap's --chdir also sets PWD; the pre-started sandbox's chdir happened before the command was known.
    const script = stubScript(files.length + 3, argvWithArg0(argv, arg0), { ...req.env, PWD: req.cwd });
    if (script === undefined) return plan;
    const stubArgs = bwrapArgs({ ...sandbox, argv: [...PREWARM_STUB], arg0: null });
    plan.prewarm = {
      key: JSON.stringify([bwrap, stubArgs, files]),
      launch: { file: bwrap, args: stubArgs, files },
      fingerprint: () => hostFingerprint(layout),
      script,
      retain,
      holdsPlaceholders: placeholders.length > 0,
    };
    return plan;
  }

  private planMac(req: SpawnRequest, policy: ResolvedPolicy): SandboxedSpawnPlan {
    const layout = computeLayout(policy);
    const profile = seatbeltProfile({
      layout,
      network: policy.network,
      deniedPaths: [
        ...layout.mounts.filter((m) => m.kind === 'deny-dir' || m.kind === 'deny-file' || (m.kind === 'placeholder' && m.mode === 0)).map((m) => m.path),
        ...privateDirCandidates(), // our FIFOs, tokens and state: never reachable from inside
      ],
      readableRoots: layout.mounts.filter((m) => m.kind === 'ro-bind' || m.kind === 'bind').map((m) => m.path),
    });
    const argv = argvWithArg0([commandName(req), ...req.argv.slice(1)], req.arg0);
    return this.finish(req, policy, layout, 'macosSeatbelt', { file: SANDBOX_EXEC, args: seatbeltArgs(profile, argv) }, () => undefined);
  }

  private finish(
    req: SpawnRequest,
    policy: ResolvedPolicy,
    layout: Layout,
    sandboxType: SpawnPlan['sandboxType'],
    launch: { file: string; args: string[] },
    release: () => void,
  ): SandboxedSpawnPlan {
    const ctx: DenialContext = {
      fsRestricted: policy.fs === 'restricted',
      networkRestricted: policy.network === 'restricted',
      cwd: req.cwd,
      writableRoots: layout.writableRoots,
      protectedPaths: layout.protectedPaths,
    };
    let disposed = false;
    return {
      ...launch,
      env: req.env,
      cwd: req.cwd,
      sandboxType,
      restricted: true,
      classify: (code, output) => classifyExit(code, output, ctx),
      isDenial: (code, output) => classifyExit(code, output, ctx).denied,
      dispose: () => {
        if (disposed) return;
        disposed = true;
        release();
      },
    };
  }

  /** Finds bwrap and checks once that it can build a sandbox here; fails closed with a fix-it. */
  private bwrap(): Promise<string> {
    if (!this.bwrapReady) {
      const attempt = (async () => probeBwrap(findBwrap(this.opts.bwrapPath)))();
      this.bwrapReady = attempt;
      attempt.then(
        () => (this.bwrapWorks = true),
        () => {
          // A failure is not cached: fixing the machine must not need a server restart.
          this.bwrapWorks = false;
          if (this.bwrapReady === attempt) this.bwrapReady = undefined;
        },
      );
    }
    return this.bwrapReady;
  }

  /** Where the seccomp program lives (created on first use). */
  get stateDirectory(): string {
    return this.stateDir();
  }

  /**
   * Where the seccomp program lives: `sandbox/` in our private directory, which no sandbox can see
   * (see `hiddenPaths`), so a sandboxed command can neither read nor swap the filter of the next one.
   */
  private stateDir(): string {
    if (this.opts.stateDir) return this.opts.stateDir;
    let dir: string;
    try {
      dir = join(privateDir(), 'sandbox');
      mkdirSync(dir, { mode: 0o700, recursive: true });
    } catch (e) {
      throw new SandboxUnavailableError(`${(e as Error).message}; the command was not run.`);
    }
    return (this.opts.stateDir = dir);
  }

  /**
   * The filter file, checked on every use (cheap: a few hundred bytes) and rewritten if it changed.
   * Undefined only for the keyring filter on an architecture we have no syscall table for (the
   * network-off one then fails closed instead).
   */
  private seccompFile(kind: 'net-off' | 'keyring-off'): string | undefined {
    let bpf = this.seccompPrograms.get(kind);
    if (bpf === undefined) {
      try {
        bpf = kind === 'net-off' ? networkOffFilter() : keyringOffFilter();
      } catch (e) {
        if (kind === 'net-off') {
          throw new SandboxUnavailableError(`cannot turn the network off on this machine: ${(e as Error).message}; the command was not run. Allow the network in the sandbox request or run on x86_64/arm64.`);
        }
        bpf = null;
      }
      this.seccompPrograms.set(kind, bpf);
    }
    if (bpf === null) return undefined;
    const file = join(this.stateDir(), `${kind}-${process.arch}-${createHash('sha256').update(bpf).digest('hex').slice(0, 16)}.bpf`);
    let current: Buffer | undefined;
    try {
      current = readFileSync(file);
    } catch {
      current = undefined;
    }
    if (!current || !current.equals(bpf)) {
      const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(tmp, bpf, { mode: 0o400, flag: 'wx' });
      renameSync(tmp, file);
    }
    return file;
  }

  private retainStub(p: string): void {
    // Claimed on every use, not only the first: the directory (and our claim) may have been
    // deleted on the host meanwhile (a workspace removed and made again).
    if (claimStub(p, this.claimName)) this.removable.add(p);
    this.stubs.set(p, (this.stubs.get(p) ?? 0) + 1);
  }

  /** The last user here drops this planner's claim; the last claim anywhere removes the stub. */
  private releaseStub(p: string): void {
    const n = (this.stubs.get(p) ?? 1) - 1;
    if (n > 0) {
      this.stubs.set(p, n);
      return;
    }
    this.stubs.delete(p);
    try {
      unlinkSync(join(p, this.claimName));
    } catch {
      // gone already
    }
    // An empty directory that was there before (not a stub of ours or another server's) stays.
    if (!this.removable.delete(p)) return;
    try {
      rmdirSync(p); // only succeeds for an empty directory: never removes anything real, nor a stub another server still claims
    } catch {
      // not there, claimed by another, or someone put content in it: leave it
    }
  }
}

/*
 * Placeholder stubs. A missing carve-out (`.git`, `.vscode`, `.codex`, a denied path) inside a
 * writable root is protected by mounting an empty read-only tmpfs at its path, and a mount needs
 * a directory there on the host. That directory must outlive every sandbox mounted on it: removed
 * on the host, its mount in a running sandbox is detached, and the command could then create the
 * protected path after all (measured). So each planner that uses a stub keeps a claim file in it
 * (`.exec-bridge-claim-<pid>-<id>`, hidden inside the sandbox by the tmpfs), and removes the
 * directory only with `rmdir`, which the kernel refuses while any other claim — another exec-server
 * on the same workspace — or anything real is in it. Claims of dead processes are swept.
 */
const CLAIM_PREFIX = '.exec-bridge-claim-';

/**
 * Puts our claim in the stub (making the directory if needed). True when the directory is a stub
 * (we made it, or another server's claim is in it); false for an empty directory that was already
 * there (someone's own, or one another server is removing this instant): used, but never removed.
 */
function claimStub(p: string, claimName: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    let stub: boolean;
    try {
      mkdirSync(p, { mode: 0o755 });
      stub = true;
    } catch {
      stub = safeReaddir(p).some((n) => n.startsWith(CLAIM_PREFIX) && n !== claimName);
    }
    try {
      writeFileSync(join(p, claimName), '', { flag: 'wx', mode: 0o600 });
      return stub;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return stub;
      if (code !== 'ENOENT') return false; // cannot claim (read-only, not a directory): bwrap reports what is wrong
      // removed between mkdir and claim by its last user elsewhere: make it again
    }
  }
  return false;
}

function safeReaddir(p: string): string[] {
  try {
    return readdirSync(p);
  } catch {
    return [];
  }
}

/** A directory holding only live claims (claims of dead processes are removed on the way). */
function isClaimedStub(p: string): boolean {
  let names: string[];
  try {
    names = readdirSync(p);
  } catch {
    return false;
  }
  // Empty: someone's own, or a stub whose last user elsewhere is removing it right now. An empty
  // read-only tmpfs over it shows the same, and does not break if it vanishes before bwrap mounts.
  if (names.length === 0) return true;
  let live = 0;
  for (const name of names) {
    if (!name.startsWith(CLAIM_PREFIX)) return false;
    const pid = Number(name.slice(CLAIM_PREFIX.length).split('-')[0]);
    if (pidAlive(pid)) {
      live++;
      continue;
    }
    try {
      unlinkSync(join(p, name));
    } catch {
      // swept by someone else
    }
  }
  if (live === 0) {
    try {
      rmdirSync(p); // a stub left by a server that died: it was never anything real
    } catch {
      // not empty after all
    }
  }
  return true;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes a private location exist (0700) before a sandbox binds its parent: one made later on the
 * host (by a server with another environment) would show in a sandbox that is already running.
 */
function ensureDir(p: string): boolean {
  try {
    mkdirSync(p, { mode: 0o700 });
  } catch {
    // exists already, or cannot be made (then there is nothing there to hide)
  }
  return lstatSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function unsandboxedPlan(req: SpawnRequest): SandboxedSpawnPlan {
  return { ...passthroughPlan(req), classify: () => ({ denied: false, kind: 'none' }) };
}

/**
 * The runner hands us argv[0] already resolved to an absolute path. bwrap looks the name up again
 * on the child's PATH, so when the original name (`arg0`) resolves to the same file there, pass
 * the name: the command then sees the argv[0] it would see unsandboxed.
 */
function commandName(req: SpawnRequest): string {
  const file = req.argv[0]!;
  const name = req.arg0;
  if (!name || name.includes('/') || !isAbsolute(file) || req.env.PATH === undefined) return file;
  return findOnPath(name, req.env.PATH) === file ? name : file;
}



// The stub execs through `env` (ENV_TOOL) so the command gets exactly its environment (sh would add PWD and drop odd names).

/** What waits in a pre-started sandbox: a shell reading its script on stdin (the name shows in `ps`). */
export const PREWARM_STUB = ['/bin/sh', '-s', 'exec-bridge-prewarm'] as const;

/**
 * The script a pre-started sandbox's stub reads on stdin: exec the command through `env -i` with
 * exactly `env`, its real stdin moved from `stdinFd` to 0. (Read from stdin, not by opening
 * /dev/fd/N: reopening a FIFO whose writer already closed would block forever.) Undefined when the
 * command cannot be expressed exactly that way (no `env` tool, a variable name `env` would
 * misread, a program path containing `=`): such a start builds its sandbox on the spot.
 */
export function stubScript(stdinFd: number, command: string[], env: Record<string, string>): string | undefined {
  if (!ENV_TOOL || command[0]!.includes('=')) return undefined;
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (k === '' || k.includes('=') || k.includes('\0') || v.includes('\0')) return undefined;
    pairs.push(`${k}=${v}`);
  }
  return `exec ${shellLine([ENV_TOOL, '-i', '--', ...pairs, ...command])} 0<&${stdinFd} ${stdinFd}<&-\n`;
}

/**
 * What a sandbox's mounts captured from the host: the mount table and the identity of every path
 * bound or covered (placeholders are ours and carry none). Equal before and after ⇒ a sandbox
 * built earlier sees what one built now would.
 */
function hostFingerprint(layout: Layout): string {
  let mounts: string;
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'latin1');
  } catch {
    mounts = `unreadable ${Math.random()}`; // never equal: no reuse without proof
  }
  const ids = [...layout.writableRoots, ...layout.mounts.filter((m) => m.kind !== 'placeholder').map((m) => m.path)].map((p) => {
    const st = lstatSync(p, { throwIfNoEntry: false, bigint: true });
    return st ? `${p}:${st.dev}:${st.ino}` : `${p}:-`;
  });
  return `${mounts}\n${ids.join('\n')}`;
}


const INSTALL_HINT =
  'install bubblewrap on the executor (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora/RHEL: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`) or point BWRAP_PATH (or `serve --bwrap-path`) at a bwrap binary';

export function findBwrap(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const configured = explicit ?? env.BWRAP_PATH;
  if (configured) {
    if (!isExecutableFile(configured)) throw new SandboxUnavailableError(`the configured bwrap (${configured}) is not an executable file; ${INSTALL_HINT}. The command was not run.`);
    return configured;
  }
  const found = findOnPath('bwrap', env.PATH);
  if (found !== undefined) return found;
  throw new SandboxUnavailableError(`the sandbox needs bubblewrap (bwrap), which is not installed on the executor; ${INSTALL_HINT}. The command was not run.`);
}

/**
 * Runs bwrap once with the namespaces and mounts every sandbox uses. If that fails, no sandboxed
 * command can run here: say why, and how to fix it.
 */
export function probeBwrap(bwrap: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolveProbe, reject) => {
    const args = ['--unshare-user', '--unshare-pid', '--unshare-net', '--die-with-parent', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--cap-drop', 'ALL', '--', 'true'];
    const child = spawn(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new SandboxUnavailableError(`could not run bwrap (${bwrap}): ${e.message}; ${INSTALL_HINT}. The command was not run.`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolveProbe(bwrap);
      reject(new SandboxUnavailableError(explainProbeFailure(stderr.trim() || `exit ${code ?? signal}`)));
    });
  });
}

export function explainProbeFailure(stderr: string): string {
  const s = stderr.toLowerCase();
  let fix: string;
  if (/setting up uid map|no permissions to create new namespace|creating new namespace failed|operation not permitted|permission denied/.test(s)) {
    fix =
      'user namespaces are not available to this user. Enable them (`sysctl -w kernel.unprivileged_userns_clone=1`, `sysctl -w user.max_user_namespaces=15000`; on Ubuntu 23.10+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or install an AppArmor profile for bwrap), run the exec-server as root, or, inside a container, allow namespaces (Docker: `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`)';
  } else if (/can't mount proc|mount proc|\/proc/.test(s)) {
    fix = 'bwrap cannot mount a private /proc here (a container with a masked /proc?); run the container with `--privileged` or without /proc masking';
  } else {
    fix = 'check that bwrap works: `bwrap --ro-bind / / --unshare-user --unshare-pid --unshare-net --proc /proc --dev /dev true`';
  }
  return `bubblewrap cannot create a sandbox on this executor (${stderr.split('\n')[0]}): ${fix}. The command was not run.`;
}
