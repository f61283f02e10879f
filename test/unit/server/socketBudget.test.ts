import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openFileLimit, pendingSocketCap } from '../../../src/server/socketBudget';

test('pendingSocketCap: at most a quarter of the descriptor limit, never below 8', () => {
  assert.equal(pendingSocketCap(512, 1_048_576), 512);
  assert.equal(pendingSocketCap(512, 1024), 256);
  assert.equal(pendingSocketCap(512, 400), 100);
  assert.equal(pendingSocketCap(512, 16), 8);
  if (process.platform === 'linux') assert.ok((openFileLimit() ?? 0) > 0, 'read from /proc/self/limits');
});
