import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi } from './helpers';

// The harness opens the suites in a multi-root workspace (one local folder), where an executor
// folder is added in place; a single-folder window instead reopens as a workspace file (UI test).
suite('open executor folder', () => {
  let dir: string;
  suiteSetup(async () => {
    await (await getApi()).connect('bundled');
    dir = mkdtempSync(join(tmpdir(), 'eb-folder-'));
    writeFileSync(join(dir, 'inside.txt'), 'on the executor\n');
  });
  suiteTeardown(() => rmSync(dir, { recursive: true, force: true }));

  const current = (uri: vscode.Uri) => (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri.toString());

  test('Open Executor Folder adds an execbridge: folder; its files list, open, save; removing it leaves the local folder', async () => {
    assert.ok(vscode.workspace.workspaceFile, 'the harness opened a workspace file');
    const local = vscode.workspace.workspaceFolders![0]!.uri.toString();
    const uri = await vscode.commands.executeCommand<vscode.Uri>('execBridge.openExecutorFolder', 'bundled', dir);
    assert.ok(uri, 'the command returns the folder');
    assert.equal(uri.toString(), vscode.Uri.from({ scheme: 'execbridge', authority: 'bundled', path: dir }).toString());
    // The command resolves once VS Code applied the change (a next update would be refused before).
    const folder = current(uri);
    assert.ok(folder, 'the folder is in the workspace when the command returns');
    assert.equal(folder.name, `bundled: ${dir}`);
    assert.deepEqual(await vscode.workspace.fs.readDirectory(uri), [['inside.txt', vscode.FileType.File]]);

    // Again: no second copy of the folder.
    await vscode.commands.executeCommand('execBridge.openExecutorFolder', 'bundled', dir);
    assert.equal((vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.toString() === uri.toString()).length, 1);

    const file = vscode.Uri.joinPath(uri, 'inside.txt');
    const editor = await vscode.window.showTextDocument(file);
    assert.equal(editor.document.getText(), 'on the executor\n');
    assert.equal(vscode.workspace.getWorkspaceFolder(file)?.uri.toString(), uri.toString());
    await editor.edit((b) => b.insert(new vscode.Position(1, 0), 'edited in the workspace folder\n'));
    assert.ok(await editor.document.save());
    assert.equal(readFileSync(join(dir, 'inside.txt'), 'utf8'), 'on the executor\nedited in the workspace folder\n');
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === file.toString());
    await vscode.window.tabGroups.close(tabs);

    const removed = new Promise<void>((resolve) => {
      const sub = vscode.workspace.onDidChangeWorkspaceFolders((e) => {
        if (e.removed.some((f) => f.uri.toString() === uri.toString())) {
          sub.dispose();
          resolve();
        }
      });
    });
    assert.ok(vscode.workspace.updateWorkspaceFolders(folder.index, 1), 'VS Code accepts the removal');
    await removed;
    assert.equal(current(uri), undefined);
    assert.deepEqual(
      (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()),
      [local],
    );
  });

  test('a file or a missing path is refused (shown as an error): nothing is added', async () => {
    for (const p of [join(dir, 'inside.txt'), join(dir, 'missing')]) {
      assert.equal(await vscode.commands.executeCommand('execBridge.openExecutorFolder', 'bundled', p), undefined, p);
    }
    assert.equal((vscode.workspace.workspaceFolders ?? []).length, 1);
  });
});
