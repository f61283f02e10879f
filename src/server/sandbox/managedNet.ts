import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ManagedNetworkSandboxContext } from '../../protocol';
import { pidAlive } from '../../util';
import { NetProxy, type NetDenial } from '../netProxy';
import { NetPolicy, NetRuleError } from '../netProxyRules';
import { LoopbackRelay } from '../netRelay';
import { SandboxUnsupportedError } from './policy';

/*
 * The managed network's per-start instances, and the one snapshot a start takes: the proxy
 * environment and what the sandbox lets through (Linux: the bridge's ports and their sockets;
 * macOS: the loopback ports) come from the same object, so a command never gets a proxy address its
 * sandbox refuses. Each start gets its own listeners (its own proxy, or its own relays to codex's),
 * so a refusal is that start's alone, and they are closed when its process is done (`release`), or
 * with the planner, or as the server exits. A sandbox built ahead of time (../prewarm.ts) gets
 * listeners of its own too, made with it; while it waits, its folder holds a `prewarmed` marker
 * file, removed when a start takes the sandbox (and its listeners) over (`claim`).
 */

/** The marker file in the socket folder of a sandbox built ahead of time that no start has taken yet. */
export const PREWARMED_MARKER = 'prewarmed';

/** The in-sandbox loopback port of our proxy's bridge (Linux: the sandbox has its own loopback, any port is free). */
export const BRIDGE_PORT = 3128;

export interface ManagedNetSnapshot {
  /** What the start adds to the command's env: our proxy env; nothing for codex's (its env names its proxy). */
  env: Record<string, string>;
  /** Linux: each port the bridge listens on inside the sandbox, and its socket's name in `socketDir`. */
  routes: Array<{ port: number; socketName: string }>;
  /** Linux: the host directory holding the sockets (in our private directory). */
  socketDir?: string;
  /** macOS: the loopback ports the Seatbelt profile lets through. */
  loopbackPorts: number[];
  /** Codex's `allowLocalBinding` (macOS: local bind and loopback traffic; Linux: the sandbox's loopback is its own anyway). */
  allowLocalBinding: boolean;
  /** Our proxy: the last destination it refused for this start. */
  lastDenial(): NetDenial | undefined;
  /** Our proxy: each refusal as it happens; returns the unsubscribe. */
  onDenial(listener: (d: NetDenial) => void): () => void;
  /** Closes this start's listeners and removes its sockets. Idempotent. */
  release(): void;
  /** A pre-started sandbox's listeners now serve the start that took it: the folder loses its marker. */
  claim(): void;
}

/** The proxy environment for a proxy at 127.0.0.1:port (both cases of each name). */
export function proxyEnv(port: number, policy: NetPolicy): Record<string, string> {
  const http = `http://127.0.0.1:${port}`;
  // Loopback goes around the proxy (to the sandbox's own loopback) unless the lists name a loopback literal.
  const noProxy = policy.allowsLoopback ? '' : 'localhost,127.0.0.1,::1';
  const env: Record<string, string> = {};
  for (const [k, v] of [
    ['HTTP_PROXY', http],
    ['HTTPS_PROXY', http],
    ['ALL_PROXY', `socks5h://127.0.0.1:${port}`],
    ['NO_PROXY', noProxy],
  ] as const) {
    env[k] = v;
    env[k.toLowerCase()] = v;
  }
  return env;
}

/** The proxy variables every proxy-aware tool reads; with codex's context each must name an allowed port. */
const CORE_PROXY_VARS = /^(http|https|all|ftp|ws|wss)_proxy$/i;

/**
 * Codex's prepared context: the env must name the orchestrator's proxy, and only on the ports the
 * context lets through (codex 0.171 refuses the same mismatches when it builds its bridge). Every
 * `*_PROXY`-like variable holding a URL is checked, the core ones (`HTTP_PROXY`, `ALL_PROXY`, …)
 * also without a scheme. Returns the ports the env names; throws what is wrong.
 */
