/**
 * A window reload during an outage (issue 27): the new window's `ExecutorConnection` finds its
 * remembered session on an executor it cannot reach (the relay's `outage()`: new connections hang).
 * It keeps trying — state `recovering`, with until when — instead of failing at once, resumes the
 * same session once the network is back and hands back its terminal; `reconnect()` gives the wait
 * up for a new session, and `dispose()` ends it. Our `ExecServer` in process, behind a FaultProxy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExecutorConnection, type ExecutorState, type RestoredSession } from '../../../src/core/executorConnection';
import { SESSION_MEMORY_KEY, SessionMemory } from '../../../src/core/sessionMemory';
import type { ExecServer } from '../../../src/server/execServer';
import { FaultProxy } from '../../helpers/faultProxy';
import { listeningServer } from '../../helpers/inProcessServer';
import { MapMemento } from '../../helpers/mapMemento';

const TOKEN = 'secret-token-0123456789';
const TTL_MS = 600_000;

async function until(what: string, ready: () => boolean, timeoutMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !ready(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
}

describe('a window reload during an outage', () => {
  let server: ExecServer;
  let url: string;
  before(async () => {
    ({ server, url } = await listeningServer({ token: TOKEN, sandboxPrewarmMs: 0 }));
  });
  after(() => server.close());

  /** A window on `proxy`: its connection, what it restored, its states. */
  function window(memento: MapMemento, proxy: FaultProxy) {
    const conn = new ExecutorConnection(
      { kind: 'websocket', name: 'box', url: proxy.url, tokenSecret: 'box' },
      {
        getToken: () => Promise.resolve(TOKEN),
        memory: new SessionMemory(memento),
        sessionTtlMs: () => TTL_MS,
        clientOptions: { keepalive: false, attemptTimeoutMs: 300, backoff: { stepMs: 5, maxMs: 50, longMaxMs: 50 } },
      },
    );
    const restored: RestoredSession[] = [];
    const states: ExecutorState[] = [];
    conn.onDidRestore((r) => restored.push(r));
    conn.onDidChangeState((s) => states.push(s));
    return { conn, restored, states };
  }

  /**
   * A first window with a terminal's process, closed (reloaded) while the network is down. With
   * `offlineFirst`, the connection drops (new ones hang) and the window is recovering before it goes.
   */
  async function reloadDuringOutage(offlineFirst = false) {
    const proxy = await FaultProxy.forUrl(url);
    const memento = new MapMemento();
    const w1 = window(memento, proxy);
    const c1 = await w1.conn.connect();
    const p = await c1.startProcess({ argv: ['sh', '-c', 'echo before; read -r _; echo after'], cwd: '/', tty: false, pipeStdin: true });
    w1.conn.rememberTerminal(p.processId, {
      title: 'sh',
      kind: 'command',
      commandLine: 'sh',
      cwd: '/',
      sandboxed: false,
      sandboxLabel: 'none',
    });
    proxy.outage();
    let offlineSince: number | undefined;
    if (offlineFirst) {
      proxy.cut();
      await until('the first window recovering', () => w1.conn.state.kind === 'recovering');
      offlineSince = (w1.conn.state as Extract<ExecutorState, { kind: 'recovering' }>).since;
    }
    w1.conn.dispose('window reload');
    // The memory writes through asynchronously: the next window reads what was stored.
    await new Promise((r) => setImmediate(r));
    return { proxy, memento, sessionId: c1.sessionId, processId: p.processId, offlineSince, w2: window(memento, proxy) };
  }

  test('keeps trying (recovering, until the TTL) and resumes the same session once the network heals', async (t) => {
    const { proxy, sessionId, processId, w2 } = await reloadDuringOutage();
    t.after(async () => (w2.conn.dispose(), await proxy.close()));
    const t0 = Date.now();
    const connecting = w2.conn.connect();
    await until('recovering', () => w2.conn.state.kind === 'recovering');
    const rec = w2.conn.state as Extract<ExecutorState, { kind: 'recovering' }>;
    assert.ok(rec.since >= t0 && rec.until! >= rec.since + TTL_MS, JSON.stringify(rec));
    assert.match(rec.cause, /cannot connect/);
    // Well past several attempt timeouts: still trying, not failed.
    await until('a few attempts', () => (w2.states.at(-1) as { attempt?: number }).attempt! >= 4);
    assert.ok(!w2.states.some((s) => s.kind === 'failed'), JSON.stringify(w2.states.map((s) => s.kind)));
    // Using the executor (connect again) shares the same attempt.
    assert.equal(w2.conn.connect(), connecting);
    proxy.heal();
    const client = await connecting;
    assert.equal(client.sessionId, sessionId);
    assert.equal(w2.conn.state.kind, 'connected');
    assert.deepEqual(
      w2.restored.map((r) => r.terminals.map((p) => p.processId)),
      [[processId]],
    );
    assert.equal(w2.restored[0]!.expired, undefined);
    const again = await client.attachProcess(processId, { tty: false, stdinWritable: true });
    let text = '';
    again.handle.onEvent((e) => {
      if (e.type === 'output') text += e.data.toString('utf8');
    });
    await again.handle.write('go\n');
    assert.equal((await again.handle.completion).exitCode, 0);
    assert.equal(text, 'before\nafter\n', 'the output from before the outage, then the rest');
  });

  test('a reload while the window was already offline: the new window says offline since the outage began, and keeps the session until then plus the TTL', async (t) => {
    const { proxy, memento, sessionId, offlineSince: since, w2 } = await reloadDuringOutage(true);
    t.after(async () => (w2.conn.dispose(), await proxy.close()));
    const connecting = w2.conn.connect();
    await until('the new window recovering', () => w2.conn.state.kind === 'recovering');
    const rec = w2.conn.state as Extract<ExecutorState, { kind: 'recovering' }>;
    assert.equal(rec.since, since, 'offline since the outage began, not since the reload');
    assert.equal(rec.until, since! + TTL_MS + 60_000);
    proxy.heal();
    const client = await connecting;
    assert.equal(client.sessionId, sessionId);
    // Reachable again: a later reload starts its own count.
    await new Promise((r) => setImmediate(r));
    const stored = memento.get<Record<string, { sessionId: string; offlineSince?: number }>>(SESSION_MEMORY_KEY)!;
    assert.equal(stored['box']!.sessionId, sessionId);
    assert.equal(stored['box']!.offlineSince, undefined);
  });

  test('reconnect() gives the resume up (during an attempt or a wait) and starts a new session once the network is back', async (t) => {
    const { proxy, sessionId, w2 } = await reloadDuringOutage();
    t.after(async () => (w2.conn.dispose(), await proxy.close()));
    const first = w2.conn.connect();
    await until('recovering', () => w2.conn.state.kind === 'recovering');
    // Most likely during an attempt (300 ms each, waits of at most 50 ms): it gives up after that one.
    await new Promise((r) => setTimeout(r, 120));
    const reconnected = w2.conn.reconnect();
    await assert.rejects(first, /given up/);
    proxy.heal();
    const client = await reconnected;
    assert.notEqual(client.sessionId, sessionId);
    assert.equal(w2.restored.length, 0, 'nothing restored: a new session');
  });

  test('dispose() ends the wait', async (t) => {
    const { proxy, w2 } = await reloadDuringOutage();
    t.after(() => proxy.close());
    const first = w2.conn.connect();
    await until('recovering', () => w2.conn.state.kind === 'recovering');
    w2.conn.dispose();
    await assert.rejects(first);
  });
});
