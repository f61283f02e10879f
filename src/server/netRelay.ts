import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { type ConnectionBudget, DEFAULT_NET_LIMITS, type NetLimits, serverBudget } from './netLimits';

/*
 * Codex's prepared managed network (docs/sandbox.md): the proxy is the orchestrator's, on the host's
 * 127.0.0.1:PORT, and the sandbox may reach exactly those ports. The command's network namespace
 * has only its own loopback, so the in-sandbox bridge (./sandbox/netBridge.ts) listens on PORT there
 * and relays to a unix socket of ours; this end forwards each connection to the host's
 * 127.0.0.1:PORT, byte for byte. The policy is the orchestrator's proxy's: nothing is checked here.
 * The bounds are our proxy's (./netLimits.ts: per listener, the server's shared budget, the idle
 * and connect timeouts); a connection over them is closed at once (the protocol is not ours to
 * answer in) and logged.
 */
export class LoopbackRelay {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly limits: NetLimits;
  private readonly budget: ConnectionBudget;
  private open = 0;
  private refused = 0;

  constructor(
    readonly port: number,
    private readonly log?: (line: string) => void,
    options: { limits?: Partial<NetLimits>; budget?: ConnectionBudget } = {},
  ) {
    this.limits = { ...DEFAULT_NET_LIMITS, ...options.limits };
    this.budget = options.budget ?? serverBudget();
    this.server = createServer((inside) => this.handle(inside));
  }

  /** Listens on the unix socket `path`. */
  async listen(path: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(path, () => {
        this.server.removeListener('error', reject);
        resolve();
      });
    });
    // A failed accept (EMFILE, ENFILE) is logged, never thrown.
    this.server.on('error', (e) => this.log?.(`managed network: relay to 127.0.0.1:${this.port}: ${(e as Error).message}`));
    this.server.unref();
  }

  close(): void {
    this.server.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  private handle(inside: Socket): void {
    this.track(inside);
    const over =
      this.open >= this.limits.perListener
        ? `this command has ${this.open} connections open to 127.0.0.1:${this.port} (the limit is ${this.limits.perListener})`
        : !this.budget.take()
          ? `the server's managed-network connections are all in use (${this.budget.max})`
          : undefined;
    if (over) {
      this.refused++;
      if (this.refused === 1 || this.refused % 100 === 0)
        this.log?.(`managed network: closed a connection (${this.refused} so far on this relay): ${over}`);
      return void inside.destroy();
    }
    this.open++;
    inside.once('close', () => {
      this.open--;
      this.budget.give();
    });
    inside.pause();
    const host = createConnection({ host: '127.0.0.1', port: this.port });
    this.track(host);
    const connecting = setTimeout(() => host.destroy(), this.limits.connectMs);
    host.once('connect', () => {
      clearTimeout(connecting);
      // Idle: no byte either way for idleMs (the inside socket sees both directions).
      inside.setTimeout(this.limits.idleMs);
      inside.on('timeout', () => inside.destroy());
      inside.pipe(host);
      host.pipe(inside);
      inside.resume();
    });
    inside.on('close', () => host.destroy());
    host.on('close', () => {
      clearTimeout(connecting);
      inside.destroy();
    });
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
  }
}
