import * as assert from 'node:assert/strict';
import { suite, test } from 'mocha';
import { getApi, isAlive } from './helpers';

suite('bundled executor', () => {
  test('connects: starts dist/cli.js serve as a child of the extension host', async () => {
    const api = await getApi();
    const state = await api.connect('bundled');
    assert.equal(state.kind, 'connected');
    const pid = api.bundledServerPid();
    assert.ok(pid !== undefined && isAlive(pid), 'the bundled exec-server runs');
    // Connecting again reuses the same server and session.
    const again = await api.connect('bundled');
    assert.equal(again.kind, 'connected');
    assert.equal(api.bundledServerPid(), pid);
  });

  test('restarts on demand after the server dies', async () => {
    const api = await getApi();
    await api.connect('bundled');
    const pid = api.bundledServerPid()!;
    const failed = new Promise<void>((resolve) => {
      const sub = api.onDidChangeExecutorState(({ executor, state }) => {
        if (executor === 'bundled' && state.kind === 'failed') {
          sub.dispose();
          resolve();
        }
      });
    });
    process.kill(-pid, 'SIGKILL');
    await failed;
    const state = api.executorState('bundled');
    assert.ok(
      state.kind === 'failed' && /bundled exec-server was killed \(SIGKILL\).*Reconnect/.test(state.message),
      JSON.stringify(state),
    );
    assert.equal((await api.connect('bundled')).kind, 'connected');
    assert.notEqual(api.bundledServerPid(), pid, 'a new server was started');
  });
});
