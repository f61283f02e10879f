import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { isAlive, until } from '../../helpers/procs';
import { CLI, RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url.replace('ws://', 'http://'), { headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Attempts an upgrade and reports the HTTP refusal (status and body) or 'open'. */
function tryUpgrade(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => {
      ws.terminate();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    });
    ws.on('error', (e) => resolve(`error ${e.message}`));
  });
}

describe('our exec-server: listener, auth and origin', () => {
  let server: StartedServer;
  const token = 'test-token-' + Math.random().toString(36).slice(2);
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eb-tok-'));
    writeFileSync(join(dir, 'token'), `  ${token}\n`, { mode: 0o600 });
    server = await startServer('ours', ['--token-file', join(dir, 'token'), '--allow-origin', 'vscode-file://vscode-app']);
  });
  after(() => server.stop());

  test('prints exactly one ws:// URL line on stdout, bound to loopback', () => {
    assert.match(server.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
  });

  test('/readyz answers 200 without auth; GET / is not an upgrade', async () => {
    assert.equal((await httpGet(server.url + '/readyz')).status, 200);
    assert.deepEqual(await httpGet(server.url + '/'), { status: 400, body: "Connection header did not include 'upgrade'" });
  });

  test('bearer token: missing, wrong, wrong scheme are 401 with the reason; any case and spacing of Bearer works', async () => {
    assert.equal(await tryUpgrade(server.url, {}), '401 missing websocket bearer token');
    assert.equal(await tryUpgrade(server.url + '/?token=' + token, {}), '401 missing websocket bearer token');
    assert.equal(await tryUpgrade(server.url, { Authorization: 'Bearer nope' }), '401 invalid websocket bearer token');
    assert.equal(await tryUpgrade(server.url, { Authorization: `Basic ${token}` }), '401 invalid authorization header');
    assert.equal(await tryUpgrade(server.url, { Authorization: `Bearer ${token}` }), 'open');
    assert.equal(await tryUpgrade(server.url, { Authorization: `bearer   ${token}  ` }), 'open');
  });

  test('a browser Origin is refused unless allowed', async () => {
    const auth = { Authorization: `Bearer ${token}` };
    assert.match(
      await tryUpgrade(server.url, { ...auth, Origin: 'https://evil.example' }),
      /^403 browser origin https:\/\/evil.example is not allowed/,
    );
    assert.match(await tryUpgrade(server.url, { ...auth, Origin: 'http://127.0.0.1:8080' }), /^403 /);
    assert.equal(await tryUpgrade(server.url, { ...auth, Origin: 'vscode-file://vscode-app' }), 'open');
  });

  test('the token never appears in the server log', () => {
    assert.ok(!server.stderr().includes(token));
  });
});

