import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIFO_PREFIX } from '../../../src/server/fifoPool';
import { privateDir, sweepDeadDirs } from '../../../src/util/privateDir';

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
