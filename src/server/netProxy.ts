import { lookup } from 'node:dns/promises';
import { createConnection, createServer, isIP, type Server, type Socket } from 'node:net';
import type { NetPolicy } from './netProxyRules';

/*
 * The managed network's executor-side proxy: one listener that speaks HTTP (CONNECT, and plain
 * requests in absolute form) and SOCKS5 (CONNECT, no authentication), told apart by the first byte.
 * Every destination is checked by name against the lists, then resolved here (the sandbox has no
 * DNS) and checked by address; we connect to the address we checked, so a second lookup cannot
 * change it. A refusal answers 403 / SOCKS "not allowed" naming the destination, and is recorded
 * so the process that asked can be reported as a sandbox denial.
 *
 * On Linux it listens on a unix socket in our private directory, bind-mounted into the sandbox and
 * reached through the in-sandbox bridge (./sandbox/netBridge.ts); on macOS on a loopback TCP port
 * that the Seatbelt profile allows.
 */

export interface NetDenial {
  /** `host:port` as asked for. */
  target: string;
  reason: string;
  at: number;
}

const MAX_HEAD = 64 * 1024;
const MAX_DENIALS = 200;

export class NetProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly denialLog: NetDenial[] = [];
  /** Counts every denial ever recorded (the log keeps the last MAX_DENIALS). */
  private denialCount = 0;

  constructor(
    readonly policy: NetPolicy,
    private readonly log?: (line: string) => void,
  ) {}

  /** Listens on a unix socket path, or on 127.0.0.1 (port 0: any free port); resolves to the TCP port (0 for a path). */
  async listen(where: { path: string } | { port: number }): Promise<number> {
    const server = createServer((s) => this.handle(s));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if ('path' in where) server.listen(where.path, resolve);
      else server.listen(where.port, '127.0.0.1', resolve);
    });
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

  private deny(target: string, reason: string): string {
    this.denialCount++;
    this.denialLog.push({ target, reason, at: Date.now() });
    if (this.denialLog.length > MAX_DENIALS) this.denialLog.shift();
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
    client.once('readable', () => {
      const first = client.read(1) as Buffer | null;
      if (!first) return void client.destroy();
      client.unshift(first);
      if (first[0] === 0x05) void this.socks(client);
      else void this.http(client);
    });
  }

  /** Checks a destination by name and by address; resolves to the address to connect to, or throws the denial text. */
  private async decide(host: string, port: number): Promise<string> {
    const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const byName = this.policy.check(host, port);
    if (!byName.ok) throw new Error(this.deny(target, byName.reason));
    let address = host.replace(/^\[(.*)\]$/, '$1');
    if (!isIP(address)) {
      try {
        address = (await lookup(address, { verbatim: true })).address;
      } catch (e) {
        throw new Error(`cannot resolve ${host}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
    }
    const byAddress = this.policy.checkResolved(address, port);
    if (!byAddress.ok) throw new Error(this.deny(target, byAddress.reason));
    return address;
  }

  private connectTo(address: string, port: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const up = createConnection({ host: address, port });
      up.once('connect', () => {
        up.removeListener('error', reject);
        resolve(up);
      });
      up.once('error', reject);
    });
  }

  private pipe(a: Socket, b: Socket): void {
    this.track(b);
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
    const lines = text.slice(0, end).split('\r\n');
    const rest = head.subarray(end + 4);
    const [method, target, version] = lines[0]!.split(' ');
    const reply = (status: string, body: string): void => {
      client.end(
        `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body) + 1}\r\n` +
          `X-Exec-Bridge-Denied: 1\r\nConnection: close\r\n\r\n${body}\n`,
      );
    };
    let host: string;
    let port: number;
    let path = '';
    if (method === 'CONNECT') {
      const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target ?? '');
      if (!m) return reply('400 Bad Request', 'exec-bridge proxy: CONNECT needs host:port');
      host = m[1]!;
      port = Number(m[2]);
    } else {
      let url: URL;
      try {
        url = new URL(target ?? '');
      } catch {
        return reply('400 Bad Request', 'exec-bridge proxy: send the request in absolute form (http://host/path)');
      }
      if (url.protocol !== 'http:') return reply('400 Bad Request', `exec-bridge proxy: ${url.protocol} is not proxied; use CONNECT`);
      host = url.hostname;
      port = url.port ? Number(url.port) : 80;
      path = `${url.pathname}${url.search}`;
    }
    let address: string;
    try {
      address = await this.decide(host, port);
    } catch (e) {
      return reply('403 Forbidden', `exec-bridge: ${(e as Error).message}`);
    }
    let up: Socket;
    try {
      up = await this.connectTo(address, port);
    } catch (e) {
      return reply('502 Bad Gateway', `exec-bridge proxy: cannot connect to ${host}:${port}: ${(e as Error).message}`);
    }
    if (method === 'CONNECT') {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (rest.length) up.write(rest);
    } else {
      // One request per connection: the upstream is fixed once chosen.
      const headers = lines.slice(1).filter((l) => !/^(proxy-[a-z-]*|connection|keep-alive)\s*:/i.test(l));
      up.write(`${method} ${path} ${version}\r\n${[...headers, 'Connection: close'].join('\r\n')}\r\n\r\n`, 'latin1');
      if (rest.length) up.write(rest);
    }
    this.pipe(client, up);
  }

  private async socks(client: Socket): Promise<void> {
    try {
      const greet = await readExactly(client, 2);
      await readExactly(client, greet[1]!);
      client.write(Buffer.from([5, 0]));
      const req = await readExactly(client, 4);
      let host: string;
      if (req[3] === 1) host = [...(await readExactly(client, 4))].join('.');
      else if (req[3] === 3) host = (await readExactly(client, (await readExactly(client, 1))[0]!)).toString('latin1');
      else if (req[3] === 4) {
        const b = await readExactly(client, 16);
        host = normalizeV6(b);
      } else return void client.end(socksReply(8));
      const port = (await readExactly(client, 2)).readUInt16BE(0);
      if (req[1] !== 1) return void client.end(socksReply(7)); // only CONNECT
      let address: string;
      try {
        address = await this.decide(host, port);
      } catch (e) {
        // 2 = connection not allowed by ruleset; the text cannot travel in SOCKS.
        void e;
        return void client.end(socksReply(2));
      }
      let up: Socket;
      try {
        up = await this.connectTo(address, port);
      } catch {
        return void client.end(socksReply(5));
      }
      client.write(socksReply(0));
      this.pipe(client, up);
    } catch {
      client.destroy();
    }
  }
}

function socksReply(code: number): Buffer {
  return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

function normalizeV6(b: Buffer): string {
  const parts: string[] = [];
  for (let i = 0; i < 16; i += 2) parts.push(b.readUInt16BE(i).toString(16));
  return parts.join(':');
}

/**
 * Reads from a paused-mode socket: `take` is called whenever data may be there and returns the
 * result once it has enough (or throws); the promise rejects if the socket ends first.
 */
function readWith<T>(s: Socket, take: () => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      s.removeListener('readable', onReadable);
      s.removeListener('end', onEnd);
      s.removeListener('close', onEnd);
    };
    const onReadable = (): void => {
      let v: T | undefined;
      try {
        v = take();
      } catch (e) {
        done();
        return reject(e as Error);
      }
      if (v === undefined) return;
      done();
      resolve(v);
    };
    const onEnd = (): void => {
      done();
      reject(new Error('closed'));
    };
    s.on('readable', onReadable);
    s.on('end', onEnd);
    s.on('close', onEnd);
    onReadable();
  });
}

/** Reads until `delim` has arrived (inclusive of what came after it), at most `max` bytes. */
function readUntil(s: Socket, delim: Buffer, max: number): Promise<Buffer> {
  let buf = Buffer.alloc(0);
  return readWith(s, () => {
    let chunk: Buffer | null;
    while ((chunk = s.read() as Buffer | null) !== null) {
      buf = Buffer.concat([buf, chunk]);
      if (buf.indexOf(delim) >= 0) return buf;
      if (buf.length > max) throw new Error('head too long');
    }
    return undefined;
  });
}

function readExactly(s: Socket, n: number): Promise<Buffer> {
  if (n === 0) return Promise.resolve(Buffer.alloc(0));
  return readWith(s, () => (s.read(n) as Buffer | null) ?? undefined);
}
