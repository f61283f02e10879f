/**
 * A loopback TCP proxy that breaks connections on demand, to test recovery against real servers:
 *
 *  - `cut()`       resets every current connection (both sides see it at once).
 *  - `stall()`     holds all bytes (and closes) in both directions, on current and new connections,
 *                  until `resume()` delivers them in order — a frozen path that recovers.
 *  - `blackhole()` silently drops all bytes (and closes) on current and new connections — a
 *                  half-open path. `heal()` ends it: the black-holed connections are reset (as TCP
 *                  does once packets flow again and hit a closed socket) and new ones pass.
 *  - `outage()`    the worst form of a long outage: the server's side of every current connection
 *                  is reset at once (the server sees the drop), while the client's side is
 *                  black-holed (nothing arrives, nothing closes), and new connections hang (accepted,
 *                  never connected on, bytes dropped). `heal()` ends it as above.
 *
 * Only 127.0.0.1. Every method is synchronous; the proxy never delays bytes in `pass` mode.
 */
import net from 'node:net';

type Mode = 'pass' | 'stall' | 'blackhole' | 'outage';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  blackholed: boolean;
  /** Held actions while stalled, in arrival order. */
  held: Array<() => void>;
}

export class FaultProxy {
  private mode: Mode = 'pass';
  private readonly pairs = new Set<Pair>();
  /** Connections accepted so far (each client reconnect adds one). */
  accepted = 0;

  private constructor(
    private readonly server: net.Server,
    private readonly targetPort: number,
  ) {}

  /** Proxies 127.0.0.1:<ephemeral> to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number): Promise<FaultProxy> {
    const server = net.createServer();
    const proxy = new FaultProxy(server, targetPort);
    server.on('connection', (s) => proxy.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  /** Proxying the server at `url` (`ws://127.0.0.1:PORT`). */
  static forUrl(url: string): Promise<FaultProxy> {
    return FaultProxy.start(Number(new URL(url).port));
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  get openConnections(): number {
    return this.pairs.size;
  }

  cut(): void {
    for (const p of [...this.pairs]) this.destroy(p);
  }

  stall(): void {
    this.mode = 'stall';
  }

  resume(): void {
    this.mode = 'pass';
    for (const p of [...this.pairs]) {
      const held = p.held.splice(0);
      for (const action of held) action();
    }
  }

  blackhole(): void {
    this.mode = 'blackhole';
    for (const p of this.pairs) {
      p.blackholed = true;
      p.held = [];
    }
  }

  outage(): void {
    this.mode = 'outage';
    for (const p of this.pairs) {
      p.blackholed = true;
      p.held = [];
      reset(p.upstream);
    }
  }

  heal(): void {
    this.mode = 'pass';
    for (const p of [...this.pairs]) if (p.blackholed) this.destroy(p);
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.accepted++;
    if (this.mode === 'outage') {
      // Nothing behind it: the client waits for an answer that never comes (heal resets it).
      const upstream = new net.Socket();
      upstream.on('error', () => undefined);
      const pair: Pair = { client, upstream, blackholed: true, held: [] };
      this.pairs.add(pair);
      client.on('error', () => undefined);
      client.on('close', () => this.destroy(pair));
      return;
    }
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    const pair: Pair = { client, upstream, blackholed: this.mode === 'blackhole', held: [] };
    this.pairs.add(pair);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.wire(pair, client, upstream);
    this.wire(pair, upstream, client);
  }

  private wire(pair: Pair, from: net.Socket, to: net.Socket): void {
    from.on('data', (d: Buffer) => this.act(pair, () => to.write(d)));
    from.on('end', () => this.act(pair, () => to.end()));
    from.on('close', () => this.act(pair, () => this.destroy(pair)));
    from.on('error', () => undefined);
  }

  private act(pair: Pair, action: () => void): void {
    if (!this.pairs.has(pair) || pair.blackholed) return;
    if (this.mode === 'stall' || pair.held.length > 0) {
      pair.held.push(action);
      return;
    }
    action();
  }

  private destroy(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    for (const s of [pair.client, pair.upstream]) reset(s);
  }
}

/** Resets a socket (RST, as a dead path does once packets flow again); a socket without a live handle is just destroyed. */
function reset(s: net.Socket): void {
  // Only a connected socket has something to reset (resetAndDestroy fails others with ERR_SOCKET_CLOSED).
  if (typeof s.resetAndDestroy === 'function' && !s.destroyed && s.readyState === 'open' && s.remoteAddress !== undefined)
    s.resetAndDestroy();
  else s.destroy();
}
