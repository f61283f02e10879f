import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';
import { findFiles, getApi, isAlive, waitFor, withSettings } from './helpers';

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

  test("its port is not auto-forwarded: a remote.portsAttributes default matches the server's command line", async () => {
    const api = await getApi();
    await api.connect('bundled');
    // code-server's port finder reports each listening port with its process's raw /proc cmdline,
    // and applies the first regex key of remote.portsAttributes that matches it.
    const cmdline = readFileSync(`/proc/${api.bundledServerPid()}/cmdline`, 'utf8');
    const attributes =
      vscode.workspace.getConfiguration('remote').inspect<Record<string, { onAutoForward?: string }>>('portsAttributes')?.defaultValue ??
      {};
    const matching = Object.entries(attributes).filter(([key]) => !/^\d/.test(key) && new RegExp(key).test(cmdline));
    assert.deepEqual(
      matching.map(([, v]) => v.onAutoForward),
      ['ignore'],
      `keys ${JSON.stringify(Object.keys(attributes))} vs ${JSON.stringify(cmdline)}`,
    );
    // A user's own `node dist/cli.js serve` (no --exit-with-stdin) is still theirs to forward.
    assert.ok(!matching.some(([key]) => new RegExp(key).test('node\0/work/dist/cli.js\0serve\0--listen\0ws://0.0.0.0:8080\0')));
  });

  test('an unknown defaultExecutor is reported with the names there are, and bundled is used', async () => {
    const api = await getApi();
    const undo = await withSettings({ defaultExecutor: 'no-such-executor' });
    try {
      await waitFor(
        'the defaultExecutor warning in the log',
        () =>
          findFiles(api.logUri.fsPath, /Exec Bridge\.log$/).some((f) =>
            readFileSync(f, 'utf8').includes('execBridge.defaultExecutor is "no-such-executor", which is not an executor (known: bundled'),
          ),
        10_000,
      );
      assert.equal(api.activeExecutor, 'bundled');
    } finally {
      await undo();
    }
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
