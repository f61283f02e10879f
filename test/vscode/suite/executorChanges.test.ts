import * as assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { executorFolder, waitFor } from './helpers';

// Changes made on the executor (not through VS Code) to files of an executor workspace folder.
suite('executor changes', () => {
  let dir: string;
  let root: vscode.Uri;
  let remove: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    ({ dir, root, remove } = await executorFolder('eb-changes-', { 'top.txt': 'v1\n', 'sub/deeper/nested.txt': 'n1\n' }));
  });
  suiteTeardown(async () => {
    await remove?.();
  });

  test('an open editor of a file in an executor folder shows a change made on the executor', async () => {
    const uri = vscode.Uri.joinPath(root, 'sub', 'deeper', 'nested.txt');
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    assert.equal(doc.getText(), 'n1\n');
    await new Promise((r) => setTimeout(r, 500));
    writeFileSync(join(dir, 'sub', 'deeper', 'nested.txt'), 'n2, changed on the executor\n');
    await waitFor('the editor to show the new content', () => doc.getText().startsWith('n2'), 8_000);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test('a file created on the executor in a listed folder is reported to VS Code (the Explorer updates)', async () => {
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(root, '**/*'));
    const created: string[] = [];
    watcher.onDidCreate((u) => created.push(u.toString()));
    try {
      // The Explorer lists a folder when it is expanded.
      await vscode.workspace.fs.readDirectory(vscode.Uri.joinPath(root, 'sub', 'deeper'));
      await new Promise((r) => setTimeout(r, 500));
      writeFileSync(join(dir, 'sub', 'deeper', 'new.txt'), 'new\n');
      const want = vscode.Uri.joinPath(root, 'sub', 'deeper', 'new.txt').toString();
      await waitFor(`a created event for ${want} (got ${JSON.stringify(created)})`, () => created.includes(want), 8_000);
    } finally {
      watcher.dispose();
    }
  });
});
