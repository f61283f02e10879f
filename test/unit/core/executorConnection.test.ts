/**
 * `ExecutorConnection` without a server: what it says when there is nothing to connect to. Against
 * real servers on loopback: test/integration/core/executorConnection.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { observe, rejection } from '../../helpers/observedExecutor';

describe('the bundled executor', () => {
  test('without a bundled server in this build it fails with that reason', async (t) => {
    const { conn, states } = observe({ kind: 'bundled', name: 'bundled' });
    t.after(() => conn.dispose());
    const err = await rejection(conn.connect());
    assert.equal(err.message, 'the bundled exec-server is not available in this build');
    assert.deepEqual(states.at(-1), { kind: 'failed', message: err.message });
  });
});
