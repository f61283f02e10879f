import { spawn } from 'node:child_process';
import { connect as netConnect, type NetConnectOpts, type Socket } from 'node:net';
import WebSocket from 'ws';
import { StdioTransport, MAX_ANSWER_BYTES, WebSocketTransport } from '../rpc';
import type { Disposable } from '../util';
import { RelayConnection } from './sshConnector';
import type { Connection, Connector, Endpoint } from './types';

/** Socket reads land one after another in slabs of this size, each read offered the rest of one (at least READ_MIN). */
const READ_SLAB = 512 * 1024;
const READ_MIN = 128 * 1024;

/**
 * A plain TCP connection for ws:// (or a Unix socket for ws+unix:, the extension's local daemon
 * and SSH's forwarded socket) whose reads go into large slabs (net.Socket's `onread`) instead
 * of a fresh 64 KiB Buffer each. A 64 KiB output frame never fits one 64 KiB read, so `ws` copied
 * every message out of the two reads it spanned (half the client's CPU per stream went to that copy
 * and to collecting both). With reads of 128-512 KiB most messages lie within one read and reach
 * us as views. A slab is never written twice: the views a consumer keeps stay valid (they keep
 * their slab alive).
 */
function slabReadingConnect(options: NetConnectOpts & { socketPath?: string }): Socket {
  let slab = Buffer.allocUnsafeSlow(READ_SLAB);
  let used = 0;
  const next = (): Buffer => {
    if (slab.length - used < READ_MIN) {
      slab = Buffer.allocUnsafeSlow(READ_SLAB);
      used = 0;
    }
    return slab.subarray(used);
  };
  const socket: Socket = netConnect({
    ...options,
    ...(options.socketPath !== undefined ? { path: options.socketPath } : {}),
    onread: {
      buffer: next,
      callback: (n: number, buf: Uint8Array) => {
        used += n;
        // `ws` (and the HTTP upgrade before it) read the socket's 'data' events.
        socket.emit('data', Buffer.from(buf.buffer, buf.byteOffset, n));
        return true;
      },
    },
  } as NetConnectOpts);
  return socket;
}

/** A WebSocket connection with keepalive probes (ws ping/pong control frames). */
class WebSocketConnection extends WebSocketTransport implements Connection {
  ping(): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.ping();
  }

  onPong(listener: () => void): Disposable {
    const l = () => listener();
    this.socket.on('pong', l);
    return { dispose: () => void this.socket.off('pong', l) };
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }
}

/** Opens `ws://`/`wss://` connections, presenting `token` as a bearer token on the upgrade. */
export function websocketConnector(url: string, token?: string, maxAnswerBytes = MAX_ANSWER_BYTES): Connector {
  return (signal) =>
    new Promise<Connection>((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
        perMessageDeflate: false,
        maxPayload: maxAnswerBytes,
        ...(url.startsWith('ws:') || url.startsWith('ws+unix:') ? { createConnection: slabReadingConnect as never } : {}),
      });
      const done = (err?: Error) => {
        signal.removeEventListener('abort', onAbort);
        ws.off('open', onOpen);
        ws.off('error', onError);
        ws.off('unexpected-response', onResponse);
        if (err) {
          // Keep a listener so a late socket error is not an uncaught exception.
          ws.on('error', () => undefined);
          ws.terminate();
          reject(err);
        } else {
          resolve(new WebSocketConnection(ws));
        }
      };
      const onOpen = () => done();
      const onError = (e: Error) => done(new Error(`cannot connect to ${redact(url)}: ${e.message}`));
      const onResponse = (_req: unknown, res: { statusCode?: number; statusMessage?: string }) =>
        done(new Error(`${redact(url)} refused the WebSocket upgrade: HTTP ${res.statusCode ?? '?'} ${res.statusMessage ?? ''}`.trim()));
      const onAbort = () => done(new Error(`connecting to ${redact(url)} timed out`));
      ws.on('open', onOpen);
      ws.on('error', onError);
      ws.on('unexpected-response', onResponse);
      signal.addEventListener('abort', onAbort, { once: true });
    });
}

/**
 * Spawns `command` and speaks the protocol on its stdin/stdout (newline-delimited JSON); its
 * stderr goes to ours. Closing the connection kills the child. Every (re)connect spawns a new
 * child, so resume only works if that child reaches the same server (e.g. a stdio relay).
 */
export function stdioConnector(
  command: string,
  args: string[] = [],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; maxAnswerBytes?: number } = {},
): Connector {
  return (signal) =>
    new Promise<Connection>((resolve, reject) => {
      const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'inherit'] });
      const onAbort = () => {
        child.kill('SIGKILL');
        reject(new Error(`starting ${command} timed out`));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      child.once('error', (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(new Error(`cannot start ${command}: ${e.message}`));
      });
      child.once('spawn', () => {
        signal.removeEventListener('abort', onAbort);
        // Our relay also answers a keepalive of its own, so a dead path is noticed (see RelayConnection).
        const transport = isRelayCommand(command, args)
          ? new RelayConnection(child.stdout, child.stdin, options.maxAnswerBytes ?? MAX_ANSWER_BYTES)
          : new StdioTransport(child.stdout, child.stdin, options.maxAnswerBytes ?? MAX_ANSWER_BYTES);
        transport.onClose(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        });
        child.once('exit', (code, sig) => transport.close(`${command} exited (${sig ?? code})`));
        resolve(transport);
      });
    });
}

/** Whether a stdio command ends in our relay: `… exec-bridge connect` or `node …/cli.js connect`. */
export function isRelayCommand(command: string, args: string[]): boolean {
  const argv = [command, ...args].join(' ');
  return /(^|[\s/])(exec-bridge|cli\.js)\s+connect$/.test(argv.trim());
}

export function connectorFor(endpoint: Endpoint, maxAnswerBytes = MAX_ANSWER_BYTES): Connector {
  return endpoint.kind === 'websocket'
    ? websocketConnector(endpoint.url, endpoint.token, maxAnswerBytes)
    : stdioConnector(endpoint.command, endpoint.args, { cwd: endpoint.cwd, env: endpoint.env, maxAnswerBytes });
}

/** URLs may carry credentials in userinfo or the query; keep only what identifies the server. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '<invalid url>';
  }
}
