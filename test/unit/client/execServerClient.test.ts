import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ExecServerClient,
  isExecClientError,
  type ClientOptions,
  type ConnectionState,
  type ExecClientError,
  type ProcessEvent,
  type ProcessHandle,
} from '../../../src/client';
import { FakeClock } from '../../helpers/fakeClock';
import { FakeExecServer, flush, type HeldRequest } from '../../helpers/fakeExecServer';

async function setup(options: Partial<ClientOptions> = {}) {
  const server = new FakeExecServer();
  const clock = new FakeClock(1_000);
  const client = await ExecServerClient.connect({ connector: server.connector, clock, random: () => 0.5, keepalive: false, ...options });
  const states: ConnectionState[] = [];
  client.onDidChangeState((s) => states.push(s));
  return { server, clock, client, states };
}

function fmt(e: ProcessEvent): string {
  switch (e.type) {
    case 'output':
      return `${e.seq}:${e.data.toString()}`;
    case 'exited':
      return `${e.seq}:exit ${e.exitCode}${e.sandboxDenied ? ' denied' : ''}`;
    case 'closed':
      return `${e.seq}:closed`;
    case 'failed':
      return `failed:${e.error.kind}`;
  }
}

function collect(h: ProcessHandle): string[] {
  const events: string[] = [];
  h.onEvent((e) => events.push(fmt(e)));
  return events;
}