describe('our exec-server: protocol gatekeeping and bad input', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test('calls before initialize / initialized are refused; initialize only once; failed initialize may be retried', async () => {
    const c = await RawClient.connect(server.url);
    assert.deepEqual((await c.call('process/read', { processId: 'x' })).error, {
      code: -32600,
      message: 'client must call initialize before using exec methods',
    });
    assert.equal(
      (await c.call('environment/info', {})).error?.message,
      'client must call initialize before using environment info methods',
    );
    assert.equal((await c.call('initialize', { clientName: 'x', resumeSessionId: 'nope' })).error?.message, 'unknown session id nope');
    assert.equal((await c.call('initialize', {})).error?.message, 'missing field `clientName`');
    assert.ok((await c.call('initialize', { clientName: 'x', unknownField: 1 })).result.sessionId);
    assert.equal(
      (await c.call('fs/readFile', { path: 'file:///etc/hostname' })).error?.message,
      'client must send initialized before using filesystem methods',
    );
    assert.deepEqual((await c.call('initialize', { clientName: 'x' })).error, {
      code: -32600,
      message: 'initialize may only be sent once per connection',
    });
    c.notify('initialized');
    assert.deepEqual((await c.call('environment/status')).result, { status: 'ready' });
    c.close();
  });

  test('string ids echo as strings; the jsonrpc member is tolerated and never sent', async () => {
    const { client: c } = await RawClient.session(server.url);
    const r = await c.call('environment/status', {}, 'str-id');
    assert.deepEqual(r, { id: 'str-id', result: { status: 'ready' } });
    c.sendRaw('{"jsonrpc":"2.0","id":77,"method":"environment/status"}');
    assert.deepEqual(await c.waitFor((m) => m.id === 77), { id: 77, result: { status: 'ready' } });
    assert.ok(c.received.every((m) => !('jsonrpc' in m)));
    c.close();
  });

  test('malformed frames get id -1 and the connection stays open; unknown methods get -32601', async () => {
    const { client: c } = await RawClient.session(server.url);
    for (const frame of [
      '{not json',
      '42',
      '[]',
      '[{"id":1,"method":"environment/status"}]',
      '{}',
      '{"id":99.5,"method":"environment/info"}',
      '{"id":null,"method":"x"}',
    ]) {
      const before = c.received.length;
      c.sendRaw(frame);
      const m = await c.waitFor((x) => c.received.indexOf(x) >= before && x.id === -1);
      assert.equal(m.error?.code, -32600, frame);
    }
    c.sendRaw(Buffer.from('{"id":5,"method":"environment/status"}')); // binary frame
    assert.deepEqual((await c.waitFor((m) => m.id === 5)).result, { status: 'ready' });
    assert.deepEqual((await c.call('nope/x', {})).error, { code: -32601, message: 'exec-server stub does not implement `nope/x` yet' });
    assert.equal((await c.call('process/read', 'notanobject')).error?.code, -32602);
    // A wait far beyond Node's timer range still waits (instead of overflowing into a busy loop).
    await c.call('process/start', startParams('idle', ['sleep', '30']));
    const poll = c.call('process/read', { processId: 'idle', waitMs: 1e12 }, 'long-poll');
    let answered = false;
    void poll.then(() => (answered = true));
    // Proving a non-event needs a bound: an overflowed timer fires after 1 ms (answering at once,
    // or spinning and warning), so 50 ms and a round trip behind the poll leave ample margin.
    await new Promise((r) => setTimeout(r, 50));
    await c.call('environment/status');
    assert.equal(answered, false, 'the long poll is still waiting');
    assert.doesNotMatch(server.stderr(), /TimeoutOverflowWarning/);
    await c.call('process/terminate', { processId: 'idle' });
    assert.equal((await poll).result.exited, true);
    assert.equal((await c.call('process/read', { processId: 7 })).error?.code, -32602);
    assert.equal(c.closed, false);
    c.close();
  });

  test('initialized before initialize, a stray notification, or an unsolicited response drops the connection', async () => {
    for (const frame of ['{"method":"initialized","params":{}}', '{"method":"some/notification"}', '{"id":9,"result":{}}']) {
      const c = await RawClient.connect(server.url);
      if (frame.includes('some/') || frame.includes('result')) {
        await c.call('initialize', { clientName: 'x' });
        c.notify('initialized');
      }
      c.sendRaw(frame);
      await c.waitClosed();
      assert.ok(c.closed, frame);
    }
  });

  test('a frame over 16 MiB closes that connection only; the server keeps serving others', async () => {
    const { client: victim } = await RawClient.session(server.url);
    const { client: other } = await RawClient.session(server.url);
    victim.sendRaw(
      JSON.stringify({ id: 1, method: 'process/write', params: { processId: 'x', writeId: 'w', chunk: 'A'.repeat(17 * 1024 * 1024) } }),
    );
    await victim.waitClosed();
    assert.ok(victim.closeCode === 1009 || victim.closeCode === 1006, `close code ${victim.closeCode}`);
    assert.deepEqual((await other.call('environment/status')).result, { status: 'ready' });
    // A large but legal frame works.
    const big = await other.call('process/write', {
      processId: 'none',
      writeId: 'w',
      chunk: Buffer.alloc(8 * 1024 * 1024).toString('base64'),
    });
    assert.deepEqual(big.result, { status: 'unknownProcess' });
    other.close();
  });

  test('a flood of calls, wrong types and unknown ids neither crash the server nor disturb another connection', async () => {
    const { client: flood } = await RawClient.session(server.url);
    const { client: other } = await RawClient.session(server.url);
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3000; i++) {
      const kind = i % 5;
      if (kind === 0) calls.push(flood.call('environment/status'));
      else if (kind === 1) calls.push(flood.call('process/read', { processId: `ghost-${i}` }));
      else if (kind === 2) calls.push(flood.call('process/write', { processId: `ghost-${i}`, chunk: 'eA==', writeId: String(i) }));
      else if (kind === 3) calls.push(flood.call('process/start', { processId: i, argv: 'x' }));
      else calls.push(flood.call('process/terminate', { processId: `ghost-${i}` }));
    }
    const t0 = Date.now();
    assert.deepEqual((await other.call('environment/status')).result, { status: 'ready' });
    assert.ok(Date.now() - t0 < 5000);
    const answers = (await Promise.all(calls)) as Array<{ result?: unknown; error?: { code: number } }>;
    assert.equal(answers.length, 3000);
    assert.ok(answers.every((a) => a.result !== undefined || a.error !== undefined));
    flood.close();
    other.close();
  });
});

