import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isActive, RunRegistry, type RunRecord } from '../../../src/core/runRegistry';
import { FakeClock } from '../../helpers/fakeClock';

test('tracks a run from start to exit and fires a change each time', () => {
  const clock = new FakeClock(1000);
  const reg = new RunRegistry(20, clock);
  const seen: string[] = [];
  reg.onDidChange((r) => seen.push(r.status));
  const run = reg.add({ executor: 'bundled', kind: 'command', commandLine: 'make', sandboxed: true });
  assert.equal(run.startedAt, 1000);
  reg.update(run.id, { status: 'running', processId: 'p1' });
  clock.advance(500);
  reg.update(run.id, { status: 'awaitingApproval', exitCode: 1, sandboxDenied: true });
  assert.equal(reg.get(run.id)!.endedAt, undefined, 'awaiting approval is still active');
  reg.update(run.id, { status: 'running', processId: 'p2', sandboxed: false });
  clock.advance(250);
  reg.update(run.id, { status: 'exited', exitCode: 0 });
  assert.deepEqual(seen, ['starting', 'running', 'awaitingApproval', 'running', 'exited']);
  const done = reg.get(run.id)!;
  assert.equal(done.endedAt, 1750);
  assert.equal(done.sandboxed, false);
  assert.equal(isActive(done), false);
  assert.deepEqual(reg.active(), []);
});

test('per executor: active runs oldest first, then finished runs newest first', () => {
  const clock = new FakeClock();
  const reg = new RunRegistry(20, clock);
  const mk = (name: string, executor = 'a'): RunRecord => {
    clock.advance(1);
    return reg.add({ executor, kind: 'command', commandLine: name, sandboxed: true });
  };
  const a = mk('a');
  const b = mk('b');
  const c = mk('c');
  mk('other', 'b');
  clock.advance(1);
  reg.update(a.id, { status: 'exited', exitCode: 0 });
  clock.advance(1);
  reg.update(b.id, { status: 'failed', error: 'connection lost' });
  assert.deepEqual(
    reg.forExecutor('a').map((r) => r.commandLine),
    ['c', 'b', 'a'],
  );
  assert.equal(c.status, 'starting');
});

test('keeps only the most recent finished runs per executor', () => {
  const clock = new FakeClock();
  const reg = new RunRegistry(2, clock);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    clock.advance(1);
    const r = reg.add({ executor: 'x', kind: 'command', commandLine: `c${i}`, sandboxed: true });
    ids.push(r.id);
    reg.update(r.id, { status: 'exited', exitCode: i });
  }
  const live = reg.add({ executor: 'x', kind: 'shell', commandLine: '/bin/bash', sandboxed: true });
  assert.deepEqual(
    reg.forExecutor('x').map((r) => r.commandLine),
    ['/bin/bash', 'c4', 'c3'],
  );
  assert.equal(reg.get(ids[0]!), undefined);
  assert.equal(reg.get(live.id)?.status, 'starting');
});
