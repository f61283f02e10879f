import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setup, suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { ApprovalChoice, ExecBridgeApi } from '../../../src/vscode/api';
import { getApi, plain, runAnswering, runCommand, withSettings } from './helpers';

const FILE = 'approval-test.txt';
// Writing into the workspace is denied under read-only; the marker only appears when the write worked.
const COMMAND = `printf 'retried %s\\n' OK > ${FILE} && cat ${FILE}`;

/** Runs COMMAND; answers the approval popup (if one comes) with `choice`. */
const runDenied = (api: ExecBridgeApi, choice: ApprovalChoice | undefined) => runAnswering(api, COMMAND, choice);

suite('sandbox approvals', () => {
  let restore: () => Promise<void>;
  let workspace: string;
  suiteSetup(async () => {
    restore = await withSettings({ sandbox: 'read-only', sandboxNetwork: false, approvalPolicy: 'ask' });
    workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    await (await getApi()).connect('bundled');
  });
  suiteTeardown(async () => {
    await restore();
    rmSync(join(workspace, FILE), { force: true });
  });
  setup(() => rmSync(join(workspace, FILE), { force: true }));

  test('a sandbox-denied command raises the approval; the approved retry succeeds in the same terminal', async () => {
    const api = await getApi();
    const { t, asked, text } = await runDenied(api, 'Run Without Sandbox');
    assert.equal(asked.length, 1, 'one approval request');
    assert.equal(asked[0]!.commandLine, COMMAND);
    assert.equal(asked[0]!.sandboxLabel, 'read-only, network off');
    assert.equal(asked[0]!.kind, 'denied');
    assert.match(asked[0]!.message, /already ran once in the sandbox/, 'the notification says the blocked attempt ran');
    assert.match(text, /Read-only file system/, "the denied attempt's own output is shown");
    assert.match(text, /sandbox \(read-only, network off\) blocked this command/);
    assert.match(text, /approved once — re-running WITHOUT the sandbox/);
    assert.match(text, /^retried OK\r$/m);
    assert.match(text, /\[exit code 0 — press any key to close\]$/);
    assert.equal(t.exitCode, 0);
    assert.equal(t.sandboxed, false, 'the retry is marked unsandboxed');
    assert.equal(readFileSync(join(workspace, FILE), 'utf8'), 'retried OK\n');
    t.terminal.dispose();
  });

  test('Deny does not re-run', async () => {
    const api = await getApi();
    const { t, asked, text } = await runDenied(api, 'Deny');
    assert.equal(asked.length, 1);
    assert.match(text, /not re-run: denied/);
    assert.doesNotMatch(text, /^retried OK/m);
    assert.notEqual(t.exitCode, 0);
    assert.equal(t.sandboxed, true);
    assert.equal(existsSync(join(workspace, FILE)), false);
    t.terminal.dispose();
  });

  test('Always Allow This Command: the same command then starts without the sandbox, once', async () => {
    const api = await getApi();
    const first = await runDenied(api, 'Always Allow This Command');
    assert.equal(first.asked.length, 1);
    assert.equal(first.t.exitCode, 0);
    first.t.terminal.dispose();
    rmSync(join(workspace, FILE), { force: true });
    const second = await runDenied(api, undefined);
    assert.equal(second.asked.length, 0, 'not asked again');
    assert.match(second.text, /always allowed in this workspace — running WITHOUT the sandbox/);
    assert.doesNotMatch(second.text, /Read-only file system|blocked this command/, 'no sandboxed attempt first');
    assert.equal(second.t.exitCode, 0);
    assert.equal(second.t.sandboxed, false);
    second.t.terminal.dispose();

    // "Forget Always-Allowed Commands" undoes it: the next denial asks again.
    assert.equal(await vscode.commands.executeCommand('execBridge.forgetAlwaysAllowed'), 1);
    rmSync(join(workspace, FILE), { force: true });
    const third = await runDenied(api, 'Deny');
    assert.equal(third.asked.length, 1, 'asked again after forgetting');
    third.t.terminal.dispose();
  });

  test('approvalPolicy "never" reports the denial and asks nothing', async () => {
    const undo = await withSettings({ approvalPolicy: 'never' });
    try {
      const api = await getApi();
      const { t, asked, text } = await runDenied(api, undefined);
      assert.equal(asked.length, 0);
      assert.match(text, /blocked this command/);
      assert.match(text, /approval policy: never/);
      assert.notEqual(t.exitCode, 0);
      t.terminal.dispose();
    } finally {
      await undo();
    }
  });

  test('approvalPolicy "askBeforeRun" asks before the command runs: Deny runs nothing, Run in Sandbox runs it sandboxed', async () => {
    const undo = await withSettings({ approvalPolicy: 'askBeforeRun' });
    try {
      const api = await getApi();
      const denied = await runDenied(api, 'Deny');
      assert.deepEqual(
        denied.asked.map((a) => a.kind),
        ['beforeRun'],
      );
      assert.match(denied.text, /not run: denied/);
      assert.doesNotMatch(denied.text, /Read-only file system/, 'nothing ran');
      assert.equal(existsSync(join(workspace, FILE)), false);
      denied.t.terminal.dispose();
      const asked: string[] = [];
      const sub = api.onDidRequestApproval((p) => {
        asked.push(p.kind);
        p.respond(p.kind === 'beforeRun' ? 'Run in Sandbox' : 'Deny');
      });
      try {
        const t = await runCommand(api, COMMAND);
        await t.done;
        assert.deepEqual(asked, ['beforeRun', 'denied']);
        assert.match(plain(t.text()), /Read-only file system/, 'ran in the sandbox');
        t.terminal.dispose();
      } finally {
        sub.dispose();
      }
    } finally {
      await undo();
    }
  });
});