describe('our exec-server: shutdown and stdio', () => {
  test('SIGTERM kills every child process group before the server exits', async () => {
    const server = await startServer('ours');
    const { client: c } = await RawClient.session(server.url);
    const dir = mkdtempSync(join(tmpdir(), 'eb-sig-'));
    await c.call('process/start', startParams('a', ['bash', '-c', `sleep 300 & echo $! > ${dir}/a; echo ok; wait`]));
    await c.call('process/start', startParams('b', ['bash', '-c', `echo $$ > ${dir}/b; echo ok; exec sleep 300`], { tty: true }));
    await c.waitFor(() => c.output('a') === 'ok\n' && c.output('b').includes('ok'));
    const pids = ['a', 'b'].map((f) => Number(readFileSync(join(dir, f), 'utf8')));
    await server.stop();
    assert.equal(server.child.exitCode, 0);
    await until(() => !pids.some(isAlive), 3000, 'every child dead');
  });

  test('--listen stdio serves one connection as newline-delimited JSON and stops at EOF', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', 'stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
      for (const w of lineArrived.splice(0)) w();
    });
    const lineArrived: Array<() => void> = [];
    /** The first line (seen or to come) that matches, or undefined after 5 s. */
    const wait = async (pred: (l: string) => boolean) => {
      const deadline = Date.now() + 5000;
      while (!lines.some(pred) && Date.now() < deadline) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, deadline - Date.now());
          lineArrived.push(() => {
            clearTimeout(t);
            r();
          });
        });
      }
      return lines.find(pred);
    };
    child.stdin.write('{"id":1,"method":"initialize","params":{"clientName":"stdio"}}\n{"method":"initialized"}\n');
    assert.ok(await wait((l) => l.startsWith('{"id":1,"result":{"sessionId"')));
    child.stdin.write(JSON.stringify({ id: 2, method: 'process/start', params: startParams('p', ['echo', 'via stdio']) }) + '\n');
    const out = await wait((l) => l.includes('process/output'));
    assert.equal(Buffer.from(JSON.parse(out!).params.chunk, 'base64').toString(), 'via stdio\n');
    child.stdin.end();
    const code = await new Promise((r) => child.on('exit', r));
    assert.equal(code, 0);
  });

  test('refuses bad command lines with a clear message', async () => {
    for (const [args, pattern] of [
      [['--listen', 'http://x'], /--listen must be ws:\/\/HOST:PORT, unix:PATH or stdio/],
      [['--listen', 'unix:relative/sock'], /--listen unix:PATH needs an absolute path/],
      [['--bogus'], /unknown option --bogus/],
      [['--token-file', '/no/such/file'], /cannot read --token-file/],
      [['--session-ttl-ms', 'soon'], /--session-ttl-ms must be a non-negative integer/],
      [['--sandbox-prewarm-ms', '-1'], /--sandbox-prewarm-ms must be a non-negative integer, got -1/],
    ] as const) {
      const child = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise((r) => child.on('close', r)); // 'close': stderr fully read
      assert.equal(code, 2, args.join(' '));
      assert.match(err, pattern);
    }
  });
});
