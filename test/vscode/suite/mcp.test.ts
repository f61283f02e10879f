// The MCP Servers tree in a real VS Code: a workspace `.vscode/mcp.json` with the three reference
// servers shows them ready with their tools (on the bundled executor); Stop/Start and Call Tool
// work; removing the file leaves no server process behind.
import * as assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi, waitFor } from './helpers';
import { waitForSnapshot } from './mcpProcs';

const TAG = `vscode-mcp-${process.pid}-${Date.now()}`;

/** Live processes carrying our tag in their environment (servers and anything they started). */
function tagged(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${name}/environ`, 'latin1').includes(`MCP_TEST_TAG=${TAG}\0`)) out.push(Number(name));
    } catch {
      // gone or not readable
    }
  }
  return out;
}

suite('MCP servers view', () => {
  let mcpJson: string;
  let scratch: string;

  suiteSetup(async () => {
    await getApi();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'the test workspace has a folder');
    const root = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'node_modules', '@modelcontextprotocol');
    scratch = join(tmpdir(), TAG);
    mkdirSync(scratch, { recursive: true });
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    mcpJson = join(folder, '.vscode', 'mcp.json');
    const env = { MCP_TEST_TAG: TAG };
    writeFileSync(
      mcpJson,
      JSON.stringify(
        {
          servers: {
            memory: {
              type: 'stdio',
              command: process.execPath,
              args: [join(root, 'server-memory', 'dist', 'index.js')],
              env: { ...env, MEMORY_FILE_PATH: join(scratch, 'memory.jsonl') },
              autoStart: true,
            },
            everything: {
              command: process.execPath,
              args: [join(root, 'server-everything', 'dist', 'index.js'), 'stdio'],
              env,
              autoStart: true,
            },
            filesystem: {
              command: process.execPath,
              args: [join(root, 'server-filesystem', 'dist', 'index.js'), '${workspaceFolder}'],
              env,
              autoStart: true,
            },
          },
        },
        null,
        2,
      ),
    );
  });

  suiteTeardown(() => {
    if (mcpJson) rmSync(mcpJson, { force: true });
    // The .vscode it made, if nothing else is in it: later suites start from a workspace without one (stubs.test).
    if (mcpJson) rmdirIfEmpty(dirname(mcpJson));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('the tree shows the three servers ready, with their tools', async () => {
    const snap = await waitForSnapshot(
      'three ready servers',
      (s) => s.servers.length === 3 && s.servers.every((x) => x.state.kind === 'ready'),
      60_000,
    );
    const byLabel = new Map(snap.tree.map((n) => [n.label, n]));
    assert.match(byLabel.get('memory')?.description ?? '', /^Ready \(9 tools\) · bundled/);
    // 16 since the client declares roots and elicitation, form and URL mode (issue 13): the everything
    // server offers tools for them. Sampling is announced only while VS Code has a chat model (the
    // test model, while an earlier suite had it registered when the server started): then
    // trigger-sampling-request too, and only that one more.
    const everything = byLabel.get('everything');
    const sampling = everything?.children.find((c) => c.label === 'Tools')?.children.some((t) => t.label === 'trigger-sampling-request');
    assert.match(everything?.description ?? '', sampling ? /^Ready \(17 tools\)/ : /^Ready \(16 tools\)/);
    assert.match(byLabel.get('filesystem')?.description ?? '', /^Ready \(14 tools\)/);
    const tools = byLabel.get('memory')?.children.find((c) => c.label === 'Tools');
    assert.ok(tools, 'memory has a Tools group');
    assert.ok(tools.children.some((t) => t.label === 'read_graph' && /;canCall;/.test(t.contextValue)));
    assert.match(byLabel.get('memory')?.contextValue ?? '', /;canStop;/);
    assert.match(byLabel.get('memory')?.contextValue ?? '', /;canRestart;/);
    assert.doesNotMatch(byLabel.get('memory')?.contextValue ?? '', /;canStart;/);
    assert.ok(byLabel.get('everything')?.children.some((c) => c.label === 'Prompts' && c.description === '4'));
    assert.equal(tagged().length, 6, 'three servers, each under its reaper wrapper');
  });

  test('Call Tool returns the result and opens it in an editor', async () => {
    const node = { kind: 'tool', id: 'mcp:memory/tools/read_graph', server: 'memory', name: 'read_graph' };
    const result = await vscode.commands.executeCommand<{ content: { text: string }[] }>('execBridge.mcp.callTool', node, {});
    assert.match(result.content[0]?.text ?? '', /"entities"/);
    const editor = await waitFor('the result editor', () => vscode.window.activeTextEditor);
    assert.match(editor.document.getText(), /"entities"/);
    // Read-only, named after server and tool, and closing it asks nothing (never "Untitled-1", never dirty).
    assert.equal(editor.document.isUntitled, false);
    assert.equal(editor.document.uri.scheme, 'execbridge-mcp-result');
    assert.equal(editor.document.uri.path, '/memory · read_graph.json');
    assert.equal(editor.document.languageId, 'json');
    assert.equal(editor.document.isDirty, false);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await waitFor('the result editor closed', () => !vscode.window.visibleTextEditors.some((e) => e.document === editor.document));
  });

  test('Stop and Start work from the tree', async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', { kind: 'server', id: 'mcp:memory', server: 'memory' });
    let snap = await waitForSnapshot('memory stopped', (s) => s.servers.find((x) => x.name === 'memory')?.state.kind === 'stopped', 15_000);
    assert.match(snap.tree.find((n) => n.label === 'memory')?.contextValue ?? '', /;canStart;/);
    await waitFor('memory processes gone', () => tagged().length === 4, 10_000);
    await vscode.commands.executeCommand('execBridge.mcp.start', { kind: 'server', id: 'mcp:memory', server: 'memory' });
    snap = await waitForSnapshot('memory ready again', (s) => s.servers.find((x) => x.name === 'memory')?.state.kind === 'ready', 30_000);
    assert.equal(snap.servers.find((x) => x.name === 'memory')?.tools.length, 9);
  });

  test('removing mcp.json drains every server: no process is left', async () => {
    rmSync(mcpJson, { force: true });
    await waitForSnapshot('no servers', (s) => s.servers.length === 0, 15_000);
    await waitFor(`no tagged process (left: ${tagged().join(', ')})`, () => tagged().length === 0, 15_000);
  });
});

function rmdirIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (another suite's files, a user's), or gone already
  }
}
