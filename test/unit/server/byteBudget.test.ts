import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteBudget, ByteMeter } from '../../../src/server/requestAdmission';

const turn = () => new Promise((r) => setImmediate(r));

test('ByteMeter: takes up to its limit, refuses past it, always adds what it is told to', () => {
  const m = new ByteMeter(100);
  assert.equal(m.take(60), true);
  assert.equal(m.take(41), false, 'over the limit: refused, nothing counted');
  assert.equal(m.heldBytes, 60);
  assert.equal(m.take(40), true);
  m.add(5);
  assert.equal(m.heldBytes, 105);
  m.give(105);
  assert.equal(m.heldBytes, 0);
  m.give(1);
  assert.equal(m.heldBytes, 0, 'never below zero');
});

test('ByteBudget: grants in order while they fit; one too large for what is left holds back those behind it', async () => {
  const b = new ByteBudget(100);
  const granted: string[] = [];
  const releases = new Map<string, () => void>();
  const ask = (name: string, bytes: number) => void b.acquire(bytes).then((r) => (granted.push(name), releases.set(name, r)));
  ask('a', 60);
  ask('b', 50); // does not fit beside a
  ask('c', 10); // would fit, but waits behind b: b is not starved by small ones
  await turn();
  assert.deepEqual(granted, ['a']);
  assert.equal(b.waitingCount, 2);
  releases.get('a')!();
  await turn();
  await turn();
  assert.deepEqual(granted, ['a', 'b', 'c']);
  assert.equal(b.usedBytes, 60);
});

test('ByteBudget: a request larger than the whole budget waits until nothing is held, then runs alone', async () => {
  const b = new ByteBudget(100);
  const granted: string[] = [];
  const releases = new Map<string, () => void>();
  const ask = (name: string, bytes: number) => void b.acquire(bytes).then((r) => (granted.push(name), releases.set(name, r)));
  ask('small', 10);
  ask('huge', 500);
  ask('after', 10);
  await turn();
  assert.deepEqual(granted, ['small']);
  releases.get('small')!();
  await turn();
  await turn();
  assert.deepEqual(granted, ['small', 'huge'], 'the huge one runs alone');
  releases.get('huge')!();
  releases.get('huge')!(); // idempotent
  await turn();
  await turn();
  assert.deepEqual(granted, ['small', 'huge', 'after']);
  assert.equal(b.usedBytes, 10);
});

test('ByteBudget: a waiter that is not ready is passed over without holding back the others; pump() grants it later', async () => {
  const b = new ByteBudget(100);
  let congested = true;
  const granted: string[] = [];
  void b.acquire(10, () => !congested).then(() => granted.push('congested connection'));
  void b.acquire(10).then(() => granted.push('other connection'));
  await turn();
  assert.deepEqual(granted, ['other connection']);
  congested = false;
  b.pump(); // its connection drained
  await turn();
  assert.deepEqual(granted, ['other connection', 'congested connection']);
});

test('ByteBudget: an aborted waiter leaves the queue and is rejected', async () => {
  const b = new ByteBudget(100);
  const first = await b.acquire(100);
  const abort = new AbortController();
  const waiting = b.acquire(50, () => true, abort.signal);
  let next = false;
  void b.acquire(50).then(() => (next = true));
  abort.abort();
  await assert.rejects(waiting, /aborted/);
  assert.equal(b.waitingCount, 1);
  first();
  await turn();
  await turn();
  assert.equal(next, true);
  assert.equal(b.usedBytes, 50, 'the aborted waiter holds nothing');
  await assert.rejects(
    b.acquire(1, () => true, abort.signal),
    /aborted/,
    'an aborted signal is refused at once',
  );
});
