import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, runCommand, waitFor, withSettings } from './helpers';

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
});
