/** The FIFO pool (src/server/fifoPool.ts) with its real `mkfifo` batches. */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { FIFO_PREFIX, FifoPool } from '../../../src/server/fifoPool';
import { privateDir } from '../../../src/util/privateDir';

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
