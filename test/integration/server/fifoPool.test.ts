/** The FIFO pool (src/server/fifoPool.ts) with its real `mkfifo` batches. */
import assert from 'node:assert/strict';
import { readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { closeChildEnds, FIFO_PREFIX, FifoPool } from '../../../src/server/fifoPool';
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

test('FifoPool: the FIFOs a start took leave their directory (unlinked in the background), the ready ones stay', async () => {
  const before = new Set(mine());
  const pool = new FifoPool(8, 4);
  const ends = await pool.open([true, false, false]);
  try {
    const [dir] = mine().filter((n) => !before.has(n));
    assert.ok(dir, 'the pool made its directory');
    const entries = () => readdirSync(join(privateDir(), dir)).length;
    // 8 made, 3 taken; 5 ≥ the low-water mark of 4, so no batch is made meanwhile.
    const deadline = Date.now() + 5000;
    while (entries() !== 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(entries(), 5, 'only the ready FIFOs are left by path');
    // The ends still work after the unlink: what the child end gets written, our end reads.
    const child = ends[1]!.childFd;
    const got = new Promise<string>((resolve) => ends[1]!.ours.once('data', (d: Buffer) => resolve(d.toString())));
    writeSync(child, 'hi');
    assert.equal(await got, 'hi');
  } finally {
    closeChildEnds(ends.map((e) => e.childFd));
    for (const e of ends) e.ours.destroy();
    pool.dispose();
  }
});
