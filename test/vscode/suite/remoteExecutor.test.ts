import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { findFiles, getApi, plain, runCommand, startExecServer, waitFor, withSettings } from './helpers';

suite('a WebSocket executor with a token', () => {
  const token = randomBytes(24).toString('hex');
  let server: Awaited<ReturnType<typeof startExecServer>>;
  let dir: string;
  let restore: () => Promise<void>;

  suiteSetup(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exec-bridge-token-'));
    writeFileSync(join(dir, 'token'), token, { mode: 0o600 });
    server = await startExecServer(['--token-file', join(dir, 'token')]);
    restore = await withSettings({
      executors: [{ name: 'guarded', url: server.url, tokenSecret: 'guarded-token' }],
      sandbox: 'full-access',
      sandboxNetwork: true,
    });
    const api = await getApi();
    await waitFor('the guarded executor in the list', () => api.executorNames().includes('guarded'));
  });

  suiteTeardown(async () => {
    await restore?.();
    server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('without its token the connection is refused with a clear reason; with it, commands run', async () => {
    const api = await getApi();
    await assert.rejects(api.connect('guarded'), /401/);
    assert.equal(api.executorState('guarded').kind, 'failed');

    // Stores the token in SecretStorage (the same command as the palette's, with the token given).
    await vscode.commands.executeCommand('execBridge.setExecutorToken', 'guarded', token);
    assert.equal((await api.connect('guarded')).kind, 'connected');

    await vscode.commands.executeCommand('execBridge.selectExecutor', 'guarded');
    assert.equal(api.activeExecutor, 'guarded');
    try {
      const t = await runCommand(api, 'echo "remote ""ok"');
      await t.done;
      assert.equal(t.executor, 'guarded');
      assert.match(plain(t.text()), /^remote ok\r$/m);
      t.terminal.dispose();
    } finally {
      await vscode.commands.executeCommand('execBridge.selectExecutor', 'bundled');
    }
  });

  test('the token never reaches the settings or the log', async () => {
    const settings = JSON.stringify(vscode.workspace.getConfiguration('execBridge').get('executors'));
    assert.ok(!settings.includes(token));
    // The "Exec Bridge" LogOutputChannel is written to a file in the extension's log folder.
    const api = await getApi();
    const logs = await waitFor(
      "the Exec Bridge log file with the guarded executor's lines",
      () => {
        const files = findFiles(api.logUri.fsPath, /Exec Bridge\.log$/);
        return files.some((f) => readFileSync(f, 'utf8').includes('guarded: connected')) ? files : undefined;
      },
      10_000,
    );
    for (const f of logs) assert.ok(!readFileSync(f, 'utf8').includes(token), `${f} must not contain the token`);
  });
});
