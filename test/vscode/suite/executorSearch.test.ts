import * as assert from 'node:assert/strict';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { executorFolder, waitFor } from './helpers';

/** `workspace.findTextInFiles`: a proposed API code-server lets every extension use; it runs VS Code's own Find in Files search. */
type FindTextInFiles = (
  query: { pattern: string; isCaseSensitive?: boolean },
  options: { include?: vscode.GlobPattern; maxResults?: number },
  callback: (r: { uri: vscode.Uri; ranges: vscode.Range | vscode.Range[] }) => void,
) => Thenable<{ limitHit?: boolean }>;

// Search in an executor folder: VS Code's Find in Files (our provider answers it, rg on the
// executor), and "Exec Bridge: Find in Executor Files…" whose match opens at its line and column.
suite('executor search', () => {
  let root: vscode.Uri;
  let remove: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    ({ root, remove } = await executorFolder('eb-search-', {
      'src/deep/target.ts': 'const a = 1;\n\n    let x = "needle-on-executor";\n',
      'other.txt': 'nothing to see\n',
    }));
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await remove?.();
  });

  test("VS Code's Find in Files finds text in an executor folder, at its line and columns", async () => {
    const find = (vscode.workspace as unknown as { findTextInFiles?: FindTextInFiles }).findTextInFiles;
    assert.ok(find, 'this VS Code (code-server) offers findTextInFiles');
    const hits: Array<{ uri: string; ranges: vscode.Range[] }> = [];
    await find({ pattern: 'needle-on-executor' }, {}, (r) =>
      hits.push({ uri: r.uri.toString(), ranges: Array.isArray(r.ranges) ? r.ranges : [r.ranges] }),
    );
    const want = vscode.Uri.joinPath(root, 'src', 'deep', 'target.ts').toString();
    const hit = hits.find((h) => h.uri === want);
    assert.ok(hit, `a result in the executor folder (got ${JSON.stringify(hits.map((h) => h.uri))})`);
    assert.deepEqual(
      hit.ranges.map((r) => [r.start.line, r.start.character, r.end.character]),
      [[2, 13, 31]],
    );
  });

  test('file search (Quick Open, workspace.findFiles) lists files of an executor folder', async () => {
    const found = await vscode.workspace.findFiles(new vscode.RelativePattern(root, '**/*.ts'));
    assert.deepEqual(
      found.map((u) => u.toString()),
      [vscode.Uri.joinPath(root, 'src', 'deep', 'target.ts').toString()],
    );
  });

  test('Find in Executor Files… lists the match and opens it at its line and column', async () => {
    const opened = vscode.commands.executeCommand<vscode.Uri | undefined>('execBridge.findInExecutorFiles', { query: 'needle-on' });
    let result: vscode.Uri | undefined | null = null;
    void opened.then((u) => (result = u));
    // The Quick Pick searches on the executor; its first match is the active item once it is there.
    await waitFor(
      'the match to be picked',
      () => {
        if (result !== null) return true;
        void vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
        return false;
      },
      20_000,
    );
    const want = vscode.Uri.joinPath(root, 'src', 'deep', 'target.ts');
    assert.equal(String(result), want.toString());
    const editor = await waitFor('the editor of the match', () => {
      const e = vscode.window.activeTextEditor;
      return e?.document.uri.toString() === want.toString() ? e : undefined;
    });
    assert.deepEqual([editor.selection.start.line, editor.selection.start.character, editor.selection.end.character], [2, 13, 22]);
  });
});
