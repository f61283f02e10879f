// A server's elicitation request in a real VS Code: server-everything's trigger-elicitation-request
// (offered only because our client announces elicitation) asks through a quick input; dismissing it
// declines, and the tool's result says so.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, withSettings } from './helpers';

interface Snapshot {
  servers: { name: string; state: { kind: string }; tools: string[] }[];
}
const snapshot = () => vscode.commands.executeCommand<Snapshot>('execBridge.mcp.snapshot');

suite('MCP elicitation in VS Code', () => {
  let restore: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    await getApi();
    const root = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'node_modules', '@modelcontextprotocol');
    restore = await withSettings({
      'mcp.servers': {
        asker: { command: process.execPath, args: [join(root, 'server-everything', 'dist', 'index.js'), 'stdio'], autoStart: false },
      },
    });
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'asker').then(undefined, () => undefined);
    await restore?.();
  });

  test('the request shows a quick input; dismissing it declines', async function () {
    this.timeout(60_000);
    const deadline = Date.now() + 30_000;
    while (!(await snapshot()).servers.some((s) => s.name === 'asker') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    await vscode.commands.executeCommand('execBridge.mcp.start', 'asker');
    while (!(await snapshot()).servers.find((s) => s.name === 'asker')?.tools.includes('trigger-elicitation-request')) {
      assert.ok(
        Date.now() < deadline,
        `no elicitation tool: ${JSON.stringify((await snapshot()).servers.find((s) => s.name === 'asker'))}`,
      );
      await new Promise((r) => setTimeout(r, 50));
    }
    const node = { kind: 'tool', id: 'mcp:asker/tools/trigger-elicitation-request', server: 'asker', name: 'trigger-elicitation-request' };
    let done = false;
    const call = Promise.resolve(
      vscode.commands.executeCommand<{ content: { text: string }[] }>('execBridge.mcp.callTool', node, {}),
    ).finally(() => (done = true));
    // Escape on the quick input, as a user would (bounded; the call ends once it is dismissed).
    for (let i = 0; i < 100 && !done; i++) {
      await new Promise((r) => setTimeout(r, 200));
      if (!done) await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    }
    const result = await call;
    assert.match(result.content.map((c) => c.text).join('\n'), /declined/);
  });
});
