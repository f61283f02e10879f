import { lookup } from 'node:dns/promises';
import { createConnection, createServer, isIP, type Server, type Socket } from 'node:net';
import {
  type ConnectionBudget,
  DEFAULT_NET_LIMITS,
  Gate,
  LOOKUPS_PER_LISTENER,
  type NetLimits,
  serverBudget,
  serverLookups,
} from './netLimits';
import { canonicalHost, type NetPolicy, normalizeIp } from './netProxyRules';
import { httpReply, parseProxyRequest, printable, readExactly, readUntil, socksReply, v6Text } from './netProxyWire';

/*
 * The managed network's executor-side proxy: one listener that speaks HTTP (CONNECT, and plain
 * requests in absolute form) and SOCKS5 (CONNECT, no authentication), told apart by the first byte.
 * Every destination is first made canonical (`canonicalHost`: a host name of RFC 1123 characters,
 * or an IP literal in its canonical form; anything else is refused before any rule is looked at),
 * checked by that name against the lists, resolved here by that same text (the sandbox has no DNS)
 * and checked by address; we connect to the address we checked, so a second lookup cannot change
 * it. A refusal answers 403 / SOCKS "not allowed" naming the destination, and is recorded so the
 * process that asked can be reported as a sandbox denial.
 *
 * Connections are bounded (./netLimits.ts): per listener (one start) and, through a shared budget,
 * per server process; one over either bound gets 503 / SOCKS "general failure" at once and is
 * logged. A connection that has not sent its request within `headerMs`, or a tunnel in which no
 * byte moved for `idleMs`, is closed.
 *
 * On Linux it listens on a unix socket in our private directory, bind-mounted into the sandbox and
 * reached through the in-sandbox bridge (./sandbox/netBridge.ts); on macOS on a loopback TCP port
 * that the Seatbelt profile allows. The wire (the request head's parse, replies, bounded reads) is
 * ./netProxyWire.ts.
 */

export interface NetDenial {
  /** `host:port` as asked for (bytes outside printable ASCII escaped as \xNN). */
  target: string;
  reason: string;
  at: number;
}

export interface NetProxyOptions {
  /** Defaults: DEFAULT_NET_LIMITS. */
  limits?: Partial<NetLimits>;
  /** Shared by every listener of the server (default: this process's, `serverBudget()`). */
  budget?: ConnectionBudget;
  /** Resolves a canonical host name to one address (default: the system resolver, as every program on the host). */
  resolve?: (name: string) => Promise<string>;
  /** Opens the connection to an address that was checked (default: `net.createConnection`). */
  dial?: (address: string, port: number) => Socket;
  /** Lookups of every listener of the server at once (default: this process's, `serverLookups()`). */
  lookups?: Gate;
}

const MAX_HEAD = 64 * 1024;
const MAX_DENIALS = 200;
/** How long a connection over the bounds may take to send its first byte, so that its refusal is in its protocol. */
const REFUSE_MS = 5000;
/** Refusals are logged: the first, then one line per this many. */
const LOG_EVERY = 100;

type Decision = { ok: true; address: string } | { ok: false; kind: 'invalid' | 'denied' | 'unresolved'; text: string };

async function systemResolve(name: string): Promise<string> {
  return (await lookup(name, { verbatim: true })).address;
}