async function rejection(p: Promise<unknown>): Promise<ExecClientError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isExecClientError(e), `expected an ExecClientError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}

/** Resolves once `fn` is true, checking after each flush; bounded. */
async function until(fn: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (fn()) return;
    await flush(1);
  }
  assert.fail(`never happened: ${what}`);
}

describe('connect', () => {
  test('initializes, keeps the session and capabilities, is connected', async () => {
    const { server, client } = await setup();
    assert.deepEqual(client.state, { kind: 'connected', sessionId: 'session-1' });
    assert.equal(client.sessionId, 'session-1');
    assert.equal(client.capabilities.concurrentRequests, true);
    assert.deepEqual(
      server.log.map((r) => r.method),
      ['initialize'],
    );
    assert.equal(server.log[0]!.params.clientName, 'exec-bridge');
    client.dispose();
  });

  test('a refused first connection is a connectFailed error', async () => {
    const server = new FakeExecServer();
    server.refuse = true;
    const err = await rejection(ExecServerClient.connect({ connector: server.connector, clock: new FakeClock(), keepalive: false }));
    assert.equal(err.kind, 'connectFailed');
    assert.match(err.message, /ECONNREFUSED/);
  });
});

describe('event ordering', () => {
  test('out-of-order events wait for the gap, duplicates are dropped', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    const events = collect(h);
    const out = (seq: number, text: string) =>
      server.notify('process/output', { processId: 'p', seq, stream: 'stdout', chunk: Buffer.from(text).toString('base64') });
    out(2, 'b');
    out(3, 'c');
    await flush();
    assert.deepEqual(events, [], 'nothing before seq 1');
    out(1, 'a');
    out(2, 'b');
    out(1, 'a');
    await flush();
    assert.deepEqual(events, ['1:a', '2:b', '3:c']);
    client.dispose();
  });

  test('closed before exited (and output after exit) still complete in seq order', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    const events = collect(h);
    server.notify('process/closed', { processId: 'p', seq: 4 });
    server.notify('process/output', { processId: 'p', seq: 3, stream: 'stderr', chunk: Buffer.from('late').toString('base64') });
    await flush();
    assert.equal(h.status, 'running');
    server.notify('process/exited', { processId: 'p', seq: 2, exitCode: 7, sandboxDenied: true });
    server.notify('process/output', { processId: 'p', seq: 1, stream: 'stdout', chunk: Buffer.from('first').toString('base64') });
    assert.deepEqual(await h.completion, { exitCode: 7, sandboxDenied: true });
    assert.deepEqual(events, ['1:first', '2:exit 7 denied', '3:late', '4:closed']);
    assert.equal(h.status, 'closed');
    assert.equal(client.getProcess('p'), undefined, 'a finished process is dropped');
    client.dispose();
  });

  test('events that beat the start answer are kept and replayed to the first subscriber', async () => {
    const { server, client } = await setup();
    server.holdMethods.add('process/start');
    const starting = client.startProcess({ argv: ['pwd'], cwd: '/work', processId: 'fast' });
    await until(() => server.held.length === 1, 'start request');
    const start = server.held[0]!;
    assert.equal(start.params.cwd, 'file:///work');
    server.start('fast');
    server.output('fast', '/work\n');
    server.exit('fast', 0);
    server.close('fast');
    await flush();
    server.answer(start, { processId: 'fast', sandboxType: 'none' });
    const h = await starting;
    assert.equal(h.sandboxType, 'none');
    const events = collect(h);
    assert.deepEqual(events, ['1:/work\n', '2:exit 0', '3:closed']);
    assert.deepEqual(await h.completion, { exitCode: 0, sandboxDenied: false });
    assert.equal(server.requests('process/read').length, 0, 'completion needs no extra read');
    client.dispose();
  });

  test('an exit without sandboxDenied costs exactly one compatibility read', async () => {
    const { server, client } = await setup();
    server.omitSandboxDenied = true;
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'old' });
    const events = collect(h);
    server.output('old', 'a');
    server.exit('old', 1, true);
    server.output('old', 'b');
    server.close('old');
    server.omitSandboxDenied = false; // the read answer carries it
    assert.deepEqual(await h.completion, { exitCode: 1, sandboxDenied: true });
    assert.deepEqual(events, ['1:a', '2:exit 1 denied', '3:b', '4:closed']);
    assert.equal(server.requests('process/read').length, 1);
    client.dispose();
  });
});

describe('recovery', () => {
  test('a cut resumes the session, catches up by seq and dedupes', async () => {
    const { server, client, states } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    const events = collect(h);
    server.output('p', 'a');
    await flush();
    server.cut();
    server.mute = true; // produced while detached: only a read can fetch these
    server.output('p', 'b');
    server.output('p', 'c');
    server.mute = false;
    await until(() => client.state.kind === 'connected' && states.length > 0, 'resume');
    assert.deepEqual(
      states.map((s) => s.kind),
      ['recovering', 'recovering', 'connected'],
    );
    const init = server.requests('initialize');
    assert.equal(init.length, 2);
    assert.equal(init[1]!.params.resumeSessionId, 'session-1');
    const read = server.requests('process/read');
    assert.equal(read.length, 1);
    assert.equal(read[0]!.params.afterSeq, 1);
    server.output('p', 'd');
    server.exit('p', 0);
    server.close('p');
    await h.completion;
    assert.deepEqual(events, ['1:a', '2:b', '3:c', '4:d', '5:exit 0', '6:closed']);
    client.dispose();
  });

  test('live events during catch-up and the same events in the read are merged once', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    const events = collect(h);
    server.cut();
    server.mute = true;
    server.output('p', 'a');
    server.exit('p', 3);
    server.mute = false;
    server.holdMethods.add('process/read');
    await until(() => server.held.length === 1, 'catch-up read');
    // Live notifications after the resume, before the read answer: buffered, not published.
    server.output('p', 'b');
    server.close('p');
    await flush();
    assert.deepEqual(events, []);
    assert.equal(client.state.kind, 'recovering', 'not connected before catch-up completes');
    server.releaseAll();
    assert.deepEqual(await h.completion, { exitCode: 3, sandboxDenied: false });
    assert.deepEqual(events, ['1:a', '2:exit 3', '3:b', '4:closed']);
    await until(() => client.state.kind === 'connected', 'connected');
    client.dispose();
  });

  test('calls made while recovering wait for the new connection', async () => {
    const { server, client, clock } = await setup();
    server.refuse = true;
    server.cut();
    await until(() => client.state.kind === 'recovering', 'recovering');
    const status = client.getEnvironmentStatus();
    await flush();
    assert.equal(server.requests('environment/status').length, 0);
    server.refuse = false;
    await flush();
    // The back-off timer runs on the injected clock.
    for (let i = 0; i < 20 && client.state.kind !== 'connected'; i++) {
      clock.advance(100);
      await flush();
    }
    assert.deepEqual(await status, { status: 'ready' });
    client.dispose();
  });

  test('-32010 is retried with linear back-off and per-client jitter', async () => {
    const { server, client, clock } = await setup();
    server.attachedErrors = 2;
    server.cut();
    await until(() => server.requests('initialize').length === 2, 'first resume attempt');
    // random()=0.5 ⇒ jitter 0.15: delays 115 ms, then 230 ms (200 capped × 1.15).
    clock.advance(114);
    await flush();
    assert.equal(server.requests('initialize').length, 2);
    clock.advance(1);
    await until(() => server.requests('initialize').length === 3, 'second attempt');
    clock.advance(229);
    await flush();
    assert.equal(server.requests('initialize').length, 3);
    clock.advance(1);
    await until(() => client.state.kind === 'connected', 'connected after the third attempt');
    assert.equal(server.requests('initialize').length, 4);
    client.dispose();
  });

  test('two clients with different random sources retry at different times', async () => {
    const a = await setup({ random: () => 0.1 });
    const b = await setup({ random: () => 0.9 });
    for (const s of [a, b]) {
      s.server.attachedErrors = 1;
      s.server.cut();
    }
    await until(() => a.server.requests('initialize').length === 2 && b.server.requests('initialize').length === 2, 'first attempts');
    const retryAfter = async (s: typeof a) => {
      let waited = 0;
      while (s.server.requests('initialize').length < 3 && waited < 1_000) {
        s.clock.advance(1);
        waited++;
        await flush(1);
      }
      return waited;
    };
    const [da, db] = [await retryAfter(a), await retryAfter(b)];
    assert.ok(da < db, `jitter differs: ${da} vs ${db}`);
    a.client.dispose();
    b.client.dispose();
  });

  test('past the deadline the client fails: one stable error everywhere, no hang', async () => {
    const { server, client, clock, states } = await setup({ deadlineMs: 25_000 });
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    const events = collect(h);
    server.refuse = true;
    server.cut();
    await until(() => client.state.kind === 'recovering', 'recovering');
    const waiting = rejection(client.readFile('/etc/hostname'));
    for (let t = 0; t < 25_000; t += 500) {
      clock.advance(500);
      await flush(1);
    }
    await until(() => client.state.kind === 'failed', 'failed');
    const state = client.state;
    assert.equal(state.kind, 'failed');
    const err = state.kind === 'failed' ? state.error : undefined;
    assert.equal(err?.kind, 'disconnected');
    assert.equal(err?.reason, 'recoveryDeadline');
    assert.match(err!.message, /could not resume within 25 s/);
    assert.equal(await waiting, err);
    assert.equal(await rejection(h.completion), err);
    assert.deepEqual(events, ['failed:disconnected']);
    assert.equal(await rejection(client.getEnvironmentStatus()), err, 'new calls fail fast');
    assert.equal(await rejection(client.startProcess({ argv: ['y'], cwd: '/tmp' })), err);
    assert.ok(server.connectAttempts >= 5, `kept trying, backing off: ${server.connectAttempts}`);
    assert.equal(states[states.length - 1]!.kind, 'failed');
    assert.equal(clock.pendingTimers, 0, 'no timer left behind');
    client.dispose();
  });

  test('an unknown session on resume fails at once (sessionLost)', async () => {
    const { server, client } = await setup();
    server.forgetSession = true;
    server.cut();
    await until(() => client.state.kind === 'failed', 'failed');
    const s = client.state;
    assert.equal(s.kind === 'failed' && s.error.reason, 'sessionLost');
    client.dispose();
  });

  test('a drop during catch-up is the same outage: one more attempt, not a second recovery', async () => {
    const { server, client, states, clock } = await setup();
    await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    server.cut();
    server.holdMethods.add('process/read');
    await until(() => server.held.length === 1, 'catch-up read');
    server.holdMethods.delete('process/read');
    server.held.splice(0);
    server.cut();
    await flush();
    clock.advance(200);
    await until(() => client.state.kind === 'connected', 'connected');
    const kinds = states.map((s) => (s.kind === 'recovering' ? `r${s.attempt}` : s.kind));
    assert.deepEqual(kinds, ['r0', 'r1', 'r2', 'connected']);
    client.dispose();
  });

  test('keepalive: pausing the incoming side after a ping went out does not drop the connection', async () => {
    // Deadline and next probe fall due together (as with the defaults): the deadline fires first.
    const { server, client, clock, states } = await setup({ keepalive: { intervalMs: 1_000, timeoutMs: 1_000 } });
    server.conns[0]!.client.answerPings = false; // while paused, a pong could not be read anyway
    clock.advance(1_000); // ping out, its deadline running
    await flush();
    client.setIncomingPaused(true);
    for (let i = 0; i < 10; i++) {
      clock.advance(1_000);
      await flush();
    }
    assert.equal(client.state.kind, 'connected');
    assert.deepEqual(states, []);
    assert.equal(server.conns.length, 1);
    client.setIncomingPaused(false);
    client.dispose();
  });

  test('keepalive: no pong within the bound drops a half-open connection and resumes', async () => {
    const { server, client, clock, states } = await setup({ keepalive: { intervalMs: 1_000, timeoutMs: 2_000 } });
    server.conns[0]!.client.answerPings = false;
    clock.advance(1_000);
    await flush();
    clock.advance(1_999);
    await flush();
    assert.equal(client.state.kind, 'connected');
    clock.advance(1);
    await until(() => client.state.kind === 'connected' && states.length > 0, 'resumed');
    assert.match((states[0] as { cause: string }).cause, /keepalive/);
    assert.equal(server.conns.length, 2);
    // Answered pings keep the new connection up.
    for (let i = 0; i < 20; i++) {
      clock.advance(500);
      await flush(1);
    }
    assert.equal(server.conns.length, 2);
    client.dispose();
  });
});

describe('in-flight calls at a drop', () => {
  test('a write is retried with the same writeId and lands once', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['cat'], cwd: '/tmp', processId: 'c', pipeStdin: true });
    server.holdMethods.add('process/write');
    const writing = h.write('hello\n');
    await until(() => server.held.length === 1, 'write sent');
    // The server did the write, but the answer is lost with the connection.
    const first = server.held[0]!;
    server.holdMethods.delete('process/write');
    server.held.splice(0);
    server.procs.get('c')!.writeIds.add(first.params.writeId as string);
    server.procs.get('c')!.stdin.push(Buffer.from('hello\n'));
    server.cut();
    await writing;
    const writes = server.requests('process/write');
    assert.equal(writes.length, 2);
    assert.equal(writes[1]!.params.writeId, first.params.writeId);
    assert.equal(Buffer.concat(server.procs.get('c')!.stdin).toString(), 'hello\n');
    await h.write('second\n');
    assert.notEqual(server.requests('process/write')[2]!.params.writeId, first.params.writeId, 'a fresh id per write');
    client.dispose();
  });

  test('a start whose answer was lost is adopted when the server has it', async () => {
    const { server, client } = await setup();
    server.holdMethods.add('process/start');
    const starting = client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'lost' });
    await until(() => server.held.length === 1, 'start sent');
    server.holdMethods.delete('process/start');
    server.held.splice(0);
    server.start('lost');
    server.mute = true;
    server.output('lost', 'early');
    server.mute = false;
    server.cut();
    const h = await starting;
    const events = collect(h);
    server.exit('lost', 0);
    server.close('lost');
    await h.completion;
    assert.deepEqual(events, ['1:early', '2:exit 0', '3:closed']);
    assert.equal(server.requests('process/start').length, 1, 'never sent twice');
    client.dispose();
  });

  test('a start the server never saw fails cleanly with notStarted', async () => {
    const { server, client } = await setup();
    server.holdMethods.add('process/start');
    const starting = client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'gone' });
    await until(() => server.held.length === 1, 'start sent');
    server.holdMethods.delete('process/start');
    server.held.splice(0);
    server.cut();
    const err = await rejection(starting);
    assert.equal(err.kind, 'notStarted');
    await until(() => client.state.kind === 'connected', 'connected');
    client.dispose();
  });

  test('other mutating calls fail with outcomeUnknown; reads are retried', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    server.holdMethods.add('process/signal');
    server.holdMethods.add('fs/readFile');
    const signal = h.interrupt();
    const read = client.readFile('/a');
    await until(() => server.held.length === 2, 'both sent');
    server.holdMethods.clear();
    server.held.splice(0);
    server.cut();
    const err = await rejection(signal);
    assert.equal(err.kind, 'outcomeUnknown');
    assert.equal((await read).toString(), 'contents of file:///a');
    assert.equal(server.requests('process/signal').length, 1);
    assert.equal(server.requests('fs/readFile').length, 2);
    client.dispose();
  });
});

describe('output lost', () => {
  test('evicted output fails only that process, the others continue', async () => {
    const { server, client } = await setup();
    const a = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'a' });
    const b = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'b' });
    const ea = collect(a);
    const eb = collect(b);
    server.output('a', 'a1');
    await flush();
    server.cut();
    server.mute = true;
    for (let i = 2; i <= 6; i++) server.output('a', `a${i}`);
    server.evict('a', 4); // seqs 2..4 are gone
    server.output('b', 'b1');
    server.mute = false;
    const err = await rejection(a.completion);
    assert.equal(err.kind, 'outputLost');
    assert.match(err.message, /output lost: seq 2–4 of process a/);
    assert.deepEqual(ea, ['1:a1', 'failed:outputLost']);
    await until(() => client.state.kind === 'connected', 'connected');
    server.exit('b', 0);
    server.close('b');
    await b.completion;
    assert.deepEqual(eb, ['1:b1', '2:exit 0', '3:closed']);
    client.dispose();
  });
});

describe('admission', () => {
  test('500 concurrent calls: at most 64 in flight, all answered', async () => {
    const { server, client } = await setup();
    server.holdMethods.add('environment/status');
    const calls = Array.from({ length: 500 }, () => client.getEnvironmentStatus());
    await until(() => server.held.length === 64, '64 held');
    await flush();
    assert.equal(server.held.length, 64);
    assert.equal(client.inFlight.now, 64);
    // A cleanup call still gets through on the reserved permit.
    const h = client.getProcess('none');
    assert.equal(h, undefined);
    const term = client.call('process/terminate', { processId: 'nope' });
    assert.deepEqual(await term, { running: false });
    for (let i = 0; i < 500 && server.held.length > 0; i++) {
      server.releaseAll();
      await flush(1);
    }
    const results = await Promise.all(calls);
    assert.equal(results.length, 500);
    assert.equal(server.peakInFlight, 65);
    assert.equal(client.inFlight.peak, 65);
    client.dispose();
  });

  test('an AbortSignal cancels a call waiting for a permit (and frees nothing it did not hold)', async () => {
    const { server, client } = await setup({ maxInFlight: 2 });
    server.holdMethods.add('environment/status');
    const held = [client.getEnvironmentStatus(), client.getEnvironmentStatus()];
    const ac = new AbortController();
    const waiting = client.getEnvironmentStatus({ signal: ac.signal });
    await until(() => server.held.length === 2, 'two held');
    ac.abort();
    assert.equal((await rejection(waiting)).kind, 'aborted');
    server.releaseAll();
    await Promise.all(held);
    assert.equal(server.requests('environment/status').length, 2);
    client.dispose();
  });

  test('an AbortSignal cancels a call on the wire; its late answer is ignored', async () => {
    const { server, client } = await setup();
    server.holdMethods.add('environment/status');
    const ac = new AbortController();
    const call = client.getEnvironmentStatus({ signal: ac.signal });
    await until(() => server.held.length === 1, 'sent');
    ac.abort();
    assert.equal((await rejection(call)).kind, 'aborted');
    assert.equal(client.inFlight.now, 0);
    server.releaseAll();
    await flush();
    client.dispose();
  });

  test('if even the cleanup permit is stuck, the connection is reset so teardown proceeds', async () => {
    const { server, client, clock } = await setup({ maxInFlight: 2, cleanupStallMs: 5_000 });
    server.holdMethods.add('environment/status');
    server.holdMethods.add('process/terminate');
    const regular = [client.getEnvironmentStatus(), client.getEnvironmentStatus()];
    const stuckCleanup = client.call('process/terminate', { processId: 'a' });
    await until(() => server.held.length === 3, 'all permits taken');
    server.holdMethods.clear();
    const teardown = client.call('process/terminate', { processId: 'b' });
    await flush();
    assert.equal(server.requests('process/terminate').length, 1);
    clock.advance(5_000);
    for (const p of [...regular, stuckCleanup]) assert.equal((await rejection(p)).kind, 'outcomeUnknown');
    assert.deepEqual(await teardown, { running: false });
    assert.equal(client.state.kind, 'connected');
    client.dispose();
  });
});

describe('process handle', () => {
  test('Ctrl-C is an interrupt for a pipe and a byte for a TTY', async () => {
    const { server, client } = await setup();
    const pipe = await client.startProcess({ argv: ['cat'], cwd: '/tmp', processId: 'pipe', pipeStdin: true });
    const tty = await client.startProcess({ argv: ['bash'], cwd: '/tmp', processId: 'tty', tty: true });
    await pipe.write('\x03');
    await tty.write(Buffer.from([3]));
    assert.deepEqual(
      server.requests('process/signal').map((r) => r.params),
      [{ processId: 'pipe', signal: 'interrupt' }],
    );
    assert.deepEqual(
      server.requests('process/write').map((r) => [r.params.processId, r.params.chunk]),
      [['tty', 'Aw==']],
    );
    const start = server.requests('process/start')[1]!.params;
    assert.equal(start.tty, true);
    assert.equal(start.pipeStdin, false);
    client.dispose();
  });

  test('writes go out in call order; a refused write is a writeRejected error', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['cat'], cwd: '/tmp', processId: 'c', pipeStdin: true });
    await Promise.all(['1', '2', '3', '4'].map((s) => h.write(s)));
    assert.equal(Buffer.concat(server.procs.get('c')!.stdin).toString(), '1234');
    server.procs.delete('c');
    const err = await rejection(h.write('x'));
    assert.equal(err.kind, 'writeRejected');
    client.dispose();
  });

  test('resize needs the processResize capability', async () => {
    const { server, client } = await setup();
    const h = await client.startProcess({ argv: ['bash'], cwd: '/tmp', processId: 't', tty: true, ptySize: { cols: 100, rows: 30 } });
    assert.deepEqual(server.requests('process/start')[0]!.params.ptySize, { cols: 100, rows: 30 });
    assert.equal((await rejection(h.resize(120, 40))).kind, 'unsupported');
    client.dispose();
    const withResize = new FakeExecServer();
    withResize.capabilities = { processResize: true };
    const c2 = await ExecServerClient.connect({ connector: withResize.connector, clock: new FakeClock(), keepalive: false });
    const h2 = await c2.startProcess({ argv: ['bash'], cwd: '/tmp', processId: 't', tty: true });
    await h2.resize(120, 40);
    assert.deepEqual(withResize.requests('process/resize')[0]!.params, { processId: 't', cols: 120, rows: 40 });
    c2.dispose();
  });

  test('env defaults to inheriting the executor environment; explicit env is complete', async () => {
    const { server, client } = await setup();
    await client.startProcess({ argv: ['env'], cwd: '/tmp', processId: 'a' });
    await client.startProcess({ argv: ['env'], cwd: '/tmp', processId: 'b', env: { A: '1' } });
    const [a, b] = server.requests('process/start').map((r: HeldRequest) => r.params);
    assert.equal((a!.envPolicy as { inherit: string }).inherit, 'all');
    assert.deepEqual(a!.env, {});
    assert.equal(b!.envPolicy, undefined);
    assert.deepEqual(b!.env, { A: '1' });
    assert.equal(a!.arg0, null);
    client.dispose();
  });

  test('dispose fails everything with reason disposed', async () => {
    const { client } = await setup();
    const h = await client.startProcess({ argv: ['x'], cwd: '/tmp', processId: 'p' });
    client.dispose();
    const err = await rejection(h.completion);
    assert.equal(err.kind, 'disconnected');
    assert.equal(client.state.kind === 'failed' && client.state.error.reason, 'disposed');
  });
});
