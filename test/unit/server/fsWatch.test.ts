import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FsChange, FsChangeType } from '../../../src/protocol/fsWatch';
import { ChangeCoalescer, isExcluded, WatchBudget, type RawEvent } from '../../../src/server/fsWatch';
import { FakeClock } from '../../helpers/fakeClock';

/** A coalescer whose stat is a map (path → what is there now), and what it emitted. */
function harness(limits = { coalesceMs: 100, maxChanges: 5 }) {
  const clock = new FakeClock();
  const disk = new Map<string, 'file' | 'dir'>();
  const emitted: Array<{ changes: FsChange[]; overflow: boolean }> = [];
  const resolved: string[] = [];
  const c = new ChangeCoalescer(
    limits,
    async (path, raw: RawEvent): Promise<FsChangeType | undefined> => {
      resolved.push(path);
      if (!disk.has(path)) return 'deleted';
      return raw === 'change' ? 'changed' : 'created';
    },
    (changes, overflow) => emitted.push({ changes, overflow }),
    clock,
  );
  const settle = () => new Promise((r) => setImmediate(r));
  return { clock, disk, emitted, resolved, c, settle };
}

test('events of one window become one notification, each path once, its kind decided by a stat at the flush', async () => {
  const { clock, disk, emitted, resolved, c, settle } = harness();
  disk.set('/w/a', 'file');
  c.add('/w/a', 'rename');
  c.add('/w/a', 'change');
  c.add('/w/a', 'change');
  c.add('/w/b', 'rename'); // created and deleted again within the window: gone at the flush
  clock.advance(99);
  await settle();
  assert.deepEqual(emitted, [], 'nothing before the window ends');
  clock.advance(1);
  await settle();
  assert.deepEqual(emitted, [
    {
      changes: [
        { type: 'created', path: '/w/a' },
        { type: 'deleted', path: '/w/b' },
      ],
      overflow: false,
    },
  ]);
  assert.deepEqual(resolved, ['/w/a', '/w/b'], 'one stat per path, not per event');
});

test('a steady stream still flushes every window (the timer is not pushed back by new events)', async () => {
  const { clock, disk, emitted, c, settle } = harness();
  disk.set('/w/log', 'file');
  for (let t = 0; t < 350; t += 10) {
    c.add('/w/log', 'change');
    clock.advance(10);
    await settle();
  }
  assert.ok(emitted.length >= 3, `flushed ${emitted.length} times in 350 ms`);
  assert.ok(emitted.every((e) => e.changes.length === 1 && e.changes[0]!.type === 'changed'));
});

test('more distinct paths than maxChanges in one window: one overflow, no list', async () => {
  const { clock, emitted, c, settle } = harness({ coalesceMs: 100, maxChanges: 5 });
  for (let i = 0; i < 50; i++) c.add(`/w/f${i}`, 'rename');
  clock.advance(100);
  await settle();
  assert.deepEqual(emitted, [{ changes: [], overflow: true }]);
  // The next window starts afresh.
  c.add('/w/again', 'change');
  clock.advance(100);
  await settle();
  assert.deepEqual(emitted[1], { changes: [{ type: 'deleted', path: '/w/again' }], overflow: false });
});

test('an OS overflow (no file name) is passed on as overflow; disposed, nothing more is sent', async () => {
  const { clock, emitted, c, settle } = harness();
  c.addOverflow();
  clock.advance(100);
  await settle();
  assert.deepEqual(emitted, [{ changes: [], overflow: true }]);
  c.add('/w/x', 'change');
  c.dispose();
  clock.advance(500);
  await settle();
  assert.equal(emitted.length, 1);
  assert.equal(clock.pendingTimers, 0);
});

test('excludes match directory names anywhere and relative tails, `*` one segment', () => {
  assert.equal(isExcluded('node_modules', ['node_modules']), true);
  assert.equal(isExcluded('a/b/node_modules', ['node_modules']), true);
  assert.equal(isExcluded('a/node_modules_x', ['node_modules']), false);
  assert.equal(isExcluded('.git/objects', ['.git/objects']), true);
  assert.equal(isExcluded('.git', ['.git/objects']), false);
  assert.equal(isExcluded('web/node_modules/react', ['node_modules/*']), true);
  assert.equal(isExcluded('web/node_modules', ['node_modules/*']), false);
  assert.equal(isExcluded('', ['node_modules']), false, 'the root itself is never excluded');
});

test('the server-wide budget of watched directories is shared and given back', () => {
  const b = new WatchBudget(2);
  assert.equal(b.take(), true);
  assert.equal(b.take(), true);
  assert.equal(b.take(), false);
  b.give(1);
  assert.equal(b.take(), true);
  assert.equal(b.inUse, 2);
});
