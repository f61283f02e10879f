import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../../util/privateDir';
import { NetProxy } from '../netProxy';
import { NetPolicy, NetRuleError } from '../netProxyRules';
import { SandboxUnsupportedError } from './policy';

/*
 * The managed network's proxies (one per distinct pair of lists, started on first use, closed with
 * the planner) and the one snapshot a start takes from them: the proxy environment and what the
 * sandbox lets through (Linux: the bridge's port and socket; macOS: the loopback port) come from
 * the same object, so a command never gets a proxy address its sandbox refuses.
 */

/** The in-sandbox loopback port of the bridge (Linux: the sandbox has its own loopback, any port is free). */
export const BRIDGE_PORT = 3128;

export interface ManagedNetSnapshot {
  proxy: NetProxy;
  /** The port the env names: the bridge's inside the sandbox (Linux), the proxy's own on the host (macOS). */
  port: number;
  /** Linux: the host directory holding `proxy.sock`. */
  socketDir?: string;
  socketName: string;
  env: Record<string, string>;
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

export class ManagedNetworks {
  private readonly proxies = new Map<string, Promise<{ proxy: NetProxy; port: number; socketDir?: string }>>();
  private swept = false;

  constructor(
    private readonly stateDir: () => string,
    private readonly log?: (line: string) => void,
  ) {}

  /** Parses the lists (a bad entry is a refusal, never a wider network) and returns the snapshot for one start. */
  async snapshot(lists: { allow: string[]; deny?: string[] }, transport: 'unix' | 'tcp'): Promise<ManagedNetSnapshot> {
    let policy: NetPolicy;
    try {
      policy = new NetPolicy(lists.allow, lists.deny ?? []);
    } catch (e) {
      if (e instanceof NetRuleError) throw new SandboxUnsupportedError(`managed network: ${e.message}`);
      throw e;
    }
    const key = `${transport} ${policy.key}`;
    let p = this.proxies.get(key);
    if (!p) {
      p = this.start(policy, transport);
      this.proxies.set(key, p);
      p.catch(() => this.proxies.delete(key));
    }
    const started = await p;
    const port = transport === 'unix' ? BRIDGE_PORT : started.port;
    return {
      proxy: started.proxy,
      port,
      socketDir: started.socketDir,
      socketName: 'proxy.sock',
      env: proxyEnv(port, started.proxy.policy),
    };
  }

  close(): void {
    for (const [, p] of this.proxies)
      void p.then(
        (s) => {
          s.proxy.close();
          if (s.socketDir) rmSync(s.socketDir, { recursive: true, force: true });
        },
        () => undefined,
      );
    this.proxies.clear();
  }

  private async start(policy: NetPolicy, transport: 'unix' | 'tcp'): Promise<{ proxy: NetProxy; port: number; socketDir?: string }> {
    const proxy = new NetProxy(policy, this.log);
    if (transport === 'tcp') return { proxy, port: await proxy.listen({ port: 0 }) };
    const base = this.stateDir();
    if (!this.swept) {
      this.swept = true;
      sweepDead(base);
    }
    const hash = createHash('sha256').update(policy.key).digest('hex').slice(0, 12);
    const socketDir = join(base, `net-${process.pid}-${hash}`);
    rmSync(socketDir, { recursive: true, force: true });
    mkdirSync(socketDir, { mode: 0o700 });
    await proxy.listen({ path: join(socketDir, 'proxy.sock') });
    return { proxy, port: 0, socketDir };
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
    const m = /^net-(\d+)-/.exec(n);
    if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) rmSync(join(base, n), { recursive: true, force: true });
  }
}