export class NetProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly denialLog: NetDenial[] = [];
  /** Counts every denial ever recorded (the log keeps the last MAX_DENIALS). */
  private denialCount = 0;
  private readonly limits: NetLimits;
  private readonly budget: ConnectionBudget;
  private readonly resolver: (name: string) => Promise<string>;
  /** This listener's lookups in flight, by name: connections asking for the same name at once share one. */
  private readonly resolving = new Map<string, Promise<string>>();
  private readonly ownLookups = new Gate(LOOKUPS_PER_LISTENER);
  private readonly lookups: Gate;
  private readonly dial: (address: string, port: number) => Socket;
  /** Connections this listener serves now (refused ones not counted). */
  private open = 0;
  private refused = 0;

  constructor(
    readonly policy: NetPolicy,
    private readonly log?: (line: string) => void,
    options: NetProxyOptions = {},
  ) {
    this.limits = { ...DEFAULT_NET_LIMITS, ...options.limits };
    this.budget = options.budget ?? serverBudget();
    this.resolver = options.resolve ?? systemResolve;
    this.lookups = options.lookups ?? serverLookups();
    this.dial = options.dial ?? ((host, port) => createConnection({ host, port }));
  }

  /** Listens on a unix socket path, or on 127.0.0.1 (port 0: any free port); resolves to the TCP port (0 for a path). */
  async listen(where: { path: string } | { port: number }): Promise<number> {
    const server = createServer((s) => this.handle(s));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if ('path' in where) server.listen(where.path, resolve);
      else server.listen(where.port, '127.0.0.1', resolve);
    });
    // An accept that fails (EMFILE, ENFILE) is an 'error' of the server: logged, never thrown.
    server.on('error', (e) => this.log?.(`managed network: proxy listener: ${(e as Error).message}`));
    server.unref();
    const addr = server.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  }

  /** Stops listening (the socket file goes with it) and ends every open connection. */
  close(): void {
    this.server?.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /** Connections served now (not counting refused ones). */
  get openConnections(): number {
    return this.open;
  }

  /** A mark: `denialsSince(mark)` lists what was refused after it. */
  mark(): number {
    return this.denialCount;
  }

  /** The last destination refused (this proxy serves one start, so it is that start's). */
  lastDenial(): NetDenial | undefined {
    return this.denialLog.at(-1);
  }

  denialsSince(mark: number): NetDenial[] {
    const n = this.denialCount - mark;
    return n <= 0 ? [] : this.denialLog.slice(-Math.min(n, this.denialLog.length));
  }

  private readonly denialListeners = new Set<(d: NetDenial) => void>();

  /** Called with each refusal as it happens (a running process's client may want to know at once). */
  onDenial(listener: (d: NetDenial) => void): () => void {
    this.denialListeners.add(listener);
    return () => void this.denialListeners.delete(listener);
  }

  private deny(target: string, reason: string): string {
    this.denialCount++;
    const denial = { target, reason, at: Date.now() };
    this.denialLog.push(denial);
    if (this.denialLog.length > MAX_DENIALS) this.denialLog.shift();
    for (const l of this.denialListeners) l(denial);
    this.log?.(`managed network: blocked ${target}: ${reason}`);
    return `the sandbox blocked ${target}: ${reason}`;
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
  }

  private handle(client: Socket): void {
    this.track(client);
    const over =
      this.open >= this.limits.perListener
        ? `this command has ${this.open} connections open through the managed network (the limit is ${this.limits.perListener})`
        : !this.budget.take()
          ? `the server's managed-network connections are all in use (${this.budget.max})`
          : undefined;
    if (over) return this.refuse(client, over);
    this.open++;
    client.once('close', () => {
      this.open--;
      this.budget.give();
    });
    client.setTimeout(this.limits.headerMs);
    client.on('timeout', () => client.destroy());
    client.once('readable', () => {
      const first = client.read(1) as Buffer | null;
      if (!first) return void client.destroy();
      client.unshift(first);
      if (first[0] === 0x05) void this.socks(client);
      else if (first[0] === 0x04) {
        this.log?.('managed network: refused a SOCKS4 request (only SOCKS5 and HTTP are served)');
        client.end(Buffer.from([0, 0x5b, 0, 0, 0, 0, 0, 0]));
        client.on('data', () => undefined); // drain until the peer closes
      } else void this.http(client);
    });
  }

  /**
   * Over a bound: answers in the connection's protocol as soon as its first byte shows which (HTTP
   * 503; SOCKS5: no authentication, then "general failure" to the request it will send), reads and
   * drops what follows, and closes. Only MAX_REFUSING wait at once; more are closed unanswered.
   */
  private refuse(client: Socket, why: string): void {
    this.refused++;
    if (this.refused === 1 || this.refused % LOG_EVERY === 0)
      this.log?.(`managed network: refused a connection (${this.refused} so far on this listener): ${why}`);
    if (!this.budget.takeRefusal()) return void client.destroy();
    client.once('close', () => this.budget.giveRefusal());
    client.setTimeout(REFUSE_MS);
    client.on('timeout', () => client.destroy());
    client.once('readable', () => {
      const first = client.read(1) as Buffer | null;
      if (!first) return void client.destroy();
      if (first[0] === 0x05) client.end(Buffer.concat([Buffer.from([5, 0]), socksReply(1)]));
      else if (first[0] === 0x04) client.end(Buffer.from([0, 0x5b, 0, 0, 0, 0, 0, 0]));
      else client.end(httpReply('503 Service Unavailable', `exec-bridge proxy: too many connections: ${why}; close some and retry`));
      client.on('data', () => undefined); // drain until the peer closes (or REFUSE_MS passes)
    });
  }

  /**
   * Resolves through this listener's line, then the server's; connections asking for one name at
   * once share the answer (nothing is kept after).
   */
  private resolve(name: string): Promise<string> {
    let p = this.resolving.get(name);
    if (!p) {
      p = this.ownLookups.run(() => this.lookups.run(() => this.resolver(name)));
      this.resolving.set(name, p);
      const forget = (): void => void this.resolving.delete(name);
      p.then(forget, forget);
    }
    return p;
  }

  /** Makes the host canonical, checks it by name and by address; the address to connect to, or why not. */
  private async decide(rawHost: string, port: number): Promise<Decision> {
    const verdict = this.policy.check(rawHost, port);
    if (!verdict.ok && verdict.invalid) {
      this.log?.(`managed network: refused ${printable(rawHost)}:${port}: ${verdict.reason}`);
      return {
        ok: false,
        kind: 'invalid',
        text: `exec-bridge proxy: ${printable(rawHost)}:${port} is not a destination: ${verdict.reason}`,
      };
    }
    // Not invalid, so the host has a canonical form: the denial names that.
    const canonical = canonicalHost(rawHost);
    const host = canonical.ok ? canonical.host : printable(rawHost);
    const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const denied = (reason: string): Decision => ({ ok: false, kind: 'denied', text: `exec-bridge: ${this.deny(target, reason)}` });
    if (!verdict.ok) return denied(verdict.reason);
    let address = verdict.host;
    if (!verdict.ip) {
      try {
        // The very text the rules matched: nothing in it that the resolver could read differently.
        address = await this.resolve(verdict.host);
      } catch (e) {
        const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        return { ok: false, kind: 'unresolved', text: `exec-bridge proxy: cannot resolve ${verdict.host}: ${why}` };
      }
      if (!isIP(address) || address.includes('%')) return denied(`it resolves to ${printable(address)}, not an IP address`);
      address = normalizeIp(address);
    }
    const byAddress = this.policy.checkResolved(address, port);
    if (!byAddress.ok) return denied(byAddress.reason);
    return { ok: true, address };
  }

  private connectTo(address: string, port: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const up = this.dial(address, port);
      this.track(up);
      const timer = setTimeout(() => {
        up.destroy();
        reject(new Error(`no connection within ${Math.round(this.limits.connectMs / 1000)} s`));
      }, this.limits.connectMs);
      up.once('connect', () => {
        clearTimeout(timer);
        up.removeListener('error', onError);
        resolve(up);
      });
      const onError = (e: Error): void => {
        clearTimeout(timer);
        reject(e);
      };
      up.once('error', onError);
    });
  }

  /** Joins the client and its upstream; the tunnel closes after `idleMs` without a byte either way (the client's socket sees both). */
  private pipe(a: Socket, b: Socket): void {
    a.setTimeout(this.limits.idleMs);
    a.pipe(b);
    b.pipe(a);
    a.on('close', () => b.destroy());
    b.on('close', () => a.destroy());
  }

  private async http(client: Socket): Promise<void> {
    let head: Buffer;
    try {
      head = await readUntil(client, Buffer.from('\r\n\r\n'), MAX_HEAD);
    } catch {
      return void client.destroy();
    }
    const text = head.toString('latin1');
    const end = text.indexOf('\r\n\r\n');
    const rest = head.subarray(end + 4);
    const reply = (status: string, body: string): void => void client.end(httpReply(status, body));
    const req = parseProxyRequest(text.slice(0, end));
    if ('error' in req) {
      this.log?.(`managed network: refused a request: ${req.error}`);
      return reply('400 Bad Request', `exec-bridge proxy: ${req.error}`);
    }
    client.setTimeout(0); // the request is in; the lookup and the connect have their own bounds
    const d = await this.decide(req.host, req.port);
    if (!d.ok) return reply(d.kind === 'invalid' ? '400 Bad Request' : d.kind === 'denied' ? '403 Forbidden' : '502 Bad Gateway', d.text);
    let up: Socket;
    try {
      up = await this.connectTo(d.address, req.port);
    } catch (e) {
      return reply('502 Bad Gateway', `exec-bridge proxy: cannot connect to ${req.host}:${req.port}: ${(e as Error).message}`);
    }
    if (client.destroyed) return void up.destroy();
    if (req.method === 'CONNECT') {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    } else {
      // One request per connection: the upstream is fixed once chosen.
      const headers = req.headers.filter((l) => !/^(proxy-[a-z-]*|connection|keep-alive)\s*:/i.test(l));
      up.write(`${req.method} ${req.path} ${req.version}\r\n${[...headers, 'Connection: close'].join('\r\n')}\r\n\r\n`, 'latin1');
    }
    if (rest.length) up.write(rest);
    this.pipe(client, up);
  }

  private async socks(client: Socket): Promise<void> {
    try {
      const greet = await readExactly(client, 2);
      const methods = await readExactly(client, greet[1]!);
      // 0xff: none of the offered methods is acceptable (we take only "no authentication").
      if (!methods.includes(0)) return void client.end(Buffer.from([5, 0xff]));
      client.write(Buffer.from([5, 0]));
      const req = await readExactly(client, 4);
      if (req[0] !== 5) return void client.destroy();
      let host: string;
      if (req[3] === 1) host = [...(await readExactly(client, 4))].join('.');
      else if (req[3] === 3) host = (await readExactly(client, (await readExactly(client, 1))[0]!)).toString('latin1');
      else if (req[3] === 4) host = v6Text(await readExactly(client, 16));
      else return void client.end(socksReply(8));
      const port = (await readExactly(client, 2)).readUInt16BE(0);
      if (req[1] !== 1) return void client.end(socksReply(7)); // only CONNECT
      client.setTimeout(0);
      const d = await this.decide(host, port);
      // 2 = connection not allowed by ruleset (the text cannot travel in SOCKS); 4 = host unreachable.
      if (!d.ok) return void client.end(socksReply(d.kind === 'unresolved' ? 4 : 2));
      let up: Socket;
      try {
        up = await this.connectTo(d.address, port);
      } catch {
        return void client.end(socksReply(5));
      }
      if (client.destroyed) return void up.destroy();
      client.write(socksReply(0));
      this.pipe(client, up);
    } catch {
      client.destroy();
    }
  }
}
