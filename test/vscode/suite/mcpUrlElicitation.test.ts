// URL-mode elicitation in a real VS Code, both ways a server asks (server-everything's
// trigger-url-elicitation, offered only because our client announces URL mode): the "URL
// elicitation required" error (-32042) of a Call Tool offers the prerequisite page, then to call
// again; the retried call's own elicitation/create (URL mode) offers its page; each is answered as a
// user would (Enter on Open / Call Again), and the tool's result says the page was accepted.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, withSettings } from './helpers';
import { callToolAnswering, startWithTool } from './mcpProcs';

suite('MCP URL elicitation in VS Code', () => {
  let restore: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    await getApi();
    const root = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'node_modules', '@modelcontextprotocol');
    restore = await withSettings({
      'mcp.servers': {
        linker: { command: process.execPath, args: [join(root, 'server-everything', 'dist', 'index.js'), 'stdio'], autoStart: false },
      },
    });
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'linker').then(undefined, () => undefined);
    await restore?.();
  });

  test('a -32042 error offers the page and a second call; the second call asks for its own page', async function () {
    this.timeout(60_000);
    await startWithTool('linker', 'trigger-url-elicitation');
    // Enter on each pick as it comes (Open the prerequisite, Call Again, Open the page).
    const call = callToolAnswering<{ content: { text: string }[] } | undefined>(
      'linker',
      'trigger-url-elicitation',
      { url: 'https://example.com/sign-in', message: 'Sign in to Example', errorPath: true },
      'workbench.action.acceptSelectedQuickOpenItem',
      150,
    );
    const result = await call;
    assert.ok(result, 'the call ran again');
    assert.match(result.content.map((c) => c.text).join('\n'), /accept/);
  });
});
