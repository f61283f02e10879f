/**
 * A client that does not give up while its session lives (issue "Work survives the night"): it
 * asks the executor to keep the session (10 h by default), retries for as long as the executor
 * says it keeps it, backs off up to 30 s between attempts once an outage is long, and tries at once
 * when asked (`retryNow`: window focus, a user action). Fake clock, fake server.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_SESSION_TTL_MS, ExecServerClient, type ClientOptions, type ConnectionState } from '../../../src/client';
import { FakeClock } from '../../helpers/fakeClock';
import { FakeExecServer, flush } from '../../helpers/fakeExecServer';

/** `codex`: a server that does not know `execBridgeSessionTtlMs`; else ours (caps at 7 days). */
async function setup(options: Partial<ClientOptions> = {}, codex = false) {
  const server = new FakeExecServer();
  server.maxSessionTtlMs = codex ? undefined : 7 * 24 * 3600_000;
  const clock = new FakeClock(1_000);
  const client = await ExecServerClient.connect({ connector: server.connector, clock, random: () => 0.5, keepalive: false, ...options });
  return { server, clock, client };
}

/** Advances the fake clock by `ms` in steps of `step`, letting the client run between steps. */
async function advance(clock: FakeClock, ms: number, step = 500): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await flush(2);
  }
}

describe('session TTL and the recovery that follows it', () => {
  test('the client asks for 10 h by default; null asks for nothing', async () => {
    const a = await setup();
    assert.equal(a.server.log[0]!.params.execBridgeSessionTtlMs, DEFAULT_SESSION_TTL_MS);
    assert.equal(DEFAULT_SESSION_TTL_MS, 10 * 3600_000);
    assert.equal(a.client.sessionTtlMs, DEFAULT_SESSION_TTL_MS);
    a.client.dispose();
    const b = await setup({ sessionTtlMs: null });
    assert.equal('execBridgeSessionTtlMs' in b.server.log[0]!.params, false);
    assert.equal(b.client.sessionTtlMs, undefined);
    b.client.dispose();
  });

  test('recovery goes on for as long as the executor keeps the session, then fails once, saying so', async () => {
    const { server, clock, client } = await setup({ sessionTtlMs: 3600_000 });
    assert.equal(client.recoveryDeadlineMs, 3600_000 + 60_000);
    server.refuse = true;
    server.cut();
    await flush(5);
    const s = client.state;
    assert.ok(s.kind === 'recovering' && s.until === s.since + 3660_000, JSON.stringify(s));
    await advance(clock, 30 * 60_000, 5_000); // half an hour: far past the old 25 s
    assert.equal(client.state.kind, 'recovering');
    await advance(clock, 31 * 60_000, 5_000);
    const f = client.state as ConnectionState;
    assert.equal(f.kind, 'failed');
    assert.match(f.kind === 'failed' ? f.error.message : '', /could not resume within 61 min/);
  });

  test('a server that tells no TTL (codex) keeps the 25 s deadline', async () => {
    const { server, clock, client } = await setup({}, true);
    assert.equal(client.sessionTtlMs, undefined);
    assert.equal(client.recoveryDeadlineMs, 25_000);
    server.refuse = true;
    server.cut();
    await advance(clock, 26_000);
    assert.equal(client.state.kind, 'failed');
  });

  test('deadlineMs 0 never gives up; it ends only when the executor says the session is gone', async () => {
    const { server, clock, client } = await setup({ deadlineMs: 0 });
    assert.equal(client.recoveryDeadlineMs, undefined);
    server.refuse = true;
    server.cut();
    await advance(clock, 24 * 3600_000, 60_000);
    const s = client.state;
    assert.ok(s.kind === 'recovering' && s.until === undefined, JSON.stringify(s));
    server.refuse = false;
    server.forgetSession = true;
    client.retryNow();
    await flush(10);
    const f = client.state;
    assert.ok(f.kind === 'failed' && f.error.reason === 'sessionLost', JSON.stringify(f));
  });

  test('attempts are at most 2 s apart in the first 30 s, then back off to 30 s; retryNow tries at once', async () => {
    const { server, clock, client } = await setup();
    server.refuse = true;
    server.cut();
    await flush(5);
    const start = server.connectAttempts;
    await advance(clock, 30_000, 100);
    const early = server.connectAttempts - start;
    assert.ok(early >= 12, `${early} attempts in the first 30 s`);
    await advance(clock, 5 * 60_000, 1_000); // reach the long back-off
    const before = server.connectAttempts;
    await advance(clock, 5 * 60_000, 1_000);
    const late = server.connectAttempts - before;
    // 300 s at ≥ 30 s apart (jitter adds up to 30 %): at most 10, at least 7.
    assert.ok(late >= 7 && late <= 10, `${late} attempts in 5 late minutes`);
    // The network is back and the user is here: no waiting out the back-off.
    server.refuse = false;
    const n = server.connectAttempts;
    assert.equal(client.retryNow(), true);
    await flush(10);
    assert.equal(server.connectAttempts, n + 1);
    assert.equal(client.state.kind, 'connected');
    assert.equal(client.retryNow(), false, 'nothing to retry when connected');
    client.dispose();
  });
});
