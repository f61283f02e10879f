// Sandboxed MCP servers in a real VS Code (issue 23 item 2), on the bundled executor with the real
// sandbox (bubblewrap, the managed network's proxy) and the fixture server of the integration tests
// (test/helpers/mcpSandboxServer.ts: `fetch` through HTTP_PROXY, `write` a file):
// - a `.vscode/mcp.json` server whose allow-list lacks the loopback port it fetches: the call is
//   refused, the tree lists `blocked 127.0.0.1:PORT`, the notification offers "Allow 127.0.0.1:PORT
//   for This Server"; choosing it writes the port into the file (its comment kept), the server
//   restarts, and the same call gets through;
// - an `execBridge.mcp.servers` server with `workspace-write` writing outside its folder: refused,
//   listed, "Allow Writing DIR" offered; choosing it writes `writable` into the workspace settings,
//   the server restarts, and the same write lands.
// The notification is VS Code's `window.showWarningMessage`, replaced for the suite (as the SSH suite
// does) by one that records what the product shows and answers with the button the user would
// click, once the test has looked at the tree: only a button the product offers can be chosen.
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { homedir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse } from 'jsonc-parser';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, waitFor, withSettings } from './helpers';

const FIXTURE = join(__dirname, '..', '..', 'helpers', 'mcpSandboxServer.js');
const TAG = `eb-mcp-sandbox-${process.pid}-${Date.now()}`;

interface TreeNode {
  label: string;
  description?: string;
  contextValue: string;
  children: TreeNode[];
}
interface Snapshot {
  tree: TreeNode[];
  servers: { name: string; state: { kind: string }; tools: string[] }[];
}
interface McpJson {
  servers?: Record<string, { executorSandbox?: { networkAllow?: string[] } }>;
}
interface ToolResult {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

/** `s` as a literal in a RegExp. */
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const snapshot = () => vscode.commands.executeCommand<Snapshot>('execBridge.mcp.snapshot');

async function waitForSnapshot(what: string, check: (s: Snapshot) => boolean, timeoutMs = 30_000): Promise<Snapshot> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await snapshot();
    if (check(s)) return s;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; tree: ${JSON.stringify(s.tree.map((n) => [n.label, n.description]))}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The server's row in the tree (undefined while it is not listed). */
const row = (s: Snapshot, name: string) => s.tree.find((n) => n.label === name);

/** Ready with `tool`, and a run with nothing blocked yet (the tree's description says `sandboxed`, no count). */
const freshAndReady = (name: string, tool: string) => (s: Snapshot) =>
  s.servers.some((x) => x.name === name && x.state.kind === 'ready' && x.tools.includes(tool)) &&
  /\bsandboxed\b/.test(row(s, name)?.description ?? '') &&
  !/blocked/.test(row(s, name)?.description ?? '');

/** Calls a tool the way the tree's Call Tool does (its result editor opens; the result is returned). */
async function callTool(server: string, name: string, args: Record<string, unknown>): Promise<string> {
  const node = { kind: 'tool', id: `mcp:${server}/tools/${name}`, server, name };
  const r = await vscode.commands.executeCommand<ToolResult | undefined>('execBridge.mcp.callTool', node, args);
  assert.ok(r, `${server} · ${name} gave no result`);
  return r.content.map((c) => c.text ?? '').join('\n');
}

/** A notification the product showed for a sandboxed server, waiting for the test to pick its answer. */
interface Shown {
  message: string;
  items: string[];
  choose(item: string | undefined): void;
}

function listen(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_q, r) => r.end(`${body}\n`));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

