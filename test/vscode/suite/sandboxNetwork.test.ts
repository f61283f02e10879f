import * as assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { allowHostChoice } from '../../../src/vscode/api';
import { getApi, runAnswering, withSettings } from './helpers';

/**
 * The managed network in real VS Code: with `execBridge.sandboxNetworkAllow` listing one of two
 * loopback HTTP servers, a command fetching from the other is blocked by the executor's proxy; the
 * notification offers "Allow 127.0.0.1 for this workspace", which adds it to the workspace setting
 * and re-runs the command in the sandbox, where it now succeeds.
 */
suite('managed network approvals', () => {
  let restore: () => Promise<void>;
  let allowed: Server;
  let other: Server;
  let allowedPort = 0;
  let otherPort = 0;

  suiteSetup(async function () {
    if (process.platform !== 'linux') this.skip();
    const listen = async (s: Server) => {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return (s.address() as AddressInfo).port;
    };
    allowed = createServer((_q, r) => r.end('allowed-body\n'));
    other = createServer((_q, r) => r.end('other-body\n'));
    allowedPort = await listen(allowed);
    otherPort = await listen(other);
    restore = await withSettings({
      sandbox: 'workspace-write',
      sandboxNetwork: false,
      sandboxNetworkAllow: [`127.0.0.1:${allowedPort}`],
      approvalPolicy: 'ask',
    });
    await (await getApi()).connect('bundled');
  });
  suiteTeardown(async () => {
    await restore?.();
    allowed?.close();
    other?.close();
  });

  test('the allowed server is reached; the other is blocked, named, allowed for the workspace and retried in the sandbox', async () => {
    const api = await getApi();
    const ok = await runAnswering(api, `curl -sS -f http://127.0.0.1:${allowedPort}/`, undefined);
    assert.equal(ok.asked.length, 0);
    assert.match(ok.text, /allowed-body/);
    assert.equal(ok.t.exitCode, 0);
    ok.t.terminal.dispose();

    const { t, asked, text } = await runAnswering(api, `curl -sS -f http://127.0.0.1:${otherPort}/`, allowHostChoice('127.0.0.1'));
    assert.equal(asked.length, 1, 'one approval request');
    assert.equal(asked[0]!.deniedHost, '127.0.0.1');
    assert.equal(asked[0]!.choices[0], 'Allow 127.0.0.1 for this workspace');
    assert.match(asked[0]!.message, /blocked 127\.0\.0\.1 for/);
    assert.match(text, /allowed 127\.0\.0\.1 for this workspace/);
    assert.match(text, /re-running in the sandbox with 127\.0\.0\.1 allowed/);
    assert.match(text, /other-body/);
    assert.doesNotMatch(text, /WITHOUT the sandbox/);
    assert.equal(t.exitCode, 0);
    assert.equal(t.sandboxed, true, 'the retry ran in the sandbox');
    const value = vscode.workspace.getConfiguration('execBridge').inspect<string[]>('sandboxNetworkAllow')?.workspaceValue;
    assert.deepEqual(value, [`127.0.0.1:${allowedPort}`, '127.0.0.1'], 'listed in the workspace setting (removable there)');
    t.terminal.dispose();
  });

  // Issue 24 item 2: allowing one host for the workspace takes none of the user's away (the lists
  // of every scope count together, listSettings.test.ts), and copies none into the workspace.
  test('allowing a host for the workspace keeps the hosts of the user setting allowed', async () => {
    const userServer = createServer((_q, r) => r.end('user-body\n'));
    await new Promise<void>((r) => userServer.listen(0, '127.0.0.2', r));
    const userPort = (userServer.address() as AddressInfo).port;
    const c = () => vscode.workspace.getConfiguration('execBridge');
    const before = c().inspect<string[]>('sandboxNetworkAllow');
    try {
      await c().update('sandboxNetworkAllow', undefined, vscode.ConfigurationTarget.Workspace);
      await c().update('sandboxNetworkAllow', [`127.0.0.2:${userPort}`], vscode.ConfigurationTarget.Global);
      const api = await getApi();
      const user = await runAnswering(api, `curl -sS -f http://127.0.0.2:${userPort}/`, 'Deny');
      assert.equal(user.asked.length, 0, 'the user setting allows it');
      assert.match(user.text, /user-body/);
      user.t.terminal.dispose();

      const other = await runAnswering(api, `curl -sS -f http://127.0.0.1:${otherPort}/`, allowHostChoice('127.0.0.1'));
      assert.equal(other.asked.length, 1);
      assert.match(other.text, /other-body/);
      // Where it went, in the terminal (and the log).
      assert.match(
        other.text,
        new RegExp(
          `allowed 127\\.0\\.0\\.1 for this workspace \\(added to execBridge\\.sandboxNetworkAllow in the workspace settings \\(your user setting's 127\\.0\\.0\\.2:${userPort} stay allowed too`,
        ),
      );
      other.t.terminal.dispose();
      assert.deepEqual(c().inspect<string[]>('sandboxNetworkAllow')?.workspaceValue, ['127.0.0.1']);
      assert.deepEqual(c().inspect<string[]>('sandboxNetworkAllow')?.globalValue, [`127.0.0.2:${userPort}`], 'the user setting untouched');

      const again = await runAnswering(api, `curl -sS -f http://127.0.0.2:${userPort}/`, 'Deny');
      assert.equal(again.asked.length, 0, "the user's host is still allowed");
      assert.match(again.text, /user-body/);
      assert.equal(again.t.exitCode, 0);
      again.t.terminal.dispose();
    } finally {
      await c().update('sandboxNetworkAllow', before?.globalValue, vscode.ConfigurationTarget.Global);
      await c().update('sandboxNetworkAllow', before?.workspaceValue, vscode.ConfigurationTarget.Workspace);
      userServer.close();
    }
  });
});
