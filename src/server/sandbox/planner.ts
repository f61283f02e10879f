import { lstatSync, mkdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { privateDir, privateDirCandidates, sandboxHiddenDirs, type HiddenDirs } from '../../util';
import { findOnPath, isExecutableFile } from '../executables';
import { argvWithArg0, passthroughPlan, type PrewarmListeners, type PrewarmSpec, type SpawnPlan, type SpawnRequest } from '../spawnPlan';
import { bwrapArgs } from './bwrapArgs';
import { findBwrap, probeBwrap } from './bwrapProbe';
import { classifyExit, type DenialContext, type DenialVerdict } from './denial';
import { hostLaunchEnv } from './hostLaunchEnv';
import { SandboxUnavailableError } from './errors';
import { SandboxStateFiles } from './stateFiles';
import type { CarveOut } from './carveOutGuard';
import { TransientDirs } from './coverRace';
import { computeLayout, makePlaceholderFolders, type Layout } from './layout';
import { rememberNestedIn } from './nestedScan';
import { isClaimedStub, PlaceholderClaims } from './placeholders';
import { isWithin, resolvePolicy, SandboxUnsupportedError, type ResolvedPolicy } from './policy';
import { hostFingerprint, PREWARM_STUB, stubScript } from './prewarmStub';
import { ManagedNetworks, type ManagedNetSnapshot } from './managedNet';
import { bridgeLauncher, launcherEnv } from './netBridge';
import { SANDBOX_EXEC, seatbeltArgs, seatbeltProfile } from './seatbelt';

export interface SandboxOptions {
  /** bubblewrap binary (default: $BWRAP_PATH, else `bwrap` in the system folders, never the server's PATH: ./bwrapProbe.ts). */
  bwrapPath?: string;
  /** Where the managed network's proxies log refusals and over-limit connections (default: nowhere). */
  log?: (line: string) => void;
}

/** A start's managed-network listeners, and who follows their refusals when they are replaced. */
interface NetRef {
  net?: ManagedNetSnapshot;
  watch?: (snap: ManagedNetSnapshot) => void;
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
  /** Placeholder stubs on the host for missing carve-outs that this planner claims (./placeholders.ts). */
  private readonly placeholders = new PlaceholderClaims();
  /** The managed network's proxies, started on first use (./managedNet.ts). */
  private readonly networks = new ManagedNetworks(
    () => this.files.stateDir(),
    (line) => this.opts.log?.(line),
  );
  /** Listeners made for pre-started sandboxes, until a start adopts them. */
  private readonly waitingNets = new WeakMap<PrewarmListeners, ManagedNetSnapshot>();

  constructor(
    private readonly opts: SandboxOptions & {
      platform?: NodeJS.Platform;
      stateDir?: string;
      /** Every server's private directories, to hide (default: `sandboxHiddenDirs`, src/util/privateDir.ts). */
      hiddenDirs?: () => HiddenDirs;
    } = {},
  ) {
    this.files = new SandboxStateFiles(opts.stateDir);
  }

  /** The seccomp programs' files, in the planner's state directory. */
  private readonly files: SandboxStateFiles;

  /** Where the seccomp programs live (created on first use). */
  get stateDirectory(): string {
    return this.files.stateDir();
  }

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
      return e instanceof SandboxUnavailableError ? e.reason : (e as Error).message;
    }
  }

  async plan(req: SpawnRequest): Promise<SandboxedSpawnPlan> {
    if (req.argv.length === 0) throw new SandboxUnsupportedError('argv must not be empty');
    const policy = resolvePolicy(req.sandbox, req.cwd, req.env);
    const managed = req.managedNetwork !== undefined || req.managedNetworkPorts !== undefined;
    if (managed && (policy.unrestricted || policy.network !== 'restricted'))
      throw new SandboxUnsupportedError(
        'a managed network needs a sandbox with the network restricted (its proxy is the only way out); the command was not run',
      );
    if (policy.unrestricted) return unsandboxedPlan(req);
    const platform = this.opts.platform ?? process.platform;
    if (platform !== 'linux' && platform !== 'darwin') {
      const reason = `no sandbox is available on ${platform} (only Linux with bubblewrap and macOS with Seatbelt).`;
      throw new SandboxUnavailableError(
        reason,
        `${reason.slice(0, -1)}; the command was not run. Start it without a sandbox (full access) if you trust it.`,
      );
    }
    // One snapshot: the proxy env and what the sandbox lets through come from the same object.
    // Each start has listeners of its own (released with its plan), so a refusal is its own.
    let net: ManagedNetSnapshot | undefined;
    const transport = platform === 'darwin' ? 'tcp' : 'unix';
    if (req.managedNetwork) net = await this.networks.snapshot(req.managedNetwork, transport);
    else if (req.managedNetworkPorts) net = await this.networks.prepared(req.managedNetworkPorts, req.env, transport);
    if (net) req = { ...req, env: { ...req.env, ...net.env } };
    try {
      return platform === 'linux' ? await this.planLinux(req, policy, net) : this.planMac(req, policy, net);
    } catch (e) {
      net?.release();
      throw e;
    }
  }

  /** How many starts hold managed-network listeners (a proxy or relays) now. */
  get managedNetworkListeners(): number {
    return this.networks.liveCount;
  }

  /** Closes every managed-network listener (the server is stopping). */
  close(): void {
    this.networks.close();
  }

  private async planLinux(req: SpawnRequest, policy: ResolvedPolicy, net?: ManagedNetSnapshot): Promise<SandboxedSpawnPlan> {
    const bwrap = await this.bwrap();
    // Every sandbox hides our private directory (FIFOs, the filter, tokens) and that of any other
    // server of this user, whatever its environment: a pipe end or a secret reachable by path would
    // be a way out. privateDir() first: it (re-)registers ours for the other servers' sandboxes.
    privateDir();
    const dirs = (this.opts.hiddenDirs ?? sandboxHiddenDirs)();
    // Other processes' directories are hidden while they are there; never made again here (see HiddenDirs.transient).
    const transient = new TransientDirs(dirs.transient);
    const present = (p: string) => (transient.has(p) ? transient.present(p) : ensureDir(p));
    const outer = outermost([this.files.stateDir(), ...dirs.own].filter(present), dirs.others);
    const hidden = outer.filter((p) => !dirs.others.includes(p));
    const covered = outer.filter((p) => dirs.others.includes(p));
    // A stub is a directory that holds nothing but claims (ours or another server's); one that
    // someone filled (e.g. `git init` on the host) is a real directory again. The folders above a
    // hidden directory are pinned like those above a carve-out: renamed, they took its tmpfs along,
    // and the command made the directory again with a seccomp program of its own, which the next
    // sandbox loaded (measured, `XDG_RUNTIME_DIR=/tmp/runtime-u`).
    // What nested scans found is kept for the next server too (./nestedScan.ts), beside the filters.
    rememberNestedIn(join(this.files.stateDir(), 'nested'));
    const computed = () => computeLayout(policy, isClaimedStub, outer);
    let layout = computed();
    // A placeholder's missing folders, made now, are pinned like any folder on the way (./layout.ts).
    if (makePlaceholderFolders(layout)) layout = computed();
    // Network off: the full filter. Network on: still no kernel keyrings (they are not namespaced).
    // Managed network: the launcher applies its own filter after the bridge is up (./netBridge.ts).
    const seccomp = net ? undefined : this.files.seccompFile(policy.network === 'restricted' ? 'net-off' : 'keyring-off');
    const managedNetwork = net
      ? {
          socketDir: net.socketDir!,
          launcher: bridgeLauncher({ routes: net.routes, filter: this.files.managedNetworkFilter() }),
        }
      : undefined;
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
      covered,
      managedNetwork,
    };
    // A managed network's launcher restores the command's env itself (every name prefixed until then, see ./netBridge.ts).
    const host = net ? { env: launcherEnv(req.env), moved: [] } : hostLaunchEnv(req.env);
    const args = bwrapArgs({ ...sandbox, argv, arg0, setenv: host.moved });
    const placeholders = layout.mounts.filter((m) => m.kind === 'placeholder').map((m) => m.path);
    const retain = (): (() => void) => {
      for (const p of placeholders) this.placeholders.retain(p);
      return () => placeholders.forEach((p) => this.placeholders.release(p));
    };
    // node-pty has no spare fds to give, so for a PTY a tiny shell opens the filter as fd 3 and
    // execs bwrap, which reads it and closes it before running the command. Pipes get it directly.
    const launch = seccomp ? { file: '/bin/sh', args: ['-c', 'exec 3<"$0" && exec "$@"', seccomp, bwrap, ...args] } : { file: bwrap, args };
    const netRef: NetRef = { net };
    const plan = this.finish({ ...req, env: host.env }, policy, layout, 'linuxSeccomp', launch, retain(), netRef);
    plan.carveOuts = carveOuts(layout);
    if (req.tty) return plan;
    plan.pipeLaunch = { file: bwrap, args, files };
    if (covered.length > 0) plan.covers = covered;
    const passing = transient.among(hidden);
    if (passing.length > 0) plan.transient = passing;
    // Codex's prepared context relays to its proxy on the spot (its ports come with each start).
    if (net && !req.managedNetwork) return plan;
    // bwrap's --chdir also sets PWD; the pre-started sandbox's chdir happened before the command was known.
    const script = stubScript(files.length + 3, argvWithArg0(argv, arg0), { ...req.env, PWD: req.cwd });
    if (script === undefined) return plan;
    const stubArgs = bwrapArgs({ ...sandbox, argv: [...PREWARM_STUB], arg0: null });
    // A managed network: the key names the lists (not this start's socket folder: each
    // pre-started sandbox has a folder and proxy of its own, see `managedListeners`).
    const lists = req.managedNetwork ? [req.managedNetwork.allow, req.managedNetwork.deny ?? []] : null;
    // The key leaves out the covers of other servers' private directories, and the pins above them:
    // a waiting sandbox that covers at least this start's (`covers`, checked by the prewarmer) hides
    // and pins all it must, so another server starting or stopping does not throw away every
    // sandbox built ahead of time.
    // Laid out again only when a pin lies above a covered folder (else the two layouts are the same).
    const coverPins = covered.some((c) => layout.pins?.some((p) => isWithin(c, p)));
    const keyLayout = coverPins ? computeLayout(policy, isClaimedStub, hidden) : layout;
    const keyArgs = bwrapArgs({
      ...sandbox,
      layout: keyLayout,
      covered: [],
      ...(net ? { managedNetwork: { ...managedNetwork!, socketDir: '' } } : {}),
      argv: [...PREWARM_STUB],
      arg0: null,
    });
    plan.prewarm = {
      key: JSON.stringify([bwrap, keyArgs, files, lists]),
      covers: covered,
      launch: { file: bwrap, args: stubArgs, files },
      // Likewise the host fingerprint: other servers' folders come and go (the covers check has them).
      fingerprint: () => hostFingerprint(keyLayout, req.cwd),
      script,
      retain,
      holdsPlaceholders: placeholders.length > 0,
      listeners:
        net && req.managedNetwork
          ? this.managedListeners(req.managedNetwork, netRef, (socketDir) =>
              bwrapArgs({ ...sandbox, managedNetwork: { ...managedNetwork!, socketDir }, argv: [...PREWARM_STUB], arg0: null }),
            )
          : undefined,
    };
    return plan;
  }

  private planMac(req: SpawnRequest, policy: ResolvedPolicy, net?: ManagedNetSnapshot): SandboxedSpawnPlan {
    const layout = computeLayout(policy);
    const dirs = (this.opts.hiddenDirs ?? sandboxHiddenDirs)();
    const profile = seatbeltProfile({
      layout,
      network: policy.network,
      proxyLoopbackPorts: net?.loopbackPorts,
      allowLocalBinding: net?.allowLocalBinding,
      deniedPaths: [
        ...layout.mounts
          .filter((m) => m.kind === 'deny-dir' || m.kind === 'deny-file' || (m.kind === 'placeholder' && m.mode === 0))
          .map((m) => m.path),
        // Our FIFOs, tokens and state, and every other server's: never reachable from inside. Seatbelt
        // denies by path, so this environment's candidates are denied even before they exist.
        ...new Set([...privateDirCandidates(), ...dirs.own, ...dirs.others]),
      ],
      readableRoots: layout.mounts.filter((m) => m.kind === 'ro-bind' || m.kind === 'bind').map((m) => m.path),
    });
    const argv = argvWithArg0([commandName(req), ...req.argv.slice(1)], req.arg0);
    return this.finish(req, policy, layout, 'macosSeatbelt', { file: SANDBOX_EXEC, args: seatbeltArgs(profile, argv) }, () => undefined, {
      net,
    });
  }

  /**
   * The listeners of one pre-started sandbox for these lists: a proxy of its own in a fresh
   * folder (marked as waiting). The start that takes the sandbox adopts them only if they serve
   * its own snapshot exactly (the same proxy env); its on-the-spot ones are then closed.
   */
  private managedListeners(
    lists: { allow: string[]; deny?: string[] },
    ref: NetRef,
    argsFor: (socketDir: string) => string[],
  ): NonNullable<PrewarmSpec['listeners']> {
    return {
      start: async () => {
        const snap = await this.networks.snapshot(lists, 'unix', true);
        const l = { args: argsFor(snap.socketDir!), release: snap.release };
        this.waitingNets.set(l, snap);
        return l;
      },
      adopt: (l) => {
        const snap = this.waitingNets.get(l);
        const own = ref.net;
        if (!snap || !own || !sameEnv(snap.env, own.env)) return false;
        this.waitingNets.delete(l);
        snap.claim();
        ref.net = snap;
        ref.watch?.(snap);
        setImmediate(() => own.release()); // the proxy made for an on-the-spot build, never used
        return true;
      },
    };
  }

  private finish(
    req: SpawnRequest,
    policy: ResolvedPolicy,
    layout: Layout,
    sandboxType: SpawnPlan['sandboxType'],
    launch: { file: string; args: string[] },
    release: () => void,
    /** The start's listeners; a pre-started sandbox's replace them when a start takes it. */
    ref: NetRef,
  ): SandboxedSpawnPlan {
    const ctx: DenialContext = {
      fsRestricted: policy.fs === 'restricted',
      networkRestricted: policy.network === 'restricted',
      cwd: req.cwd,
      writableRoots: layout.writableRoots,
      protectedPaths: layout.protectedPaths,
      pinnedFolders: layout.pins ?? [],
    };
    let disposed = false;
    // Refusals as they happen, from whichever listeners serve the start (they change when it takes a pre-started sandbox).
    const denialListeners = new Set<(d: { target: string; reason: string }) => void>();
    ref.watch = (snap) => snap.onDenial((d) => denialListeners.forEach((l) => l(d)));
    if (ref.net) ref.watch(ref.net);
    // A destination this start's proxy refused is the denial, named (the proxy serves this start alone).
    const classify = (code: number, output: Buffer[]): DenialVerdict => {
      const refused = code !== 0 ? ref.net?.lastDenial() : undefined;
      if (refused) return { denied: true, kind: 'network', evidence: `the sandbox blocked ${refused.target}` };
      return classifyExit(code, output, ctx);
    };
    return {
      ...launch,
      env: req.env,
      cwd: req.cwd,
      sandboxType,
      restricted: true,
      classify,
      isDenial: (code, output) => classify(code, output).denied,
      networkDenial: () => ref.net?.lastDenial()?.target,
      onNetworkDenial: (l) => {
        denialListeners.add(l);
        return () => void denialListeners.delete(l);
      },
      dispose: () => {
        if (disposed) return;
        disposed = true;
        release();
        ref.net?.release();
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

/**
 * The mounts on paths inside writable roots, which a change on the host takes away (see
 * ./carveOutGuard.ts): what the sandbox keeps read-only, and what it hides.
 */
function carveOuts(layout: Layout): CarveOut[] {
  const byPath = new Map(layout.mounts.map((m) => [m.path, m]));
  // The innermost writable root holding a path: the folders below that root are on its way.
  const rootOf = (path: string) =>
    layout.writableRoots.filter((w) => w !== path && isWithin(path, w)).sort((a, b) => b.length - a.length)[0];
  const entry = (path: string, hidden: boolean): CarveOut[] => {
    const root = rootOf(path);
    return root === undefined ? [] : [{ path, root, hidden, quarantine: !hidden }];
  };
  return [
    ...layout.protectedPaths.flatMap((path) => {
      const m = byPath.get(path);
      return entry(path, m?.kind === 'deny-dir' || m?.kind === 'deny-file' || (m?.kind === 'placeholder' && m.mode === 0));
    }),
    // The links on the way to a `.git`/`.vscode`/`.codex`: their end is bound read-only, they are only watched.
    ...(layout.links ?? []).flatMap((path) => entry(path, false)),
  ];
}

/** The paths none of the others contains (a tmpfs over a directory covers everything in it). */
function outermost(...lists: string[][]): string[] {
  const unique = [...new Set(lists.flat())];
  return unique.filter((p) => !unique.some((q) => q !== p && isWithin(p, q)));
}

function sameEnv(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
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
