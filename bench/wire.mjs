// A minimal exec-server wire client and server launcher shared by the benchmarks (plain JS, no
// build step: the benchmarks must be able to measure the real codex exec-server the same way).
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import WebSocket from 'ws';

export const PATH_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

export function startParams(processId, args, extra = {}) {
  return { processId, argv: args, cwd: 'file:///tmp', env: PATH_ENV, tty: false, pipeStdin: false, arg0: null, ...extra };
}

/**
 * Starts an exec-server that prints its ws:// URL on stdout (ours or codex); `stop()` sends SIGTERM
 * to its process group and waits up to `stopMs` before SIGKILL. `stderr()` is what it logged.
 */
export async function launchServer(kind, cmd, args, stopMs = 5000, anyUrl = false) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const url = await withTimeout(
    new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = (anyUrl ? /ws(\+unix)?:\S+/ : /ws:\/\/[0-9.:]+/).exec(out);
        if (m) resolve(m[0]);
      });
      child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}): ${err}`)));
    }),
    20_000,
    `${kind} server URL`,
  );
  return {
    url,
    child,
    stderr: () => err,
    async stop() {
      const pid = child.pid;
      if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        return;
      }
      await withTimeout(exited, stopMs, `${kind} server exit`).catch(() => process.kill(-pid, 'SIGKILL'));
    },
  };
}

/** Just enough of the protocol for the benchmarks: initialize, calls, per-process event handlers. */
export class Client {
  constructor(ws) {
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    /** processId → handler(method, params) */
    this.procs = new Map();
    ws.on('message', (data) => this.onMessage(data));
    ws.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('connection closed'));
      this.pending.clear();
    });
  }

  static async connect(url) {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    await withTimeout(once(ws, 'open'), 10_000, 'websocket open');
    const c = new Client(ws);
    const init = await c.call('initialize', { clientName: 'exec-bridge-bench' });
    if (!init.sessionId) throw new Error('initialize returned no sessionId');
    ws.send('{"method":"initialized","params":{}}');
    return c;
  }

  onMessage(data) {
    const msg = JSON.parse(data.toString());
    if (msg.method !== undefined) {
      const h = this.procs.get(msg.params?.processId);
      if (h) h(msg.method, msg.params);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`${msg.error.code} ${msg.error.message}`));
    else p.resolve(msg.result);
  }

  call(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /**
   * Starts a process and resolves at `process/closed` with the decoded output byte count.
   * The handler is registered before the start request: events may precede its answer.
   */
  run(processId, args, extra = {}, onOutput) {
    let bytes = 0;
    const closed = new Promise((resolve, reject) => {
      this.procs.set(processId, (method, params) => {
        if (method === 'process/output') {
          const n = Buffer.from(params.chunk, 'base64').length; // decode, don't keep
          bytes += n;
          onOutput?.(n, params);
        } else if (method === 'process/closed') {
          this.procs.delete(processId);
          resolve(bytes);
        }
      });
      this.call('process/start', startParams(processId, args, extra)).catch((e) => {
        this.procs.delete(processId);
        reject(e);
      });
    });
    return closed;
  }

  close() {
    this.ws.terminate();
  }
}
