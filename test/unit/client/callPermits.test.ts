import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, type Permit } from '../../../src/client/callPermits';

test('regular calls get at most N permits; the reserved one is only for cleanup', async () => {
  const a = new Admission(2);
  const p1 = await a.acquire(false, undefined, 'm');
  const p2 = await a.acquire(false, undefined, 'm');
  const got: { third?: Permit; cleanup?: Permit } = {};
  const waiting = a.acquire(false, undefined, 'm').then((p) => (got.third = p));
  const cleanup = await a.acquire(true, undefined, 'process/terminate');
  assert.equal(a.inFlight, 3);
  const cleanupWaiting = a.acquire(true, undefined, 'fs/close').then((p) => (got.cleanup = p));
  assert.equal(a.cleanupWaiting, 1);
  cleanup.release();
  await cleanupWaiting;
  assert.ok(got.cleanup, 'a cleanup waiter takes the freed reserved permit');
  assert.equal('third' in got, false, 'a regular waiter never takes the reserved permit');
  p1.release();
  const third = await waiting;
  p1.release(); // releasing twice is a no-op
  assert.equal(a.inFlight, 3);
  p2.release();
  third.release();
  got.cleanup.release();
  assert.equal(a.inFlight, 0);
  assert.equal(a.peakInFlight, 3);
});

test('waiters are served first come, first served; aborted ones leave the queue', async () => {
  const a = new Admission(1);
  const first = await a.acquire(false, undefined, 'm');
  const order: string[] = [];
  const ac = new AbortController();
  const b = a.acquire(false, ac.signal, 'b').then(
    () => order.push('b'),
    (e: { kind: string }) => order.push(`b:${e.kind}`),
  );
  const c = a.acquire(false, undefined, 'c').then((p) => {
    order.push('c');
    p.release();
  });
  ac.abort();
  first.release();
  await Promise.all([b, c]);
  assert.deepEqual(order, ['b:aborted', 'c']);
});

test('failAll rejects waiters and later calls with the same error', async () => {
  const a = new Admission(1);
  await a.acquire(false, undefined, 'm');
  const waiting = a.acquire(false, undefined, 'm');
  const err = new Error('failed');
  a.failAll(err);
  await assert.rejects(waiting, (e) => e === err);
  await assert.rejects(a.acquire(true, undefined, 'm'), (e) => e === err);
});
