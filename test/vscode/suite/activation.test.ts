import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, waitFor } from './helpers';

suite('activation', () => {
  test('activates once the workbench has started (the status bar item shows without opening the view or running a command)', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    // Nothing here activates it: onStartupFinished must have (this test runs first).
    await waitFor('activation after startup', () => ext.isActive, 20_000);
  });

  test('activates from its contributions only, quickly, and registers every declared command', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, 'extension is installed');
    const manifest = JSON.parse(readFileSync(join(ext.extensionPath, 'package.json'), 'utf8')) as {
      activationEvents: string[];
      contributes: { commands: { command: string }[] };
      capabilities: { untrustedWorkspaces: { supported: unknown } };
    };
    assert.ok(!manifest.activationEvents.includes('*'), 'no "*" activation');
    assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');

    const api = await getApi();
    assert.equal(ext.isActive, true);
    // For bench/run.mjs (issue 26 item 5 has a target of 50 ms; the test bounds it loosely, a loaded machine is slow).
    console.log(`activation: ${JSON.stringify({ ms: api.activationMs })}`);
    assert.ok(api.activationMs >= 0 && api.activationMs < 1000, `activation took ${api.activationMs} ms`);

    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = manifest.contributes.commands.map((c) => c.command).filter((c) => !registered.has(c));
    assert.deepEqual(missing, [], 'every contributed command is registered');
  });

  test('lists the bundled executor and does not connect on its own', async () => {
    const api = await getApi();
    assert.ok(api.executorNames().includes('bundled'));
    assert.equal(api.activeExecutor, 'bundled');
    assert.equal(api.bundledServerPid(), undefined, 'no server is started before something needs it');
  });
});
