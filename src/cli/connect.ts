import WebSocket from 'ws';
import { ensureDaemon, type DaemonInfo } from '../client';
import { MAX_FRAME_BYTES } from '../rpc';
import { errorMessage, LineSplitter } from '../util';
import { CONNECT_USAGE } from './usage';

/** The line a relay prints before the protocol starts when asked to (`--ready-line`, for bootstrappers). */
export const READY_LINE = 'EB-READY';

/**
 * Relay keepalive, between a client and its relay only (never forwarded): the client writes
 * `{"ebRelayPing":N}`, the relay answers `{"ebRelayPong":N}`. The relay answers the daemon's
 * WebSocket pings only while its client has been heard within `CLIENT_SILENCE_MS`: a relay whose
 * client vanished behind a dead network (its sshd has not noticed) then lets the session go when
 * the client's next relay resumes it, instead of holding it until TCP gives up.
 */
export const RELAY_PING = 'ebRelayPing';
export const RELAY_PONG = 'ebRelayPong';
const CLIENT_SILENCE_MS = 12_000;

interface ConnectArgs {
  idleExitMs?: number;
  sessionTtlMs?: number;
  readyLine: boolean;
  verbose: boolean;
}

/** `exec-bridge connect`: stdin/stdout ↔ the daemon's unix socket. Exits when either side closes. */
export async function connectCommand(argv: string[]): Promise<number> {
  const args = parseConnectArgs(argv);
  if (typeof args === 'number') return args;
  const log = (line: string) => {
    if (args.verbose) process.stderr.write(`[exec-bridge connect] ${line}\n`);
  };
  let daemon: DaemonInfo;
  try {
    daemon = await ensureDaemon({ cliPath: process.argv[1]!, idleExitMs: args.idleExitMs, sessionTtlMs: args.sessionTtlMs, log });
  } catch (e) {
    process.stderr.write(`exec-bridge connect: ${errorMessage(e)}\n`);
    return 1;
  }
  return relay(daemon, args.readyLine, log);
}

/** The parsed command line, or the exit status once the usage was printed (`--help`: 0; a mistake: 2). */
function parseConnectArgs(argv: string[]): ConnectArgs | number {
  const args: ConnectArgs = { readyLine: false, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const num = () => {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${a} needs a non-negative integer`);
      return n;
    };
    try {
      if (a === '--idle-exit-ms') args.idleExitMs = num();
      else if (a === '--session-ttl-ms') args.sessionTtlMs = num();
      else if (a === '--ready-line') args.readyLine = true;
      else if (a === '--verbose') args.verbose = true;
      else if (a === '-h' || a === '--help') {
        process.stdout.write(CONNECT_USAGE + '\n');
        return 0;
      } else throw new Error(`unknown option ${a}`);
    } catch (e) {
      process.stderr.write(`exec-bridge connect: ${errorMessage(e)}\n${CONNECT_USAGE}\n`);
      return 2;
    }
  }
  return args;
}

/** Relays between our stdio and the daemon until either side closes; resolves with the exit status. */
function relay(daemon: DaemonInfo, readyLine: boolean, log: (line: string) => void): Promise<number> {
  const ws = new WebSocket(daemon.url, {
    headers: { Authorization: `Bearer ${daemon.token}` },
    perMessageDeflate: false,
    maxPayload: 4 * MAX_FRAME_BYTES,
    autoPong: false,
  });
  let clientHeardAt = Date.now();
  ws.on('ping', (data: Buffer) => {
    if (Date.now() - clientHeardAt < CLIENT_SILENCE_MS) ws.pong(data);
    else log('not answering the daemon ping: the client has been silent');
  });
  return new Promise<number>((resolve) => {
    let done = false;
    const finish = (code: number, why: string) => {
      if (done) return;
      done = true;
      log(`closing: ${why}`);
      ws.terminate();
      // Let what is queued for stdout go out first.
      process.stdout.write('', () => resolve(code));
    };
    ws.once('unexpected-response', (_req, res) => finish(1, `daemon refused the connection: HTTP ${res.statusCode}`));
    ws.on('error', (e) => {
      process.stderr.write(`exec-bridge connect: ${e.message}\n`);
      finish(1, e.message);
    });
    ws.once('open', () => {
      log(`connected to daemon pid ${daemon.pid}${daemon.started ? ' (started it)' : ''}`);
      if (readyLine) process.stdout.write(`${READY_LINE} ${daemon.pid}\n`);
      const lines = clientLines(ws, () => (clientHeardAt = Date.now()), finish);
      process.stdin.on('data', (d: Buffer) => lines.push(d));
      process.stdin.on('end', () => finish(0, 'stdin ended'));
      process.stdin.on('error', () => finish(0, 'stdin closed'));
      process.stdout.on('error', () => finish(0, 'stdout closed'));
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        void isBinary;
        const ok = process.stdout.write(Buffer.concat([data, NEWLINE]));
        if (!ok) {
          ws.pause();
          process.stdout.once('drain', () => ws.resume());
        }
      });
      ws.on('close', (code, reason) => finish(0, `daemon closed the connection (${code} ${reason.toString()})`));
      process.stdin.resume();
    });
  });
}

/**
 * The client's lines to the daemon, one text frame each; a relay ping is answered here. Stdin is
 * held while more than 64 frames wait for the socket.
 */
function clientLines(ws: WebSocket, heard: () => void, finish: (code: number, why: string) => void): LineSplitter {
  let unsent = 0;
  return new LineSplitter({
    maxLineBytes: MAX_FRAME_BYTES,
    overflow: 'stop',
    onLine: (line) => {
      heard();
      if (line.length === 0) return;
      if (line.length < 64 && line.includes(RELAY_PING)) {
        const n = /^\{"ebRelayPing":(\d{1,15})\}\s*$/.exec(line.toString('latin1'))?.[1];
        if (n !== undefined) {
          process.stdout.write(`{"${RELAY_PONG}":${n}}\n`);
          return;
        }
      }
      unsent++;
      // Text frames, as a WebSocket client sends them; hold stdin while the socket is behind.
      ws.send(line.toString('utf8'), () => {
        if (--unsent === 0 && process.stdin.isPaused()) process.stdin.resume();
      });
      if (unsent > 64) process.stdin.pause();
    },
    onOverflow: () => finish(1, `a line longer than ${MAX_FRAME_BYTES} bytes`),
  });
}

const NEWLINE = Buffer.from('\n');
