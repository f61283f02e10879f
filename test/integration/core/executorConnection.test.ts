/**
 * `ExecutorConnection` against real servers on loopback: our `ExecServer` in process (WebSocket
 * executors) and the real bundled executor (the `dist/cli.js` daemon, found or started by a real
 * `BundledServer`, in a private directory of the test's own).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BundledServer } from '../../../src/core/bundledServer';
import type { ExecutorConfig } from '../../../src/core/executorConfig';
import { bundledExitText, type ExecutorState } from '../../../src/core/executorConnection';
import { ExecServer } from '../../../src/server/execServer';
import type { Event } from '../../../src/util/emitter';
import { listeningServer } from '../../helpers/inProcessServer';
import { observe, rejection, TOKEN } from '../../helpers/observedExecutor';
import { CLI_JS } from '../../helpers/servers';

const WAIT_MS = 15_000;

/** Resolves once `ready()` is true, checked after each event; fails after `WAIT_MS`. */
function when<T>(event: Event<T>, ready: () => boolean, what: string): Promise<void> {
  if (ready()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out waiting for ${what}`));
    }, WAIT_MS);
    const sub = event(() => {
      if (!ready()) return;
      clearTimeout(timer);
      sub.dispose();
      resolve();
    });
  });
}

describe('a WebSocket executor', () => {
  let server: ExecServer;
  let url: string;
  const ws = (extra: Partial<Extract<ExecutorConfig, { kind: 'websocket' }>> = {}): ExecutorConfig => ({
    kind: 'websocket',
    name: 'box',
    url,
    tokenSecret: 'box-token',
    ...extra,
  });

  before(async () => {
    ({ server, url } = await listeningServer({ token: TOKEN, sandboxPrewarmMs: 0 }));
  });
  after(() => server.close());

  test('connects once: concurrent calls share the attempt, a connected executor is returned as it is', async (t) => {
    const { conn, kinds, tokenAsks, logs, states } = observe(ws());
    t.after(() => conn.dispose());
    assert.equal(conn.state.kind, 'idle');
    const [a, b] = await Promise.all([conn.connect(), conn.connect()]);
    assert.equal(a, b);
    assert.equal(await conn.connect(), a);
    assert.equal(conn.client, a);
    assert.deepEqual(tokenAsks, ['box-token'], 'one attempt, with the named secret');
    assert.deepEqual(kinds(), ['connecting', 'connected']);
    assert.deepEqual(states.at(-1), { kind: 'connected', sessionId: a.sessionId });
    assert.ok(logs.includes(`box: connecting (${url}, with token)`));
    assert.ok(!logs.some((l) => l.includes(TOKEN)), 'the token is never logged');
    // Where commands run: the executor user's home (from `initialize`), unless configured.
    assert.equal(conn.defaultCwd(), homedir());
    assert.equal(conn.shellPath(), a.environmentInfo?.shell.path || '/bin/sh');
  });

  test('a configured cwd wins over the executor home', async (t) => {
    const { conn } = observe(ws({ cwd: '/srv/work' }));
    t.after(() => conn.dispose());
    await conn.connect();
    assert.equal(conn.defaultCwd(), '/srv/work');
  });

  test('a refused connection fails with the reason; the next connect() tries anew and can succeed', async (t) => {
    let token: string | undefined = 'wrong';
    const { conn, kinds, states, logs } = observe(ws(), { token: () => token });
    t.after(() => conn.dispose());
    const err = await rejection(conn.connect());
    assert.match(err.message, /cannot connect to the exec-server: .*401/);
    assert.deepEqual(kinds(), ['connecting', 'failed']);
    assert.deepEqual(states.at(-1), { kind: 'failed', message: err.message });
    assert.equal(conn.client, undefined);
    assert.ok(logs.some((l) => l === `box: connect failed: ${err.message}`));

    token = undefined;
    assert.match((await rejection(conn.connect())).message, /401/, 'no token: refused too');
    assert.ok(logs.includes(`box: connecting (${url})`), 'without a token, the log says so');

    token = TOKEN;
    const client = await conn.connect();
    assert.equal(conn.state.kind, 'connected');
    assert.equal(conn.client, client);
    assert.deepEqual(kinds(), ['connecting', 'failed', 'connecting', 'failed', 'connecting', 'connected']);
  });

  test('reconnect drops the client and opens a new session; the old client says nothing any more', async (t) => {
    const { conn, kinds, clientStates } = observe(ws());
    t.after(() => conn.dispose());
    const first = await conn.connect();
    const heard = clientStates.length;
    const second = await conn.reconnect();
    assert.notEqual(second, first);
    assert.notEqual(second.sessionId, first.sessionId);
    assert.equal(first.state.kind, 'failed', 'the old client is disposed');
    assert.equal(conn.client, second);
    assert.deepEqual(kinds(), ['connecting', 'connected', 'idle', 'connecting', 'connected']);
    // Only the current client's states are passed on (the old one's `failed` is not).
    assert.ok(clientStates.slice(heard).every((s) => s.kind !== 'failed'));
    assert.equal(conn.state.kind, 'connected');
  });

  test('reconnect while a connect is in flight waits for it, then replaces it', async (t) => {
    const { conn, kinds } = observe(ws());
    t.after(() => conn.dispose());
    const pending = conn.connect();
    const replaced = await conn.reconnect();
    const first = await pending;
    assert.notEqual(replaced, first);
    assert.equal(first.state.kind, 'failed');
    assert.equal(conn.client, replaced);
    assert.deepEqual(kinds(), ['connecting', 'connected', 'idle', 'connecting', 'connected']);
  });

  test('after dispose, connect() is refused and the client is gone', async () => {
    const { conn } = observe(ws());
    const client = await conn.connect();
    conn.dispose();
    assert.equal(client.state.kind, 'failed');
    assert.equal(conn.client, undefined);
    assert.equal((await rejection(conn.connect())).message, 'Exec Bridge is shutting down');
  });

  test('disposed while connecting: the new client is dropped and the caller told why', async () => {
    const { conn } = observe(ws());
    const pending = conn.connect();
    conn.dispose();
    assert.equal((await rejection(pending)).message, 'Exec Bridge is shutting down');
    assert.equal(conn.client, undefined);
  });
});

describe('an executor that goes away', () => {
  test('recovering, then failed with the client reason; connect() then tries again', async (t) => {
    const server = new ExecServer({ token: TOKEN, sandboxPrewarmMs: 0 });
    const url = await server.listen('127.0.0.1', 0);
    const { conn, kinds, states, clientStates } = observe(
      { kind: 'websocket', name: 'box', url, tokenSecret: 'box' },
      { clientOptions: { keepalive: false, deadlineMs: 300, backoff: { stepMs: 5, maxMs: 20 } } },
    );
    t.after(() => conn.dispose());
    const client = await conn.connect();
    // As above: no mkfifo running at close.
    assert.equal((await (await client.startProcess({ argv: ['/bin/true'], cwd: '/' })).completion).exitCode, 0);
    await server.close();
    await when(conn.onDidChangeState, () => conn.state.kind === 'failed', 'failed');
    assert.deepEqual(kinds().slice(0, 3), ['connecting', 'connected', 'recovering']);
    const failed = states.at(-1) as Extract<ExecutorState, { kind: 'failed' }>;
    assert.equal(client.state.kind, 'failed');
    assert.equal(failed.message, client.state.kind === 'failed' ? client.state.error.message : '');
    assert.deepEqual(
      clientStates.map((s) => s.kind).filter((k, i, all) => k !== all[i - 1]),
      ['recovering', 'failed'],
      'the client states are passed on',
    );
    // A failed client is not reused: connect() makes a new attempt (which fails: nothing listens).
    const err = await rejection(conn.connect());
    assert.match(err.message, /cannot connect to the exec-server/);
    assert.deepEqual(kinds().slice(-2), ['connecting', 'failed']);
  });
});

describe('an executor nobody uses', () => {
  /** A server of its own, closed under a connected executor; `active` says whether the user works with it. */
  async function lose(active: boolean, withProcess: boolean) {
    const server = new ExecServer({ token: TOKEN, sandboxPrewarmMs: 0 });
    const url = await server.listen('127.0.0.1', 0);
    const o = observe(
      { kind: 'websocket', name: 'spare', url, tokenSecret: 'spare' },
      { isActive: () => active, clientOptions: { keepalive: false, deadlineMs: 60_000, backoff: { stepMs: 5, maxMs: 20 } } },
    );
    const client = await o.conn.connect();
    if (withProcess) await client.startProcess({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: '/', tty: false });
    await server.close();
    return { ...o, client };
  }

  test('stops resuming a lost connection at once: idle, no retries, one log line', async (t) => {
    const { conn, kinds, logs, client } = await lose(false, false);
    t.after(() => conn.dispose());
    await when(conn.onDidChangeState, () => conn.state.kind === 'idle', 'idle');
    assert.deepEqual(kinds(), ['connecting', 'connected', 'idle'], 'never shown as recovering');
    assert.equal(client.state.kind, 'failed');
    assert.equal(logs.filter((l) => /resume attempt/.test(l)).length, 0, 'no resume attempts');
    assert.ok(logs.some((l) => l.includes('not in use, so not resuming')));
    assert.equal(conn.client, undefined);
  });

  test('the active executor, or one with a process running, keeps resuming', async (t) => {
    for (const [active, withProcess] of [
      [true, false],
      [false, true],
    ] as const) {
      const { conn, client } = await lose(active, withProcess);
      t.after(() => conn.dispose());
      await when(conn.onDidChangeState, () => conn.state.kind === 'recovering' && conn.state.attempt >= 3, 'a few attempts');
      assert.equal(conn.client, client, `active=${active} process=${withProcess}`);
    }
  });
});

describe('the bundled executor', () => {
  test('its daemon dying fails the connection at once; connect() starts it again', async (t) => {
    const runtime = mkdtempSync(join(tmpdir(), 'exec-bridge-conn-rt-'));
    const bundled = new BundledServer({
      cliPath: CLI_JS,
      env: { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: join(runtime, 'p') },
      idleExitMs: 2000,
    });
    t.after(async () => {
      await bundled.stop();
      rmSync(runtime, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 }); // the stopped daemon may still be removing its pipes (ENOTEMPTY)
    });
    // A long deadline: only the server's exit (not the recovery deadline) can fail it in time.
    const { conn, states, logs } = observe(
      { kind: 'bundled', name: 'bundled' },
      { bundled, clientOptions: { keepalive: false, deadlineMs: 60_000 } },
    );
    t.after(() => conn.dispose());
    const first = await conn.connect();
    const pid = bundled.pid!;
    assert.equal(conn.state.kind, 'connected');
    assert.ok(conn.defaultCwd().startsWith('/'));
    const proc = await first.startProcess({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: '/', tty: false });
    const procFailure = proc.completion.then(
      () => new Error('the process completed'),
      (e: Error) => e,
    );

    // The whole group, as an OOM kill of a container would: a `mkfifo` of the server left running
    // could still be filling its FIFO folder when the next server sweeps it.
    process.kill(-pid, 'SIGKILL');
    await when(conn.onDidChangeState, () => conn.state.kind === 'failed', 'failed');
    const message = `the bundled exec-server (the exec-bridge daemon, pid ${pid}) is gone, and what ran on it ended with it. Run "Exec Bridge: Reconnect" (or click the status bar) to start it again`;
    assert.equal(bundledExitText(pid), message);
    assert.deepEqual(states.at(-1), { kind: 'failed', message });
    assert.equal(first.state.kind, 'failed');
    // The same plain words reach what ran on it (terminal, Executors view), not "the exec client was disposed".
    assert.equal(first.state.kind === 'failed' && first.state.error.message, message);
    assert.equal((await procFailure).message, message);
    assert.ok(logs.includes(`bundled: ${message}`));

    const second = await conn.connect();
    assert.notEqual(second, first);
    assert.ok(bundled.pid !== undefined && bundled.pid !== pid, 'a new server');
    assert.equal(conn.state.kind, 'connected');
  });
});
