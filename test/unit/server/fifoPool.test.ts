import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIFO_PREFIX, FifoPool } from '../../../src/server/fifoPool';
import { privateDir, sweepDeadDirs } from '../../../src/util/privateDir';

const mine = () => readdirSync(privateDir()).filter((n) => n.startsWith(`${FIFO_PREFIX}${process.pid}-`));

test('FifoPool: disposed while a mkfifo batch runs, it neither throws nor leaves its directory', async () => {
  const before = new Set(mine());
  for (let i = 0; i < 20; i++) {
    const pool = new FifoPool(8, 4);
    const opened = pool.open([false]); // makes the directory and starts a batch
    pool.dispose();
    await opened.then(
      (ends) => ends.forEach((e) => e.ours.destroy()),
      () => undefined, // a pool disposed mid-take may refuse: that is fine
    );
  }
  // The batches finish on their own; each removes what it made.
  const deadline = Date.now() + 5000;
  while (mine().some((n) => !before.has(n)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    mine().filter((n) => !before.has(n)),
    [],
  );
});

test('sweepDeadDirs: removes what dead processes left, keeps the living, and never throws', () => {
  const dead = join(privateDir(), `${FIFO_PREFIX}999999999-test`);
  mkdirSync(join(dead, 'sub'), { recursive: true });
  writeFileSync(join(dead, 'sub', 'p1'), '');
  const alive = join(privateDir(), `${FIFO_PREFIX}${process.pid}-sweeptest`);
  mkdirSync(alive, { recursive: true });
  try {
    assert.ok(sweepDeadDirs(FIFO_PREFIX) >= 1);
    assert.equal(existsSync(dead), false);
    assert.equal(existsSync(alive), true);
  } finally {
    sweepDeadDirs(FIFO_PREFIX);
    rmSync(alive, { recursive: true, force: true });
  }
});