export function checkPreparedEnv(env: Record<string, string>, ctx: ManagedNetworkSandboxContext): number[] {
  const refuse = (why: string): never => {
    throw new SandboxUnsupportedError(`managed network: ${why}; the command was not run`);
  };
  if (ctx.allowUnixSockets.length > 0 || ctx.dangerouslyAllowAllUnixSockets)
    refuse(
      'unix sockets (allowUnixSockets, dangerouslyAllowAllUnixSockets) cannot be let through: no unix socket can be made in this sandbox',
    );
  const allowed = new Set(ctx.loopbackPorts);
  for (const p of allowed) if (p < 1 || p > 65535) refuse(`loopback port ${p} is not a TCP port`);
  const named = new Set<number>();
  for (const [name, raw] of Object.entries(env)) {
    const value = raw.trim();
    if (value === '' || !/proxy$/i.test(name) || /no_?proxy$/i.test(name)) continue;
    const core = CORE_PROXY_VARS.test(name);
    if (!core && !value.includes('://')) continue; // e.g. ELECTRON_GET_USE_PROXY=true
    let url: URL;
    try {
      url = new URL(value.includes('://') ? value : `http://${value}`);
    } catch {
      return refuse(`${name} is not a proxy URL`);
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') refuse(`${name} names ${url.host}, not a loopback proxy`);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    if (!allowed.has(port)) refuse(`${name} names port ${port}, which the managed network context (loopbackPorts) does not let through`);
    named.add(port);
  }
  if (named.size === 0) refuse("codex's managed network context needs the proxy env (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY on 127.0.0.1)");
  return [...named].sort((a, b) => a - b);
}

export class ManagedNetworks {
  private readonly live = new Set<ManagedNetSnapshot>();
  private swept = false;
  private exitHook: (() => void) | undefined;

  constructor(
    private readonly stateDir: () => string,
    private readonly log?: (line: string) => void,
  ) {}

  /** How many starts hold listeners now. */
  get liveCount(): number {
    return this.live.size;
  }

  /**
   * Ours: parses the lists (a bad entry is a refusal, never a wider network) and starts this start's
   * proxy. `prewarmed`: for a sandbox built ahead of time (its folder is marked until `claim`).
   */
  async snapshot(lists: { allow: string[]; deny?: string[] }, transport: 'unix' | 'tcp', prewarmed = false): Promise<ManagedNetSnapshot> {
    let policy: NetPolicy;
    try {
      policy = new NetPolicy(lists.allow, lists.deny ?? []);
    } catch (e) {
      if (e instanceof NetRuleError) throw new SandboxUnsupportedError(`managed network: ${e.message}`);
      throw e;
    }
    const proxy = new NetProxy(policy, this.log);
    if (transport === 'tcp') {
      const port = await this.guard(
        () => proxy.close(),
        () => proxy.listen({ port: 0 }),
      );
      return this.track({ env: proxyEnv(port, policy), routes: [], loopbackPorts: [port], close: () => proxy.close(), proxy });
    }
    const socketDir = this.makeDir(prewarmed);
    await this.guard(
      () => (proxy.close(), rmSync(socketDir, { recursive: true, force: true })),
      () => proxy.listen({ path: join(socketDir, 'proxy.sock') }),
    );
    return this.track({
      env: proxyEnv(BRIDGE_PORT, policy),
      routes: [{ port: BRIDGE_PORT, socketName: 'proxy.sock' }],
      socketDir,
      loopbackPorts: [],
      close: () => proxy.close(),
      proxy,
    });
  }

  /** Codex's prepared context: checks the env against it, then (Linux) relays exactly its ports to the host's loopback. */
  async prepared(ctx: ManagedNetworkSandboxContext, env: Record<string, string>, transport: 'unix' | 'tcp'): Promise<ManagedNetSnapshot> {
    checkPreparedEnv(env, ctx);
    const ports = [...new Set(ctx.loopbackPorts)].sort((a, b) => a - b);
    const base = { env: {}, allowLocalBinding: ctx.allowLocalBinding };
    if (transport === 'tcp') return this.track({ ...base, routes: [], loopbackPorts: ports, close: () => undefined });
    const socketDir = this.makeDir();
    const relays = ports.map((p) => new LoopbackRelay(p, this.log));
    const close = () => relays.forEach((r) => r.close());
    await this.guard(
      () => (close(), rmSync(socketDir, { recursive: true, force: true })),
      () => Promise.all(relays.map((r) => r.listen(join(socketDir, `port-${r.port}.sock`)))),
    );
    return this.track({
      ...base,
      routes: ports.map((port) => ({ port, socketName: `port-${port}.sock` })),
      socketDir,
      loopbackPorts: [],
      close,
    });
  }

  /** Closes every start's listeners (the server is stopping). */
  close(): void {
    for (const s of [...this.live]) s.release();
  }

  private async guard<T>(undo: () => void, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (e) {
      undo();
      throw e;
    }
  }

  private track(o: {
    env: Record<string, string>;
    routes: ManagedNetSnapshot['routes'];
    socketDir?: string;
    loopbackPorts: number[];
    allowLocalBinding?: boolean;
    close: () => void;
    proxy?: NetProxy;
  }): ManagedNetSnapshot {
    let released = false;
    const snap: ManagedNetSnapshot = {
      env: o.env,
      routes: o.routes,
      socketDir: o.socketDir,
      loopbackPorts: o.loopbackPorts,
      allowLocalBinding: o.allowLocalBinding ?? false,
      lastDenial: () => o.proxy?.lastDenial(),
      onDenial: (listener) => o.proxy?.onDenial(listener) ?? (() => undefined),
      release: () => {
        if (released) return;
        released = true;
        this.live.delete(snap);
        o.close();
        if (o.socketDir) rmSync(o.socketDir, { recursive: true, force: true });
      },
      claim: () => {
        if (!o.socketDir || released) return;
        try {
          unlinkSync(join(o.socketDir, PREWARMED_MARKER));
        } catch {
          // never marked
        }
      },
    };
    this.live.add(snap);
    if (!this.exitHook) {
      // A server that exits (SIGTERM → process.exit) leaves no socket directory behind.
      this.exitHook = () => this.close();
      process.once('exit', this.exitHook);
    }
    return snap;
  }

  /**
   * A fresh socket folder. A prewarmed one appears with its marker already in it: it is made under
   * a hidden name and renamed, so whoever lists the folders never sees it unmarked.
   */
  private makeDir(prewarmed = false): string {
    const base = this.stateDir();
    if (!this.swept) {
      this.swept = true;
      sweepDead(base);
    }
    const name = `net-${process.pid}-${randomBytes(6).toString('hex')}`;
    const dir = join(base, name);
    if (!prewarmed) {
      mkdirSync(dir, { mode: 0o700 });
      return dir;
    }
    const staging = join(base, `.${name}`);
    mkdirSync(staging, { mode: 0o700 });
    try {
      writeFileSync(join(staging, PREWARMED_MARKER), '', { mode: 0o400, flag: 'wx' });
      renameSync(staging, dir);
    } catch (e) {
      rmSync(staging, { recursive: true, force: true });
      throw e;
    }
    return dir;
  }
}

/** Socket directories of servers that are gone. */
function sweepDead(base: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const n of names) {
    const m = /^\.?net-(\d+)-/.exec(n);
    if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) rmSync(join(base, n), { recursive: true, force: true });
  }
}
