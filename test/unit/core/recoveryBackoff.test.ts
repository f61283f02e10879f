/**
 * The client's resume back-off, on a fake clock against a server that refuses every resume: the
 * delays double from `stepMs` up to `maxMs`, so a 25 s outage costs a handful of attempts, not a
 * hundred (issue 14: "resume attempt N failed" every ~0.25 s).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecServerClient } from '../../../src/client';
import { FakeClock } from '../../helpers/fakeClock';
import { FakeExecServer } from '../../helpers/fakeExecServer';

const flush = async () => {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
};

test('resume attempts back off: doubling delays, about 15 attempts in a 25 s outage with the defaults', async () => {
  const server = new FakeExecServer();
  const clock = new FakeClock(1_000);
  const logs: string[] = [];
  const client = await ExecServerClient.connect({
    connector: server.connector,
    clock,
    random: () => 0,
    keepalive: false,
    log: (l) => logs.push(l),
  });
  try {
    server.refuse = true;
    server.cut();
    const attemptsAt: number[] = [];
    let seen = 0;
    for (let ms = 0; ms < 25_000 && client.state.kind !== 'failed'; ms += 50) {
      await flush();
      const n = logs.filter((l) => /resume attempt \d+ failed/.test(l)).length;
      for (; seen < n; seen++) attemptsAt.push(ms);
      clock.advance(50);
    }
    await flush();
    assert.ok(attemptsAt.length >= 5 && attemptsAt.length <= 20, `attempts: ${attemptsAt.length} at ${attemptsAt.join(', ')} ms`);
    const gaps = attemptsAt.slice(1).map((t, i) => t - attemptsAt[i]!);
    assert.ok(gaps.at(-1)! >= 1_500, `the last gaps are long: ${gaps.join(', ')}`);
    assert.ok(gaps[0]! <= 250, `the first retry is quick: ${gaps.join(', ')}`);
  } finally {
    client.dispose();
  }
});
