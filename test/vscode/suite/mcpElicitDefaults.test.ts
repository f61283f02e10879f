// Elicitation defaults in a real VS Code: a form whose enum, boolean and oneOf defaults are not their
// first option, and an optional multi-select with minItems (test/helpers/mcpConformanceServer.ts,
// `ask_with_defaults`), answered by pressing Enter on each quick input: every default is taken, and
// the multi-select is left out.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, withSettings } from './helpers';
import { callToolAnswering, startWithTool } from './mcpProcs';

const FIXTURE = join(__dirname, '..', '..', 'helpers', 'mcpConformanceServer.js');

suite('MCP elicitation defaults in VS Code', () => {
  let restore: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    await getApi();
    restore = await withSettings({ 'mcp.servers': { defaults: { command: process.execPath, args: [FIXTURE], autoStart: false } } });
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'defaults').then(undefined, () => undefined);
    await restore?.();
  });

  test('Enter on every field answers with the defaults of every type', async function () {
    this.timeout(60_000);
    const name = 'ask_with_defaults';
    await startWithTool('defaults', name);
    // Enter on each of the four quick inputs, as a user would (the call ends after the last).
    const call = callToolAnswering<{ content: { text: string }[] }>('defaults', name, {}, 'workbench.action.acceptSelectedQuickOpenItem');
    const text = (await call).content.map((c) => c.text).join('\n');
    const content = JSON.parse(/content=(\{.*\})/.exec(text)?.[1] ?? '{}') as Record<string, unknown>;
    assert.match(text, /action=accept/);
    // The optional multi-select (minItems 1) was left empty: left out, not five retries and a decline.
    assert.deepEqual(content, { status: 'pending', verified: false, tier: 'pro' });
  });
});
