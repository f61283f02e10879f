import * as assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, runAnswering, waitFor, withSettings } from './helpers';

/**
 * Issue 24 item 2: VS Code's `get()` returns a workspace's list alone once the workspace has one,
 * so what the user adds to their own settings afterwards stayed hidden there. Our list settings
 * (`execBridge.sandboxNetworkAllow`, `execBridge.executors`) count every scope's list together.
 */
suite('list settings across the user and workspace scopes', () => {
  const c = () => vscode.workspace.getConfiguration('execBridge');
  let restore: () => Promise<void>;
  let userBefore: { allow: unknown; executors: unknown };
  const servers: Server[] = [];
  const serve = async (body: string) => {
    const s = createServer((_q, r) => r.end(`${body}\n`));
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as AddressInfo).port;
  };
  let workspacePort = 0;
  let userPort = 0;

  suiteSetup(async function () {
    if (process.platform !== 'linux') this.skip();
    workspacePort = await serve('workspace-body');
    userPort = await serve('user-body');
    userBefore = { allow: c().inspect('sandboxNetworkAllow')?.globalValue, executors: c().inspect('executors')?.globalValue };
    restore = await withSettings({
      sandbox: 'workspace-write',
      sandboxNetwork: false,
      sandboxNetworkAllow: [`127.0.0.1:${workspacePort}`],
      executors: [{ name: 'from-workspace', command: ['true'] }],
      approvalPolicy: 'ask',
    });
    await (await getApi()).connect('bundled');
  });
  suiteTeardown(async () => {
    await c().update('sandboxNetworkAllow', userBefore?.allow, vscode.ConfigurationTarget.Global);
    await c().update('executors', userBefore?.executors, vscode.ConfigurationTarget.Global);
    await restore?.();
    for (const s of servers) s.close();
  });

  test('a host the user allows after the workspace has its own list is reached through the managed network', async () => {
    const api = await getApi();
    const before = await runAnswering(api, `curl -sS -f http://127.0.0.1:${userPort}/`, 'Deny');
    assert.equal(before.asked.length, 1, 'not allowed yet: the proxy refuses it and the approval asks');
    assert.doesNotMatch(before.text, /user-body/);
    before.t.terminal.dispose();

    await c().update('sandboxNetworkAllow', [`127.0.0.1:${userPort}`], vscode.ConfigurationTarget.Global);
    assert.deepEqual(
      c().get('sandboxNetworkAllow'),
      [`127.0.0.1:${workspacePort}`],
      "VS Code's get() still shows the workspace list alone",
    );

    const after = await runAnswering(api, `curl -sS -f http://127.0.0.1:${userPort}/`, 'Deny');
    assert.equal(after.asked.length, 0, 'the user setting allows it now');
    assert.match(after.text, /user-body/);
    assert.equal(after.t.exitCode, 0);
    assert.equal(after.t.sandboxed, true);
    after.t.terminal.dispose();

    const workspace = await runAnswering(api, `curl -sS -f http://127.0.0.1:${workspacePort}/`, 'Deny');
    assert.equal(workspace.asked.length, 0, "the workspace's own host stays allowed");
    assert.match(workspace.text, /workspace-body/);
    workspace.t.terminal.dispose();
  });

  test('an executor the user adds after the workspace has its own executors is offered', async () => {
    const api = await getApi();
    await waitFor("the workspace's executor", () => api.executorNames().includes('from-workspace'));
    await c().update('executors', [{ name: 'from-user', command: ['true'] }], vscode.ConfigurationTarget.Global);
    await waitFor("the user's executor beside the workspace's", () => api.executorNames().includes('from-user'));
    assert.deepEqual(
      api.executorNames().filter((n) => n.startsWith('from-')),
      ['from-user', 'from-workspace'],
    );
  });
});
