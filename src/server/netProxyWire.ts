import type { Socket } from 'node:net';
import { canonicalHost } from './netProxyRules';

/*
 * The managed network proxy's wire (./netProxy.ts): the strict parse of an HTTP request head, the
 * replies it sends (HTTP and SOCKS5), and bounded reads from a client socket.
 */

/** `s` with every byte outside printable ASCII as \xNN (a host name as it came is not trusted text). */
export function printable(s: string): string {
  return s.replace(/[^\x21-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function httpReply(status: string, body: string): string {
  return (
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body) + 1}\r\n` +
    `X-Exec-Bridge-Denied: 1\r\nConnection: close\r\n\r\n${body}\n`
  );
}

export function socksReply(code: number): Buffer {
  return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

export function v6Text(b: Buffer): string {
  const parts: string[] = [];
  for (let i = 0; i < 16; i += 2) parts.push(b.readUInt16BE(i).toString(16));
  return parts.join(':');
}

export interface ProxyRequest {
  method: string;
  /** The host as the request names it (canonical: it passed `canonicalHost`). */
  host: string;
  port: number;
  /** Absolute form: the origin-form target sent upstream (`/path?query`); CONNECT: ''. */
  path: string;
  version: string;
  /** The header lines as they came. */
  headers: string[];
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Parses a request head (without its final CRLF CRLF) strictly: one request line `METHOD TARGET
 * HTTP/1.x` (CONNECT host:port, or an `http://` URL), header lines `name: value` with no control
 * characters, no folding, at most one Host header, which must name the same host and port as the
 * target. The target's host must be a host name or IP literal (`canonicalHost`).
 */
export function parseProxyRequest(head: string): ProxyRequest | { error: string } {
  const lines = head.split('\r\n');
  // Tab is allowed in header values; any other control character (a NUL, a lone CR or LF) is not.
  if (lines.some((l) => /[\x00-\x08\x0a-\x1f\x7f]/.test(l))) return { error: 'a control character in the request head' };
  const line = /^(\S+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0]!);
  if (!line || !TOKEN.test(line[1]!) || /[^\x21-\x7e]/.test(line[2]!)) return { error: 'not a request line (METHOD TARGET HTTP/1.1)' };
  const [, method, target, version] = line as unknown as [string, string, string, string];
  const headers = lines.slice(1);
  for (const h of headers) {
    const colon = h.indexOf(':');
    if (colon <= 0 || !TOKEN.test(h.slice(0, colon))) return { error: `not a header line: ${printable(h.slice(0, 80))}` };
  }
  let host: string;
  let port: number;
  let path = '';
  if (method === 'CONNECT') {
    const a = parseAuthority(target, undefined);
    if ('error' in a) return { error: `CONNECT needs host:port: ${a.error}` };
    ({ host, port } = a);
  } else {
    const url = /^http:\/\/([^/?#]*)([^#]*)/i.exec(target);
    if (!url) {
      const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(target);
      return {
        error: scheme ? `${scheme[1]}: is not proxied; use CONNECT` : 'send the request in absolute form (http://host/path)',
      };
    }
    if (url[1]!.includes('@')) return { error: 'a user name or password in the URL is not forwarded' };
    const a = parseAuthority(url[1]!, 80);
    if ('error' in a) return { error: a.error };
    ({ host, port } = a);
    path = url[2] === '' ? '/' : url[2]!.startsWith('/') ? url[2]! : `/${url[2]}`;
  }
  const hostHeaders = headers.filter((h) => /^host:/i.test(h));
  if (hostHeaders.length > 1) return { error: 'more than one Host header' };
  if (hostHeaders.length === 1) {
    const value = hostHeaders[0]!.slice(5).trim();
    const a = parseAuthority(value, method === 'CONNECT' ? port : 80);
    if ('error' in a) return { error: `the Host header: ${a.error}` };
    if (a.host !== host || a.port !== port)
      return { error: `the Host header names ${printable(value)}, the request is for ${printable(target)}` };
  }
  return { method, host, port, path, version, headers };
}

/** `host:port`, `[v6]:port` (the port optional when `defaultPort` is given), the host made canonical. */
function parseAuthority(text: string, defaultPort: number | undefined): { host: string; port: number } | { error: string } {
  const m = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(text);
  if (!m) return { error: `${printable(text)} is not host:port` };
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  if (port === undefined) return { error: `${printable(text)} has no port` };
  if (port < 1 || port > 65535) return { error: `${printable(text)}: the port must be 1-65535` };
  const c = canonicalHost(m[1]!);
  if (!c.ok) return { error: `${printable(m[1]!)} is not a host name or IP address: ${c.reason}` };
  return { host: c.host, port };
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
export function readUntil(s: Socket, delim: Buffer, max: number): Promise<Buffer> {
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

export function readExactly(s: Socket, n: number): Promise<Buffer> {
  if (n === 0) return Promise.resolve(Buffer.alloc(0));
  return readWith(s, () => (s.read(n) as Buffer | null) ?? undefined);
}
