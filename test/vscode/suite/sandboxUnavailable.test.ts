import * as assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { ApprovalChoice, ExecBridgeApi } from '../../../src/vscode/api';
import { getApi, runAnswering, startExecServer, waitFor, withSettings } from './helpers';

const COMMAND = 'echo "ran ""unsandboxed"';

const run = (api: ExecBridgeApi, choice: ApprovalChoice | undefined) => runAnswering(api, COMMAND, choice);

// An executor whose sandbox cannot work (its bwrap does not exist): the command never runs
// sandboxed, and the user is asked, exactly as after a denial, whether to run it without.
suite('an executor that cannot sandbox', () => {
  let server: Awaited<ReturnType<typeof startExecServer>>;
  let restore: () => Promise<void>;

  suiteSetup(async () => {
    server = await startExecServer(['--bwrap-path', join(tmpdir(), 'exec-bridge-no-bwrap-here')]);
    restore = await withSettings({
      executors: [{ name: 'nosandbox', url: server.url }],
      sandbox: 'workspace-write',
      sandboxNetwork: false,
      approvalPolicy: 'ask',
    });
    const api = await getApi();
    await waitFor('the executor in the list', () => api.executorNames().includes('nosandbox'));
    await vscode.commands.executeCommand('execBridge.selectExecutor', 'nosandbox');
    assert.equal(api.activeExecutor, 'nosandbox');
  });

  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.selectExecutor', 'bundled');
    await restore?.();
    server?.stop();
  });

  test('the command is not run sandboxed; approved, it runs without the sandbox', async () => {
    const api = await getApi();
    const { t, asked, text } = await run(api, 'Run Without Sandbox');
    assert.equal(asked.length, 1, 'one approval request');
    assert.equal(asked[0]!.sandboxLabel, 'workspace-write, network off');
    assert.match(text, /cannot run this command in the sandbox \(workspace-write, network off\): .*bubblewrap/);
    assert.match(text, /approved once — running WITHOUT the sandbox/);
    assert.match(text, /^ran unsandboxed\r$/m);
    assert.equal(t.exitCode, 0);
    assert.equal(t.sandboxed, false);
    t.terminal.dispose();
  });

  test('denied, nothing runs', async () => {
    const api = await getApi();
    const { t, asked, text } = await run(api, 'Deny');
    assert.equal(asked.length, 1);
    assert.match(text, /denied/);
    assert.doesNotMatch(text, /^ran unsandboxed/m);
    assert.equal(t.exitCode, undefined);
    t.terminal.dispose();
  });
});
