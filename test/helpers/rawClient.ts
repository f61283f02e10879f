/**
 * A deliberately thin JSON-RPC-over-WebSocket client for wire-level tests: it sends exactly the
 * frames a test asks for and records everything it receives, so tests can assert on the wire
 * (our ExecServerClient is tested separately, against these same servers).
 */
import WebSocket from 'ws';
import { CLI_JS, startExecServer, type ExecServerProcess, type ServerKind } from './servers';

export const CLI = CLI_JS;

export interface WireMessage {
  id?: number | string;
  method?: string;
  params?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  result?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  error?: { code: number; message: string; data?: unknown };
}

export type StartedServer = ExecServerProcess;

/** Our server (`dist/cli.js serve`) or the real codex exec-server on port 0 (see servers.ts). */
export function startServer(kind: ServerKind, extraArgs: string[] = [], env: NodeJS.ProcessEnv = process.env): Promise<StartedServer> {
  return startExecServer(kind, { args: extraArgs, env });
}

export class RawClient {
  readonly received: WireMessage[] = [];
  private nextId = 1;
  private waiters: Array<{ pred: (m: WireMessage) => boolean; resolve: (m: WireMessage) => void }> = [];
  closed = false;
  closeCode: number | undefined;
  private closedPromise: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as WireMessage;
      this.received.push(m);
      this.waiters = this.waiters.filter((w) => {
        if (w.pred(m)) {
          w.resolve(m);
          return false;
        }
        return true;
      });
    });
    this.closedPromise = new Promise((resolve) =>
      ws.on('close', (code) => {
        this.closed = true;
        this.closeCode = code;
        resolve();
      }),
    );
    ws.on('error', () => undefined);
  }

  static async connect(url: string, headers: Record<string, string> = {}): Promise<RawClient> {
    const ws = new WebSocket(url, { headers });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    return new RawClient(ws);
  }

  /** Connects and performs initialize + initialized. */
  static async session(url: string, resumeSessionId?: string): Promise<{ client: RawClient; sessionId: string; init: WireMessage }> {
    const client = await RawClient.connect(url);
    const init = await client.call('initialize', resumeSessionId ? { clientName: 'test', resumeSessionId } : { clientName: 'test' });
    if (init.error) throw new Error(`initialize failed: ${init.error.message}`);
    client.notify('initialized', {});
    return { client, sessionId: init.result.sessionId as string, init };
  }

  sendRaw(text: string | Buffer): void {
    this.ws.send(text);
  }

  notify(method: string, params?: unknown): void {
    this.ws.send(JSON.stringify(params === undefined ? { method } : { method, params }));
  }

  /** Sends a request and resolves with the whole response message (result or error). */
  call(method: string, params?: unknown, id: number | string = this.nextId++, timeoutMs = 30_000): Promise<WireMessage> {
    // Only an answer that arrives after sending counts (a test may have reused the id in a raw frame).
    const from = this.received.length;
    const p = this.waitFor(
      (m) => m.id === id && m.method === undefined && this.received.indexOf(m) >= from,
      timeoutMs,
      `answer to ${method} #${id}`,
    );
    this.ws.send(JSON.stringify(params === undefined ? { id, method } : { id, method, params }));
    return p;
  }

  /** Resolves with the first received message (past or future) matching `pred`. */
  waitFor(pred: (m: WireMessage) => boolean, timeoutMs = 30_000, what = 'message'): Promise<WireMessage> {
    const seen = this.received.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs}ms waiting for ${what}`)), timeoutMs);
      this.waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  /** Waits for `process/closed` of a process and returns all its notifications, in arrival order. */
  async processEvents(processId: string, timeoutMs = 30_000): Promise<WireMessage[]> {
    await this.waitFor(
      (m) => m.method === 'process/closed' && m.params?.processId === processId,
      timeoutMs,
      `process/closed of ${processId}`,
    );
    return this.received.filter((m) => m.method?.startsWith('process/') && m.params?.processId === processId);
  }

  /** Concatenated decoded output of a process from its notifications, ordered by seq. */
  output(processId: string, stream?: string): string {
    return this.received
      .filter((m) => m.method === 'process/output' && m.params.processId === processId && (!stream || m.params.stream === stream))
      .sort((a, b) => a.params.seq - b.params.seq)
      .map((m) => Buffer.from(m.params.chunk, 'base64').toString())
      .join('');
  }

  waitClosed(timeoutMs = 10_000): Promise<void> {
    return Promise.race([
      this.closedPromise,
      new Promise<void>((_, reject) => setTimeout(() => reject(new Error('connection did not close')), timeoutMs).unref()),
    ]);
  }

  close(): void {
    this.ws.terminate();
  }
}

export const tmpUri = (p: string) => 'file://' + p;

/** Process start params with the defaults every test repeats. */
export function startParams(processId: string, argv: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { processId, argv, cwd: 'file:///tmp', env: { PATH: '/usr/local/bin:/usr/bin:/bin' }, tty: false, arg0: null, ...extra };
}
