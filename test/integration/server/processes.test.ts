import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive, until } from '../../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString();
const alive = isAlive;

describe('our exec-server: processes', () => {
  let server: StartedServer;
  let c: RawClient;
  before(async () => {
    server = await startServer('ours', ['--session-ttl-ms', '1500']);
    c = (await RawClient.session(server.url)).client;
  });
  after(async () => {
    c.close();
    await server.stop();
  });

  test('seq model: stdout and stderr share one counter, then exited, then closed', async () => {
    const r = await c.call('process/start', startParams('seq', ['bash', '-c', 'echo hi; sleep 0.05; echo err >&2; exit 3']));
    assert.deepEqual(r.result, { processId: 'seq', sandboxType: 'none' });
    const events = await c.processEvents('seq');
    assert.deepEqual(
      events.map((e) => [e.method, e.params.seq, e.params.stream ?? e.params.exitCode ?? null]),
      [
        ['process/output', 1, 'stdout'],
        ['process/output', 2, 'stderr'],
        ['process/exited', 3, 3],
        ['process/closed', 4, null],
      ],
    );
    const read = await c.call('process/read', { processId: 'seq' });
    assert.deepEqual(read.result, {
      chunks: [
        { seq: 1, stream: 'stdout', chunk: b64('hi\n') },
        { seq: 2, stream: 'stderr', chunk: b64('err\n') },
      ],
      nextSeq: 5,
      exited: true,
      exitCode: 3,
      closed: true,
      failure: null,
      sandboxDenied: false,
    });
  });

  test('output still draining after exit keeps later seqs and closed comes last', async () => {
    // The background writer keeps stdout open after bash exits.
    await c.call('process/start', startParams('late', ['bash', '-c', '(sleep 0.2; echo late) & exit 0']));
    const events = await c.processEvents('late');
    const kinds = events.map((e) => e.method);
    assert.deepEqual(kinds, ['process/exited', 'process/output', 'process/closed']);
    assert.deepEqual(
      events.map((e) => e.params.seq),
      [1, 2, 3],
    );
    const read = await c.call('process/read', { processId: 'late' });
    assert.deepEqual(
      read.result.chunks.map((x: { seq: number }) => x.seq),
      [2],
    );
  });

  test('exit codes: normal mod 256, signals as 128+N', async () => {
    const cases: Array<[string, string, number]> = [
      ['x300', 'exit 300', 44],
      ['xint', 'kill -INT $$', 130],
      ['xterm', 'kill -TERM $$', 143],
      ['xkill', 'kill -KILL $$', 137],
    ];
    for (const [id, script] of cases) await c.call('process/start', startParams(id, ['bash', '-c', script]));
    for (const [id, , code] of cases) {
      const events = await c.processEvents(id);
      assert.equal(events.find((e) => e.method === 'process/exited')!.params.exitCode, code, id);
    }
  });

  test('a PTY is 80x24 by default, our ptySize sets it, process/resize changes it', async () => {
    await c.call('process/start', startParams('tty1', ['bash', '-c', 'tty >/dev/null && stty size'], { tty: true }));
    await c.processEvents('tty1');
    assert.equal(c.output('tty1', 'pty'), '24 80\r\n');
    await c.call(
      'process/start',
      startParams('tty2', ['bash', '-c', 'stty size; read x; stty size'], { tty: true, ptySize: { cols: 120, rows: 40 } }),
    );
    await c.waitFor((m) => m.method === 'process/output' && m.params.processId === 'tty2');
    assert.deepEqual((await c.call('process/resize', { processId: 'tty2', cols: 100, rows: 30 })).result, {});
    await c.call('process/write', { processId: 'tty2', chunk: b64('go\r'), writeId: 'w1' });
    await c.processEvents('tty2');
    const out = c.output('tty2');
    assert.match(out, /^40 120\r\n/);
    assert.match(out, /30 100\r\n$/);
    const notTty = await c.call('process/resize', { processId: 'seq', cols: 10, rows: 10 });
    assert.equal(notTty.error?.code, -32602);
    assert.equal((await c.call('process/resize', { processId: 'nope', cols: 10, rows: 10 })).error?.code, -32600);
  });

  test('env is the exact environment; envPolicy overlays; arg0 and cwd are honoured', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eb-cwd-'));
    await c.call('process/start', {
      processId: 'env1',
      argv: ['/usr/bin/env'],
      cwd: 'file://' + dir,
      env: { ONLY: 'me' },
      tty: false,
      arg0: null,
    });
    await c.processEvents('env1');
    assert.equal(c.output('env1'), 'ONLY=me\n');
    await c.call('process/start', {
      ...startParams('env2', ['bash', '-c', 'echo "$X $Y $HOME"; pwd; echo $0']),
      cwd: 'file://localhost' + dir,
      arg0: 'custom-name',
      envPolicy: { inherit: 'core', ignoreDefaultExcludes: false, exclude: [], set: { X: 'set', Y: 'set' }, includeOnly: [] },
      env: { X: 'env' },
    });
    await c.processEvents('env2');
    assert.equal(c.output('env2'), `env set ${process.env.HOME}\n${dir}\ncustom-name\n`);
  });

  test('start errors: empty argv, relative cwd, missing binary or cwd, duplicate id; a failed start reserves nothing', async () => {
    assert.deepEqual((await c.call('process/start', startParams('e1', []))).error, { code: -32602, message: 'argv must not be empty' });
    assert.equal(
      (await c.call('process/start', { ...startParams('e2', ['true']), cwd: '/tmp' })).error?.message,
      'invalid URI: relative URL without a base',
    );
    assert.match(
      (await c.call('process/start', { ...startParams('e3', ['true']), cwd: 'file://relative/path' })).error!.message,
      /not valid on this exec-server host/,
    );
    for (const params of [startParams('e4', ['no-such-binary-xyz']), { ...startParams('e4', ['true']), cwd: 'file:///no/such/dir' }]) {
      const r = await c.call('process/start', params);
      assert.deepEqual(r.error, { code: -32603, message: 'No such file or directory (os error 2)', data: { kind: 'spawnNotFound' } });
    }
    assert.equal((await c.call('process/read', { processId: 'e4' })).error?.message, 'unknown process id e4');
    await c.call('process/start', startParams('dup', ['true']));
    assert.deepEqual((await c.call('process/start', startParams('dup', ['true']))).error, {
      code: -32600,
      message: 'process dup already exists',
    });
    assert.equal(
      (await c.call('process/start', { processId: 'x', argv: ['true'], cwd: 'file:///tmp', env: {} })).error?.message,
      'missing field `tty`',
    );
  });

  test('process/read: afterSeq, maxBytes returns at least one chunk, nextSeq rules, long poll', async () => {
    await c.call('process/start', startParams('r1', ['bash', '-c', 'echo line1; sleep 0.1; echo line2; sleep 0.1; echo line3']));
    await c.processEvents('r1');
    const one = await c.call('process/read', { processId: 'r1', maxBytes: 1 });
    assert.deepEqual(
      one.result.chunks.map((x: { seq: number }) => x.seq),
      [1],
    );
    assert.equal(one.result.nextSeq, 2);
    const rest = await c.call('process/read', { processId: 'r1', afterSeq: 1 });
    assert.deepEqual(
      rest.result.chunks.map((x: { chunk: string }) => unb64(x.chunk)),
      ['line2\n', 'line3\n'],
    );
    assert.equal(rest.result.nextSeq, 6);
    const t0 = Date.now();
    // Far less than the wait it asked for: it did not wait (the margin is for a loaded machine).
    const past = await c.call('process/read', { processId: 'r1', afterSeq: 10, waitMs: 60_000 });
    assert.ok(Date.now() - t0 < 20_000, 'a read past the end of a closed process returns at once');
    assert.deepEqual(past.result.chunks, []);

    await c.call('process/start', startParams('r2', ['bash', '-c', 'sleep 0.4; echo late; sleep 5'], {}));
    const t1 = Date.now();
    const idle = await c.call('process/read', { processId: 'r2', waitMs: 150 });
    assert.deepEqual(idle.result.chunks, []);
    assert.ok(Date.now() - t1 >= 140, 'an idle long poll waits for waitMs');
    const woke = await c.call('process/read', { processId: 'r2', waitMs: 5000 });
    assert.equal(unb64(woke.result.chunks[0].chunk), 'late\n');
    assert.ok(Date.now() - t1 < 2000, 'a long poll returns when output arrives');
    // Requests are concurrent: a long poll does not hold up other calls on the connection.
    const poll = c.call('process/read', { processId: 'r2', afterSeq: 1, waitMs: 3000 });
    const t2 = Date.now();
    await c.call('environment/status', {});
    assert.ok(Date.now() - t2 < 500, 'environment/status answered behind a pending long poll');
    await c.call('process/terminate', { processId: 'r2' });
    const ended = await poll;
    assert.equal(ended.result.exited, true);
  });

  test('more than 1 MiB of output: the oldest is evicted and the gap shows it', async () => {
    await c.call('process/start', startParams('big', ['bash', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a']));
    await c.processEvents('big');
    const r = await c.call('process/read', { processId: 'big', afterSeq: 0 });
    const first = r.result.chunks[0].seq;
    assert.ok(first > 1, `first retained seq ${first} > 1`);
    const bytes = r.result.chunks.reduce((n: number, x: { chunk: string }) => n + Buffer.from(x.chunk, 'base64').length, 0);
    assert.ok(bytes <= 1024 * 1024 && bytes > 900 * 1024, `retained ${bytes}`);
    // Live notifications carried every byte.
    assert.equal(c.output('big').length, 3_000_000);
  });

  test('process/write: statuses, writeId dedupe, empty chunk, dead stdin', async () => {
    await c.call('process/start', startParams('w1', ['cat'], { pipeStdin: true }));
    assert.deepEqual((await c.call('process/write', { processId: 'w1', chunk: b64('hello\n'), writeId: 'a' })).result, {
      status: 'accepted',
    });
    assert.deepEqual((await c.call('process/write', { processId: 'w1', chunk: b64('ignored\n'), writeId: 'a' })).result, {
      status: 'accepted',
    });
    assert.deepEqual((await c.call('process/write', { processId: 'w1', chunk: '', writeId: 'b' })).result, { status: 'accepted' });
    await c.waitFor((m) => m.method === 'process/output' && m.params.processId === 'w1');
    await c.call('process/write', { processId: 'w1', chunk: b64('world\n'), writeId: 'c' });
    await c.waitFor(() => c.output('w1') === 'hello\nworld\n');
    assert.deepEqual((await c.call('process/write', { processId: 'w1', chunk: b64('x'), writeId: '' })).error, {
      code: -32602,
      message: 'writeId must not be empty',
    });
    assert.equal((await c.call('process/write', { processId: 'w1', chunk: b64('x') })).error?.message, 'missing field `writeId`');
    assert.equal((await c.call('process/write', { processId: 'w1', chunk: '*', writeId: 'z' })).error?.code, -32602);
    assert.deepEqual((await c.call('process/write', { processId: 'nope', chunk: b64('x'), writeId: 'd' })).result, {
      status: 'unknownProcess',
    });
    await c.call('process/start', startParams('w2', ['sleep', '5']));
    assert.deepEqual((await c.call('process/write', { processId: 'w2', chunk: b64('x'), writeId: 'e' })).result, { status: 'stdinClosed' });
    await c.call('process/terminate', { processId: 'w2' });
    await c.call('process/terminate', { processId: 'w1' });
    await c.processEvents('w1');
    assert.deepEqual((await c.call('process/write', { processId: 'w1', chunk: b64('x'), writeId: 'f' })).error, {
      code: -32603,
      message: 'failed to write to process stdin',
    });
  });

  test('process/signal sends SIGINT to the group; a trap runs; unknown ids are fine', async () => {
    await c.call(
      'process/start',
      startParams('s1', ['bash', '-c', 'trap "echo got-int; exit 42" INT; echo ready; while true; do sleep 0.05; done']),
    );
    await c.waitFor(() => c.output('s1') === 'ready\n');
    assert.deepEqual((await c.call('process/signal', { processId: 's1', signal: 'interrupt' })).result, {});
    const events = await c.processEvents('s1');
    assert.equal(events.find((e) => e.method === 'process/exited')!.params.exitCode, 42);
    assert.equal(c.output('s1'), 'ready\ngot-int\n');
    assert.deepEqual((await c.call('process/signal', { processId: 'nope', signal: 'interrupt' })).result, {});
    // In a TTY, ^C goes through the line discipline.
    await c.call('process/start', startParams('s2', ['bash', '-c', 'echo ready; sleep 10'], { tty: true }));
    await c.waitFor(() => c.output('s2').includes('ready'));
    await c.call('process/write', { processId: 's2', chunk: b64('\x03'), writeId: 'ctrl-c' });
    const ev2 = await c.processEvents('s2');
    assert.equal(ev2.find((e) => e.method === 'process/exited')!.params.exitCode, 130);
  });

  test('process/terminate kills the whole tree: TERM-ignoring, nohup and setsid children included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eb-term-'));
    const script = [
      `trap "" TERM`,
      `nohup sleep 300 >/dev/null 2>&1 & echo $! > ${dir}/nohup`,
      `setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $! > ${dir}/setsid`,
      `bash -c 'sleep 300' & echo $! > ${dir}/child`,
      `echo $$ > ${dir}/self; echo started; wait`,
    ].join('\n');
    await c.call('process/start', startParams('t1', ['bash', '-c', script]));
    await c.waitFor(() => c.output('t1') === 'started\n');
    const pids = ['nohup', 'setsid', 'child', 'self'].map((f) => Number(readFileSync(join(dir, f), 'utf8')));
    // setsid forks before exec: wait until the recorded pid really is the sleeper.
    await until(() => pids.every(alive));
    assert.deepEqual((await c.call('process/terminate', { processId: 't1' })).result, { running: true });
    const events = await c.processEvents('t1');
    assert.equal(events.find((e) => e.method === 'process/exited')!.params.exitCode, 137);
    await until(() => pids.every((p) => !alive(p)), 3000);
    assert.deepEqual((await c.call('process/terminate', { processId: 't1' })).result, { running: false });
    assert.deepEqual((await c.call('process/terminate', { processId: 'nope' })).result, { running: false });
  });

  test('exited processes stay readable for the TTL, then their id is free again', async () => {
    await c.call('process/start', startParams('ttl', ['true']));
    await c.processEvents('ttl');
    assert.equal((await c.call('process/read', { processId: 'ttl' })).result.closed, true);
    const end = Date.now() + 5000;
    let r = await c.call('process/read', { processId: 'ttl' });
    while (!r.error && Date.now() < end) {
      await new Promise((res) => setTimeout(res, 100));
      r = await c.call('process/read', { processId: 'ttl' });
    }
    assert.equal(r.error?.message, 'unknown process id ttl');
    assert.ok(!(await c.call('process/start', startParams('ttl', ['true']))).error);
  });
});
