import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { suite, test } from 'mocha';
import { findFiles, getApi, isAlive, waitFor, withSettings } from './helpers';

function readlinkSafe(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

suite('bundled executor', () => {
  test('connects: finds or starts the executor daemon (dist/cli.js daemon run), which outlives a window', async () => {
    const api = await getApi();
    const state = await api.connect('bundled');
    assert.equal(state.kind, 'connected');
    const pid = api.bundledServerPid();
    assert.ok(pid !== undefined && isAlive(pid), 'the bundled exec-server runs');
    assert.deepEqual(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(2, 4), ['daemon', 'run']);
    // Its own session (setsid): a window's process group going away does not take it along.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    assert.equal(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]), pid, 'a session leader');
    // Connecting again reuses the same server and session.
    const again = await api.connect('bundled');
    assert.equal(again.kind, 'connected');
    assert.equal(api.bundledServerPid(), pid);
  });

  test('it listens on no TCP port (a unix socket in the private directory): nothing for the editor to forward', async () => {
    const api = await getApi();
    await api.connect('bundled');
    const pid = api.bundledServerPid()!;
    const sockets = new Set<string>();
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSafe(`/proc/${pid}/fd/${fd}`));
      if (m) sockets.add(m[1]!);
    }
    assert.ok(sockets.size > 0, 'the daemon has its socket');
    // /proc/net/tcp{,6}: state 0A is LISTEN, the inode is the 10th column.
    const listening = ['tcp', 'tcp6'].flatMap((f) =>
      readFileSync(`/proc/${pid}/net/${f}`, 'utf8')
        .split('\n')
        .slice(1)
        .map((l) => l.trim().split(/\s+/))
        .filter((c) => c[3] === '0A' && sockets.has(c[9]!)),
    );
    assert.deepEqual(listening, []);
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
      state.kind === 'failed' && /bundled exec-server \(the exec-bridge daemon, pid \d+\) is gone.*Reconnect/.test(state.message),
      JSON.stringify(state),
    );
    assert.equal((await api.connect('bundled')).kind, 'connected');
    assert.notEqual(api.bundledServerPid(), pid, 'a new server was started');
  });
});
