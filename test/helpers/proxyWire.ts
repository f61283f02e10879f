/**
 * Raw exchanges with a managed-network proxy (src/server/netProxy.ts) for the bypass and limit
 * tests: every byte is the test's, so NULs and malformed heads reach the proxy as written.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** A loopback TCP target that answers every connection with `body` (as a tiny HTTP response) and counts them. */
export class BannerServer {
  hits = 0;
  readonly server: Server;
  /** The target's side of every connection, to wait for their close. */
  readonly sockets = new Set<Socket>();
  /** The target's side of the latest connection. */
  last: Socket | undefined;

  constructor(
    readonly body: string,
    readonly mode: 'answer' | 'hold' = 'answer',
  ) {
    this.server = createServer((s) => {
      this.hits++;
      this.last = s;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => s.destroy());
      s.resume(); // reads and drops what comes (an unread byte at close would reset the connection)
      if (mode === 'answer') s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      // 'hold': keeps the connection open, silent
    });
  }

  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as AddressInfo).port;
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }
}

/** Connects to the proxy at 127.0.0.1:port, writes `bytes`, and collects what comes back until the proxy closes (bounded). */
export async function exchange(port: number, bytes: Buffer | string, timeoutMs = 30_000): Promise<Buffer> {
  const s = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  s.on('error', () => undefined);
  s.write(bytes);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    s.destroy();
  }, timeoutMs);
  await once(s, 'close');
  clearTimeout(timer);
  const out = Buffer.concat(chunks);
  if (timedOut) throw new Error(`the proxy did not close within ${timeoutMs} ms; got ${JSON.stringify(out.toString('latin1'))}`);
  return out;
}

/** A SOCKS5 greeting (no authentication) and CONNECT request, in one write. */
export function socks5(host: string | Buffer, port: number, atyp: 1 | 3 | 4 = 3): Buffer {
  const addr =
    atyp === 3
      ? Buffer.concat([Buffer.from([Buffer.byteLength(host as string, 'latin1')]), Buffer.from(host as string, 'latin1')])
      : (host as Buffer);
  const p = Buffer.alloc(2);
  p.writeUInt16BE(port);
  return Buffer.concat([Buffer.from([5, 1, 0, 5, 1, 0, atyp]), addr, p]);
}

/** The reply code of a SOCKS5 exchange (after the method selection), or undefined if there was none. */
export function socksCode(reply: Buffer): number | undefined {
  return reply.length >= 4 && reply[0] === 5 && reply[1] === 0 ? reply[3] : undefined;
}

/** Opens a connection to the proxy and resolves with the socket once `first` bytes of the answer arrived (its text so far too). */
export async function openTunnel(
  port: number,
  request: string | Buffer,
  enough: (text: string) => boolean,
  timeoutMs = 30_000,
): Promise<{ socket: Socket; text: string }> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  s.write(request);
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: ${JSON.stringify(text)}`));
    }, timeoutMs);
    const onData = (d: Buffer): void => {
      text += d.toString('latin1');
      if (!enough(text)) return;
      clearTimeout(timer);
      s.removeListener('data', onData);
      resolve({ socket: s, text });
    };
    s.on('data', onData);
    s.once('close', () => {
      clearTimeout(timer);
      if (!enough(text)) reject(new Error(`closed before an answer: ${JSON.stringify(text)}`));
    });
  });
}
