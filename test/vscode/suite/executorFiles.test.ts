import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, waitFor } from './helpers';

// Files on the bundled executor through `execbridge://bundled/<path>` (the FileSystemProvider).
const uriOf = (path: string) => vscode.Uri.from({ scheme: 'execbridge', authority: 'bundled', path });

suite('executor files', () => {
  let dir: string;
  suiteSetup(async () => {
    await (await getApi()).connect('bundled');
    dir = mkdtempSync(join(tmpdir(), 'eb-files-'));
    writeFileSync(join(dir, 'hello.txt'), 'hello from the executor\n');
  });
  suiteTeardown(() => rmSync(dir, { recursive: true, force: true }));

  test('a file on the executor opens, is edited and saved; the change is on disk', async () => {
    const doc = await vscode.workspace.openTextDocument(uriOf(join(dir, 'hello.txt')));
    assert.equal(doc.getText(), 'hello from the executor\n');
    const editor = await vscode.window.showTextDocument(doc);
    await editor.edit((e) => e.insert(new vscode.Position(1, 0), 'edited in VS Code\n'));
    assert.equal(await doc.save(), true);
    assert.equal(readFileSync(join(dir, 'hello.txt'), 'utf8'), 'hello from the executor\nedited in VS Code\n');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test('stat, listing, rename, delete and errors go through the provider', async () => {
    const fs = vscode.workspace.fs;
    await fs.createDirectory(uriOf(join(dir, 'sub')));
    await fs.writeFile(uriOf(join(dir, 'sub', 'a.txt')), Buffer.from('A'));
    const list = await fs.readDirectory(uriOf(dir));
    assert.deepEqual(list.sort(), [
      ['hello.txt', vscode.FileType.File],
      ['sub', vscode.FileType.Directory],
    ]);
    await fs.rename(uriOf(join(dir, 'sub', 'a.txt')), uriOf(join(dir, 'b.txt')));
    assert.equal(readFileSync(join(dir, 'b.txt'), 'utf8'), 'A');
    await assert.rejects(
      Promise.resolve(fs.stat(uriOf(join(dir, 'sub', 'a.txt')))),
      (e: vscode.FileSystemError) => e.code === 'FileNotFound',
    );
    await assert.rejects(
      Promise.resolve(fs.rename(uriOf(join(dir, 'b.txt')), uriOf(join(dir, 'hello.txt')))),
      (e: vscode.FileSystemError) => e.code === 'FileExists',
    );
    await fs.delete(uriOf(join(dir, 'sub')), { recursive: true });
    assert.equal((await fs.readDirectory(uriOf(dir))).length, 2);
  });

  test('a change made on the executor reaches an open editor (polling)', async () => {
    const file = join(dir, 'changing.txt');
    writeFileSync(file, 'v1\n');
    const doc = await vscode.workspace.openTextDocument(uriOf(file));
    await vscode.window.showTextDocument(doc);
    writeFileSync(file, 'v2, changed on the executor\n');
    await waitFor('the editor to show the new content', () => doc.getText().startsWith('v2'), 15_000);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
