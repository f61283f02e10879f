/** Shared bits of the client integration tests (not a test file itself). */
import assert from 'node:assert/strict';
import { ExecServerClient, type ProcessHandle } from '../../src/client';
import type { Connector } from '../../src/client/types';
import { FaultProxy } from '../helpers/faultProxy';
import { startExecServer, type ExecServerProcess, type ServerKind } from '../helpers/servers';

export interface Gathered {
  /** All output so far, decoded as UTF-8. */
  text(): string;
  /** Resolves when the output so far satisfies `pred`; rejects after `timeoutMs`. */
  until(pred: (text: string) => boolean, timeoutMs?: number, what?: string): Promise<void>;
}

/** Collects a handle's output, asserting that seqs strictly increase (no duplicate, no reorder). */
export function gather(h: ProcessHandle): Gathered {
  const chunks: Buffer[] = [];
  let lastSeq = 0;
  let text = '';
  const waiters = new Set<() => void>();
  h.onEvent((e) => {
    if (e.type === 'failed') return;
    assert.ok(e.seq > lastSeq, `seq ${e.seq} after ${lastSeq}`);
    lastSeq = e.seq;
    if (e.type === 'output') {
      chunks.push(e.data);
      text = Buffer.concat(chunks).toString('utf8');
      for (const w of [...waiters]) w();
    }
  });
  return {
    text: () => text,
    until: (pred, timeoutMs = 15_000, what = 'output') =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pred(text)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; got ${text.length} chars, ending ${JSON.stringify(text.slice(-80))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** `line 1\n` … `line n\n`. */
export function numberedLines(n: number): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `line ${i}\n`;
  return s;
}

/**
 * A bash script printing `pid <pid>`, lines 1..n (pausing 50 ms every `every` lines so a test can
 * break the connection mid-stream), then `pid <pid>` again: same pid twice ⇒ never restarted.
 */
export function streamingScript(n: number, every: number): string[] {
  return [
    'bash',
    '-c',
    `echo "pid $$"; for ((i=1;i<=${n};i++)); do echo "line $i"; if ((i % ${every} == 0)); then sleep 0.05; fi; done; echo "pid $$"`,
  ];
}

/** A connector that records every text the client sends. */
export function recording(inner: Connector, sent: string[]): Connector {
  return async (signal) => {
    const conn = await inner(signal);
    const send = conn.send.bind(conn);
    conn.send = (text: string) => {
      sent.push(text);
      send(text);
    };
    return conn;
  };
}

export interface ProxiedClient {
  server: ExecServerProcess;
  proxy: FaultProxy;
  client: ExecServerClient;
  stop(): Promise<void>;
}

/**
 * A server with a token, a fault proxy in front of it, and a client through the proxy. A cut
 * (`proxy.cut()`, both sockets closed) is noticed at once by the close, not by the keepalive, so
 * the keepalive is loose: a 500 ms bound declared a loaded machine's slow pong a lost connection
 * (a CI run at load ~18), and the 128 MiB stream of a test that cuts nothing then outran the
 * server's 1 MiB window while the client reconnected (OutputLostError).
 */
export async function proxiedClient(kind: ServerKind): Promise<ProxiedClient> {
  const server = await startExecServer(kind, { token: true });
  const proxy = await FaultProxy.forUrl(server.url);
  const client = await ExecServerClient.connect({
    endpoint: { kind: 'websocket', url: proxy.url, token: server.token },
    keepalive: { intervalMs: 2_000, timeoutMs: 15_000 },
    attemptTimeoutMs: 10_000,
    deadlineMs: 30_000,
  });
  return {
    server,
    proxy,
    client,
    stop: async () => {
      client.dispose();
      await proxy.close();
      await server.stop();
    },
  };
}
