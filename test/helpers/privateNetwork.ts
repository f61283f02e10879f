/**
 * A private network for the tests of remote MCP servers reached through the executor: a network
 * namespace of its own (`unshare --net`, loopback up; needs root, as the test machine runs) holding
 * test/helpers/privateNetServers.ts, and exec-servers put into that same namespace (`nsenter`),
 * which the test process talks to over a unix socket (the file system is shared) or stdio. Nothing
 * in the test process can reach the servers' ports: a request that gets there went through the
 * executor.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ExecServerClient, type Endpoint } from '../../src/client';
import { CLI_JS, CODEX_BIN } from './servers';

export { ANNOUNCEMENT } from './mcpHttpServer';

export interface PrivateUrls {
  /** 2025-11-25 Streamable HTTP MCP server (`shout`, `announce`). */
  mcp: string;
  /** HTTP+SSE-only MCP server. */
  sse: string;
  /** OAuth-protected MCP server (`whoami`), its authorization server on the same origin. */
  oauth: string;
  account: string;
  /** Our exec-server's endpoint, once `startOurs` ran. */
  ours?: Endpoint;
}

interface ServerCounts {
  methods: string[];
  openSessions: number;
  streams: number;
}

export interface PrivateState {
  mcp: ServerCounts;
  sse: ServerCounts;
  oauth: {
    counts: { authorizations: number; registrations: number; refreshes: number; refused: number };
    revocations: Array<{ client: string; hint: string | undefined; named: string }>;
    secrets: string[];
  };
  live?: boolean;
}

export interface PrivateNetwork {
  urls: PrivateUrls;
  /** What the servers saw so far; `expire` first makes every access token invalid; `token`: is it still honoured. */
  state(op?: 'state' | 'expire', token?: string): Promise<PrivateState>;
  /** Our exec-server inside the network, over a unix socket; a client connected to it. */
  startOurs(): Promise<{ client: ExecServerClient; stop(): Promise<void> }>;
  /** `codex exec-server --listen stdio` inside the network, as a stdio endpoint. */
  codexEndpoint(): Endpoint;
  close(): Promise<void>;
}

const TIMEOUT_MS = 30_000;

export async function startPrivateNetwork(): Promise<PrivateNetwork> {
  const script = join(__dirname, 'privateNetServers.js');
  const child = spawn('unshare', ['--net', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, script], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-10_000)));
  const lines = lineReader(child, () => stderr);
  const stops: Array<() => Promise<void>> = [];
  try {
    const urls = JSON.parse(await lines.next()) as PrivateUrls;
    const ns = `--net=/proc/${child.pid}/ns/net`;
    return {
      urls,
      state: async (op = 'state', token) => {
        child.stdin!.write(`${JSON.stringify({ op, ...(token !== undefined ? { token } : {}) })}\n`);
        return JSON.parse(await lines.next()) as PrivateState;
      },
      startOurs: async () => {
        const dir = mkdtempSync(join(tmpdir(), 'eb-private-'));
        const socket = join(dir, 'exec.sock');
        const server = spawn('nsenter', [ns, '--', process.execPath, CLI_JS, 'serve', '--listen', `unix:${socket}`], {
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
        let err = '';
        server.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-10_000)));
        const stop = async () => {
          if (server.exitCode === null && server.signalCode === null) {
            const exited = new Promise((r) => server.once('exit', r));
            process.kill(-server.pid!, 'SIGTERM');
            const t = setTimeout(() => process.kill(-server.pid!, 'SIGKILL'), 3000);
            await exited;
            clearTimeout(t);
          }
          rmSync(dir, { recursive: true, force: true });
        };
        stops.push(stop);
        await lineReader(server, () => err).next();
        urls.ours = { kind: 'websocket', url: `ws+unix:${socket}:/` };
        const client = await ExecServerClient.connect({
          endpoint: urls.ours,
          clientName: 'private-net-test',
        });
        return {
          client,
          stop: async () => {
            client.dispose();
            await stop();
          },
        };
      },
      codexEndpoint: () => ({ kind: 'stdio', command: 'nsenter', args: [ns, '--', CODEX_BIN, 'exec-server', '--listen', 'stdio'] }),
      close: async () => {
        for (const s of stops) await s().catch(() => undefined);
        const exited = new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
        child.stdin!.end();
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      },
    };
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
}

/** The lines a child prints on stdout, one at a time, each within TIMEOUT_MS. */
function lineReader(child: ChildProcess, stderr: () => string): { next(): Promise<string> } {
  const queue: string[] = [];
  const waiting: Array<{ resolve(l: string): void; reject(e: Error): void }> = [];
  let ended = false;
  createInterface({ input: child.stdout! }).on('line', (l) => {
    const w = waiting.shift();
    if (w) w.resolve(l);
    else queue.push(l);
  });
  child.once('exit', (code) => {
    ended = true;
    for (const w of waiting.splice(0)) w.reject(new Error(`the process exited (${code}); stderr: ${stderr()}`));
  });
  return {
    next: () => {
      const l = queue.shift();
      if (l !== undefined) return Promise.resolve(l);
      if (ended) return Promise.reject(new Error(`the process has exited; stderr: ${stderr()}`));
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line within ${TIMEOUT_MS} ms; stderr: ${stderr()}`)), TIMEOUT_MS);
        waiting.push({
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
  };
}
