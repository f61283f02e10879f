import * as assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { PASSPHRASE, startSshd, type Sshd } from '../../helpers/sshd';
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
      executors: [
        { name: 'devbox', ssh: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions },
        // Only a passphrase-protected key and no agent: ssh asks, VS Code shows the input box.
        {
          name: 'locked',
          ssh: `root@127.0.0.1:${sshd.port}`,
          sshOptions: [`IdentityFile=${sshd.passphraseKey}`, 'IdentitiesOnly=yes', 'IdentityAgent=none', ...sshd.clientOptions.slice(2)],
        },
      ],
      sandbox: 'full-access',
    });
    const api = await getApi();
    await waitFor('the ssh executors in the list', () => api.executorNames().includes('devbox') && api.executorNames().includes('locked'));
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

  test("ssh's passphrase prompt is a password input box: cancelled → a clear failure; answered → connected", async function () {
    this.timeout(60_000);
    const api = await getApi();
    const asked: vscode.InputBoxOptions[] = [];
    let answer: string | undefined;
    const window = vscode.window as { showInputBox: typeof vscode.window.showInputBox };
    const original = window.showInputBox;
    window.showInputBox = (options?: vscode.InputBoxOptions) => {
      asked.push(options ?? {});
      return Promise.resolve(answer);
    };
    try {
      await assert.rejects(api.connect('locked'), /was cancelled \(ssh asked "Enter passphrase for key/);
      assert.equal(api.executorState('locked').kind, 'failed');
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.password, true);
      assert.match(asked[0]!.prompt ?? '', new RegExp(`^Enter passphrase for key '${sshd.passphraseKey}':$`));
      assert.match(asked[0]!.title ?? '', /locked/);

      answer = PASSPHRASE;
      await vscode.commands.executeCommand('execBridge.selectExecutor', 'locked');
      assert.equal((await api.connect('locked')).kind, 'connected');
      assert.equal(asked.length, 2);
      const t = await runCommand(api, 'echo "unlocked on $HOME"');
      await t.done;
      assert.equal(t.executor, 'locked');
      assert.match(plain(t.text()), new RegExp(`^unlocked on ${sshd.home}\\r$`, 'm'));
      t.terminal.dispose();
    } finally {
      window.showInputBox = original;
      await vscode.commands.executeCommand('execBridge.selectExecutor', 'bundled');
    }
  });
});
