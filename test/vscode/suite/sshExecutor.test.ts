import * as assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { startSshd, type Sshd } from '../../helpers/sshd';
import { getApi, plain, runCommand, waitFor, withSettings } from './helpers';

// An SSH executor from the settings against a real sshd on 127.0.0.1 (its own config, keys and
// remote HOME): the extension installs its own dist/cli.js there over ssh and runs a command.
suite('an SSH executor', () => {
  let sshd: Sshd;
  let restore: () => Promise<void>;

  suiteSetup(async function () {
    this.timeout(30_000);
    sshd = await startSshd();
    restore = await withSettings({
      executors: [{ name: 'devbox', ssh: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions }],
      sandbox: 'full-access',
    });
    const api = await getApi();
    await waitFor('the ssh executor in the list', () => api.executorNames().includes('devbox'));
  });

  suiteTeardown(async () => {
    await restore?.();
    await sshd?.stop();
  });

  test('connects (installing the bundle on the host) and runs a command there', async function () {
    this.timeout(60_000);
    const api = await getApi();
    assert.equal((await api.connect('devbox')).kind, 'connected');
    assert.ok(existsSync(join(sshd.home, '.exec-bridge', 'bin', 'exec-bridge')), 'installed under the remote HOME');
    await vscode.commands.executeCommand('execBridge.selectExecutor', 'devbox');
    try {
      const t = await runCommand(api, 'echo "home=$HOME"');
      await t.done;
      assert.equal(t.executor, 'devbox');
      assert.match(plain(t.text()), new RegExp(`^home=${sshd.home}\\r$`, 'm'));
      t.terminal.dispose();
    } finally {
      await vscode.commands.executeCommand('execBridge.selectExecutor', 'bundled');
    }
  });
});
