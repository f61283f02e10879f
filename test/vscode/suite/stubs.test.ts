import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, runCommand, waitFor, withSettings } from './helpers';

/**
 * Whether the Explorer hides `name` in `dir` through files.exclude, as VS Code evaluates it: a
 * `**\/name` (or `name`) entry that is true, or whose `when` names a sibling that exists. (Search,
 * `findFiles`, does not apply `when` clauses; the Explorer does.)
 */
function explorerHides(dir: string, name: string): boolean {
  const exclude = vscode.workspace.getConfiguration('files', vscode.Uri.file(dir)).get<Record<string, unknown>>('exclude') ?? {};
  const siblings = new Set(readdirSync(dir));
  return Object.entries(exclude).some(([pattern, v]) => {
    if (pattern !== `**/${name}` && pattern !== name) return false;
    if (v === true) return true;
    const when = (v as { when?: unknown } | null)?.when;
    return typeof when === 'string' && siblings.has(when.replace('$(basename)', name));
  });
}

// The placeholder the sandbox needs for a missing .codex (issue 14 item 8) stays out of the Explorer.
suite('sandbox placeholders', () => {
  let restore: () => Promise<void>;
  let workspace: string;
  suiteSetup(async () => {
    restore = await withSettings({ sandbox: 'workspace-write', sandboxNetwork: false, approvalPolicy: 'never' });
    workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    await (await getApi()).connect('bundled');
  });
  suiteTeardown(async () => {
    await restore();
    rmSync(join(workspace, 'stub-test-stop'), { force: true });
  });

  test('a missing .codex is stubbed while a command runs, hidden from the Explorer, and gone afterwards', async () => {
    // An earlier suite's sandboxed command may have left a sandbox waiting for its next start, which
    // holds its placeholders for at most 5 s (docs/sandbox.md): the workspace must be clean after that.
    await waitFor('the test workspace without .codex', () => !existsSync(join(workspace, '.codex')), 15_000);
    const api = await getApi();
    const t = await runCommand(api, 'while [ ! -e stub-test-stop ]; do sleep 0.05; done');
    const stub = join(workspace, '.codex');
    await waitFor('the .codex placeholder', () => existsSync(stub) && existsSync(`${stub}.exec-bridge-stub`));
    // What files.exclude hides, as VS Code's own file search sees it: the marker, our claims, and
    // (through the `when` clause on the marker) the stub folder with anything in it.
    assert.deepEqual(await vscode.workspace.findFiles('*.exec-bridge-stub'), []);
    assert.deepEqual(await vscode.workspace.findFiles('.codex/**'), []);
    mkdirSync(join(workspace, 'visible'), { recursive: true });
    writeFileSync(join(workspace, 'visible', 'probe.txt'), 'x');
    assert.equal((await vscode.workspace.findFiles('visible/probe.txt')).length, 1, 'search works at all');
    rmSync(join(workspace, 'visible'), { recursive: true });
    writeFileSync(join(workspace, 'stub-test-stop'), '');
    await t.done;
    await waitFor('the placeholder removed', () => !existsSync(stub) && !existsSync(`${stub}.exec-bridge-stub`));
    t.terminal.dispose();
  });

  // Issue 24 item 1: the .vscode placeholder must not hide the real folder the user makes in it
  // (Configure Tasks, an mcp.json) while a command runs: it shows at once, not when the command ends.
  test('a .vscode the user makes while a command runs is seen by VS Code at once', async () => {
    const dotVscode = join(workspace, '.vscode');
    await waitFor('the test workspace without .vscode', () => !existsSync(dotVscode), 15_000);
    rmSync(join(workspace, 'stub-test-stop'), { force: true });
    const api = await getApi();
    const t = await runCommand(api, 'while [ ! -e stub-test-stop ]; do sleep 0.05; done');
    try {
      await waitFor('the .vscode placeholder', () => existsSync(`${dotVscode}.exec-bridge-stub`));
      assert.ok(explorerHides(workspace, '.vscode'), 'the empty placeholder is out of the Explorer');
      // What "Configure Tasks" does: VS Code's file service writes .vscode/tasks.json (the folder is there).
      await vscode.workspace.fs.writeFile(
        vscode.Uri.file(join(dotVscode, 'tasks.json')),
        Buffer.from('{ "version": "2.0.0", "tasks": [] }\n'),
      );
      const deadline = Date.now() + 5000;
      let found = 0;
      while ((found = (await vscode.workspace.findFiles('.vscode/tasks.json')).length) === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal(found, 1, '.vscode/tasks.json is visible to VS Code (files.exclude no longer hides the folder)');
      assert.ok(!existsSync(`${dotVscode}.exec-bridge-stub`), 'no marker beside the real folder');
      assert.ok(!explorerHides(workspace, '.vscode'), 'files.exclude does not hide it from the Explorer');
      assert.ok(t.exitCode === undefined, 'while the command still runs');
    } finally {
      writeFileSync(join(workspace, 'stub-test-stop'), '');
      await t.done;
      t.terminal.dispose();
      rmSync(join(workspace, 'stub-test-stop'), { force: true });
    }
    await waitFor(
      'our claim gone from the user\u2019s .vscode',
      () => !readdirSync(dotVscode).some((n) => n.startsWith('.exec-bridge-claim-')),
    );
    assert.deepEqual(readdirSync(dotVscode), ['tasks.json']);
    // Cleanup for the next tests. Twice in CI (1.139.1) something was made in it between the look
    // above and the removal (ENOTEMPTY), after the claim fix too: say what, then remove it with
    // Node's retries (bounded: ~11 s in all) rather than fail a test whose assertions all held.
    try {
      rmSync(dotVscode, { recursive: true, force: true });
    } catch (e) {
      console.log(
        `stubs: removing .vscode failed (${(e as NodeJS.ErrnoException).code}); it held ${JSON.stringify(readdirSync(dotVscode))}`,
      );
      rmSync(dotVscode, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    }
  });
});
