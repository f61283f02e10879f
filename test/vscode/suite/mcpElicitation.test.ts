// A server's elicitation request in a real VS Code: server-everything's trigger-elicitation-request
// (offered only because our client announces elicitation) asks through a quick input; dismissing it
// declines, and the tool's result says so.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, withSettings } from './helpers';
import { callToolAnswering, startWithTool } from './mcpProcs';

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
    await startWithTool('asker', 'trigger-elicitation-request');
    // Escape on the quick input, as a user would (the call ends once it is dismissed).
    const call = callToolAnswering<{ content: { text: string }[] }>(
      'asker',
      'trigger-elicitation-request',
      {},
      'workbench.action.closeQuickOpen',
    );
    const result = await call;
    assert.match(result.content.map((c) => c.text).join('\n'), /declined/);
  });
});
