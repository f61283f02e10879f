import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, waitFor } from './helpers';

// Runs late (zy-): it turns the test window into a multi-root workspace, then undoes that.
suite('open executor folder', () => {
  let dir: string;
  suiteSetup(async () => {
    await (await getApi()).connect('bundled');
    dir = mkdtempSync(join(tmpdir(), 'eb-folder-'));
    writeFileSync(join(dir, 'inside.txt'), 'x');
  });
  suiteTeardown(() => rmSync(dir, { recursive: true, force: true }));

  test('Open Executor Folder adds an execbridge: workspace folder whose files list', async () => {
    const uri = await vscode.commands.executeCommand<vscode.Uri>('execBridge.openExecutorFolder', 'bundled', dir);
    assert.ok(uri, 'the command returns the folder');
    assert.equal(uri.toString(), vscode.Uri.from({ scheme: 'execbridge', authority: 'bundled', path: dir }).toString());
    await waitFor(
      'the folder in the workspace',
      () => (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri.toString()),
      20_000,
    );
    assert.deepEqual(await vscode.workspace.fs.readDirectory(uri), [['inside.txt', vscode.FileType.File]]);
    // Left in the workspace: this is the last suite before deactivation.
  });
});