suite('sandboxed MCP servers in VS Code', () => {
  type Win = typeof vscode.window;
  const window = vscode.window as { -readonly [K in keyof Win]: Win[K] };
  const originalWarning = window.showWarningMessage;
  let shown: Shown[] = [];
  let folder: string;
  let mcpJson: string;
  let mcpJsonBefore: string | undefined;
  let allowed: { server: Server; port: number };
  let other: { server: Server; port: number };
  let restoreSettings: (() => Promise<void>) | undefined;
  const outside = join(homedir(), TAG);

  suiteSetup(async function () {
    if (process.platform !== 'linux') this.skip();
    await (await getApi()).connect('bundled');
    folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
    assert.ok(folder, 'the test workspace has a folder');
    assert.ok(!outside.startsWith(`${folder}/`), `${outside} must be outside the workspace`);
    mcpJson = join(folder, '.vscode', 'mcp.json');
    mcpJsonBefore = existsSync(mcpJson) ? readFileSync(mcpJson, 'utf8') : undefined;
    allowed = await listen('allowed-body');
    other = await listen('other-body');
    // Our notifications for sandboxed servers are held for the test; any other warning is VS Code's as usual.
    window.showWarningMessage = ((message: string, ...rest: unknown[]) => {
      if (!/for MCP server "/.test(message)) return (originalWarning as (...a: unknown[]) => Thenable<unknown>)(message, ...rest);
      const items = rest.filter((r): r is string => typeof r === 'string');
      return new Promise<string | undefined>((resolve) => shown.push({ message, items, choose: resolve }));
    }) as Win['showWarningMessage'];
  });

  suiteTeardown(async () => {
    window.showWarningMessage = originalWarning;
    for (const s of shown) s.choose(undefined);
    for (const name of ['sb-fetch', 'sb-write'])
      await vscode.commands.executeCommand('execBridge.mcp.stop', name).then(undefined, () => undefined);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    if (mcpJson) {
      if (mcpJsonBefore !== undefined) writeFileSync(mcpJson, mcpJsonBefore);
      else {
        rmSync(mcpJson, { force: true });
        try {
          rmdirSync(join(folder, '.vscode'));
        } catch {
          // not empty (another suite's files), or gone
        }
      }
    }
    await restoreSettings?.();
    rmSync(outside, { recursive: true, force: true });
    allowed?.server.close();
    other?.server.close();
  });

  test('a host off the allow-list: blocked, listed, "Allow 127.0.0.1:PORT for This Server" writes mcp.json, restarts, and the call works', async function () {
    this.timeout(120_000);
    shown = [];
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    const entry = `127.0.0.1:${allowed.port}`;
    writeFileSync(
      mcpJson,
      [
        '{',
        '  // The fetcher may reach one loopback port (a comment Allow keeps).',
        '  "servers": {',
        '    "sb-fetch": {',
        `      "command": ${JSON.stringify(process.execPath)},`,
        `      "args": [${JSON.stringify(FIXTURE)}],`,
        `      "executorSandbox": { "policy": "workspace-write", "networkAllow": [${JSON.stringify(entry)}] }`,
        '    }',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    await waitForSnapshot('sb-fetch listed', (s) => s.servers.some((x) => x.name === 'sb-fetch'));
    await vscode.commands.executeCommand('execBridge.mcp.start', 'sb-fetch');
    await waitForSnapshot('sb-fetch ready', freshAndReady('sb-fetch', 'fetch'));

    assert.match(await callTool('sb-fetch', 'fetch', { url: `http://127.0.0.1:${allowed.port}/` }), /status 200: allowed-body/);
    assert.equal(shown.length, 0, 'an allowed host is no block');
    const target = `127.0.0.1:${other.port}`;
    assert.match(await callTool('sb-fetch', 'fetch', { url: `http://${target}/` }), /status 403/, 'the proxy refuses it');

    const note = await waitFor('the notification of the block', () => shown[0], 15_000);
    assert.match(note.message, new RegExp(`blocked ${literal(target)} .*for MCP server "sb-fetch"`));
    assert.match(note.message, /workspace-write, network only 127\.0\.0\.1:/, 'it names the sandbox');
    const allow = `Allow ${target} for This Server`;
    assert.deepEqual(note.items, [allow, 'Show Output']);
    // While it is on screen, the tree lists the block under the server, with its inline Allow.
    const snap = await waitForSnapshot(
      'the blocked line',
      (s) => !!row(s, 'sb-fetch')?.children.some((c) => c.label === `blocked ${target}`),
    );
    const blocked = row(snap, 'sb-fetch')!.children.find((c) => c.label === `blocked ${target}`)!;
    assert.match(blocked.contextValue, /^mcpBlocked;host;canAllow;/);
    assert.match(row(snap, 'sb-fetch')?.description ?? '', /sandboxed, 1 blocked/);

    note.choose(allow);
    const written = await waitFor(
      'the port in mcp.json',
      () => {
        const text = readFileSync(mcpJson, 'utf8');
        // Read while it is being written, the file can be empty for a moment: that is not yet.
        const servers = (parse(text) as McpJson | undefined)?.servers;
        const allowList = servers?.['sb-fetch']?.executorSandbox?.networkAllow;
        return allowList?.includes(target) ? { text, allowList } : undefined;
      },
      15_000,
    );
    // Only that port of 127.0.0.1 (docs/mcp.md), added to what was there; the file's comment stays.
    assert.deepEqual(written.allowList, [entry, target]);
    assert.match(written.text, /\/\/ The fetcher may reach one loopback port/);
    await waitForSnapshot('sb-fetch restarted with nothing blocked', freshAndReady('sb-fetch', 'fetch'));
    assert.match(await callTool('sb-fetch', 'fetch', { url: `http://${target}/` }), /status 200: other-body/);
    assert.equal(shown.length, 1, 'nothing more was blocked');
  });

  test('a write outside the workspace: blocked, listed, "Allow Writing DIR" writes the settings entry, restarts, and the write lands', async function () {
    this.timeout(120_000);
    shown = [];
    mkdirSync(outside, { recursive: true });
    const file = join(outside, 'note.txt');
    restoreSettings = await withSettings({
      'mcp.servers': { 'sb-write': { command: process.execPath, args: [FIXTURE], cwd: folder, executorSandbox: 'workspace-write' } },
    });
    await waitForSnapshot('sb-write listed', (s) => s.servers.some((x) => x.name === 'sb-write'));
    await vscode.commands.executeCommand('execBridge.mcp.start', 'sb-write');
    await waitForSnapshot('sb-write ready', freshAndReady('sb-write', 'write'));

    const inside = join(folder, `${TAG}.txt`);
    try {
      assert.match(await callTool('sb-write', 'write', { path: inside }), /^wrote /, 'its workspace folder is writable');
    } finally {
      rmSync(inside, { force: true });
    }
    assert.match(await callTool('sb-write', 'write', { path: file }), /read-only file system|EROFS/i);
    assert.ok(!existsSync(file), 'nothing was written');

    const note = await waitFor('the notification of the block', () => shown[0], 15_000);
    assert.match(note.message, new RegExp(`blocked writing ${literal(file)} for MCP server "sb-write"`));
    const allow = `Allow Writing ${outside}`;
    assert.deepEqual(note.items, [allow, 'Show Output']);
    const snap = await waitForSnapshot(
      'the blocked line',
      (s) => !!row(s, 'sb-write')?.children.some((c) => c.label === `blocked writing ${file}`),
    );
    assert.match(
      row(snap, 'sb-write')!.children.find((c) => c.label === `blocked writing ${file}`)!.contextValue,
      /^mcpBlocked;path;canAllow;/,
    );

    note.choose(allow);
    const inspect = () =>
      vscode.workspace.getConfiguration('execBridge.mcp').inspect<Record<string, { executorSandbox?: unknown }>>('servers')?.workspaceValue;
    const sandbox = await waitFor('writable in the workspace settings', () => {
      const v = inspect()?.['sb-write']?.executorSandbox;
      return v && typeof v === 'object' ? v : undefined;
    });
    assert.deepEqual(sandbox, { policy: 'workspace-write', writable: [outside] });
    await waitForSnapshot('sb-write restarted with nothing blocked', freshAndReady('sb-write', 'write'));
    assert.match(await callTool('sb-write', 'write', { path: file }), new RegExp(`^wrote ${literal(file)}`));
    assert.equal(readFileSync(file, 'utf8'), 'x', 'the write landed');
    assert.equal(shown.length, 1, 'nothing more was blocked');
  });
});
