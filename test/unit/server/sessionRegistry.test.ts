import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RpcError } from '../../../src/rpc/errors';
import type { SessionConnection } from '../../../src/server/session';
import { SessionRegistry } from '../../../src/server/sessionRegistry';
import { planUnsandboxed } from '../../../src/server/spawnPlan';
import { FakeClock } from '../../helpers/fakeClock';

const conn = (): SessionConnection & { notes: unknown[] } => {
  const notes: unknown[] = [];
  return {
    notes,
    notify: (m, p) => notes.push([m, p]),
    notifyFrame: (f) => notes.push(f),
    congested: () => false,
    whenUncongested: (cb) => cb(),
  };
};

function registry(clock: FakeClock, ttlMs = 30_000) {
  return { r: new SessionRegistry({ ttlMs, clock, planner: planUnsandboxed }) };
}

test('resume reattaches a detached session with the same id', () => {
  const clock = new FakeClock();
  const { r } = registry(clock);
  const a = conn();
  const s = r.create(a);
  r.detach(s, a);
  clock.advance(29_999);
  const b = conn();
  assert.equal(r.resume(s.id, b), s);
  assert.ok(s.isAttached);
  // Attached: the TTL no longer runs.
  clock.advance(60_000);
  assert.equal(r.size, 1);
});

test('resume while attached is -32010 and unknown ids are -32600', () => {
  const clock = new FakeClock();
  const { r } = registry(clock);
  const s = r.create(conn());
  assert.throws(
    () => r.resume(s.id, conn()),
    (e: unknown) => e instanceof RpcError && e.code === -32010 && e.message.includes('already attached'),
  );
  assert.throws(
    () => r.resume('nope', conn()),
    (e: unknown) => e instanceof RpcError && e.code === -32600 && e.message === 'unknown session id nope',
  );
});

test('a detached session expires after the TTL and its file handles are closed', () => {
  const clock = new FakeClock();
  const { r } = registry(clock, 1000);
  const a = conn();
  const s = r.create(a);
  r.detach(s, a);
  clock.advance(999);
  assert.equal(r.size, 1);
  clock.advance(1);
  assert.equal(r.size, 0);
  assert.ok(s.isDisposed);
  assert.throws(() => s.fileHandles.checkCanAdd('h1'), /session is closed/);
  assert.throws(() => r.resume(s.id, conn()), /unknown session id/);
});

test('a stale detach from an old connection does not detach the new one', () => {
  const clock = new FakeClock();
  const { r } = registry(clock, 1000);
  const a = conn();
  const s = r.create(a);
  r.detach(s, a);
  const b = conn();
  r.resume(s.id, b);
  r.detach(s, a); // late close event of the first connection
  clock.advance(5000);
  assert.ok(s.isAttached);
  assert.equal(r.size, 1);
});

test('dispose kills everything and clears timers', () => {
  const clock = new FakeClock();
  const { r } = registry(clock);
  const a = conn();
  const s1 = r.create(a);
  r.create(conn());
  r.detach(s1, a);
  r.dispose();
  assert.equal(r.size, 0);
  assert.equal(clock.pendingTimers, 0);
});
