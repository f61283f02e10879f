// A tool of ours invoked the way chat invokes it: vscode.lm.invokeTool on the tool VS Code registered
// for our server (VS Code 1.101+, where our servers are in its MCP list). The answer comes from the
// server process on the executor, a cancelled invocation reaches the server as
// notifications/cancelled, and progress notifications pass without breaking the call. The probe's
// tools are annotated read-only: outside a chat request VS Code confirms any other MCP tool in a
// modal dialog that no setting skips (chat.tools.global.autoApprove applies to chat requests only).
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, waitFor, withSettings } from './helpers';
import { ancestors, processes, providerApiExpected, startThroughVsCode, waitForSnapshot } from './mcpProcs';

const PROBE = join(__dirname, '..', '..', 'helpers', 'mcpProbeServer.js');

interface ProbeEvent {
  pid: number;
  event: string;
  name?: string;
  id?: string | number;
  progressToken?: string | number | null;
  requestId?: string | number;
  reason?: string | null;
  wasHeld?: boolean;
}

function textOf(result: vscode.LanguageModelToolResult): string {
  return result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : JSON.stringify(p))).join('\n');
}

suite('MCP tools invoked through VS Code (vscode.lm.invokeTool)', () => {
  let restore: (() => Promise<void>) | undefined;
  let dir: string;
  let logFile: string;
  const events = (): ProbeEvent[] => {
    try {
      return readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as ProbeEvent);
    } catch {
      return [];
    }
  };

  suiteSetup(async () => {
    await getApi();
    dir = mkdtempSync(join(tmpdir(), 'exec-bridge-probe-'));
    logFile = join(dir, 'events.jsonl');
    restore = await withSettings({
      'mcp.servers': { probe: { command: process.execPath, args: [PROBE], env: { MCP_PROBE_LOG: logFile }, autoStart: false } },
    });
    await waitForSnapshot('the probe from settings', (s) => s.servers.some((x) => x.name === 'probe'));
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'probe').then(undefined, () => undefined);
    await restore?.();
    rmSync(dir, { recursive: true, force: true });
  });

  if (!providerApiExpected) {
    test(`VS Code ${vscode.version}: our servers are not in its MCP list, so vscode.lm.tools has none of their tools`, async function () {
      this.timeout(30_000);
      await vscode.commands.executeCommand('execBridge.mcp.start', 'probe');
      await waitForSnapshot('probe ready in our tree', (s) => s.servers.find((x) => x.name === 'probe')?.tools.includes('whoami') === true);
      assert.equal(typeof vscode.lm.invokeTool, 'function');
      assert.ok(!vscode.lm.tools.some((t) => /whoami/.test(t.name)), vscode.lm.tools.map((t) => t.name).join(', '));
    });
    return;
  }

  /** VS Code's name for the probe's `tool` (e.g. `mcp_probe_whoami`), once VS Code lists it. */
  const toolName = (tool: string) =>
    waitFor(
      `the probe's ${tool} in vscode.lm.tools (${vscode.lm.tools.map((t) => t.name).join(', ')})`,
      () => vscode.lm.tools.find((t) => t.name.endsWith(tool) && /probe/i.test(t.name))?.name,
      20_000,
    );

  test('the answer comes from the server process on the executor', async function () {
    this.timeout(60_000);
    await startThroughVsCode('probe', 'probe · bundled');
    const name = await toolName('whoami');
    const result = await vscode.lm.invokeTool(
      name,
      { input: {}, toolInvocationToken: undefined },
      new vscode.CancellationTokenSource().token,
    );
    const pid = Number(/pid (\d+)/.exec(textOf(result))?.[1]);
    assert.ok(pid > 0, `a pid in ${textOf(result)}`);
    const procs = processes();
    const server = procs.find((p) => p.pid === pid);
    assert.ok(server && server.env.includes(`MCP_PROBE_LOG=${logFile}\0`), 'the pid is our probe');
    const chain = ancestors(pid, procs);
    const execServer = (await getApi()).bundledServerPid();
    assert.ok(
      execServer !== undefined && chain.some((p) => p.pid === execServer),
      `under the bundled exec-server (${execServer}): ${chain.map((p) => `${p.pid} ${p.cmd.slice(0, 80)}`).join(' <- ')}`,
    );
    assert.ok(!chain.some((p) => p.cmd.includes('mcp-proxy')), "not under VS Code's proxy");
    assert.deepEqual(
      events()
        .filter((e) => e.event === 'call')
        .map((e) => [e.name, e.pid]),
      [['whoami', pid]],
    );
  });

  test('progress notifications on the way do not break the call', async function () {
    this.timeout(30_000);
    const name = await toolName('slow');
    const result = await vscode.lm.invokeTool(
      name,
      { input: { steps: 5 }, toolInvocationToken: undefined },
      new vscode.CancellationTokenSource().token,
    );
    assert.equal(textOf(result), 'done after 5 steps (progress token present)');
    const call = events()
      .filter((e) => e.event === 'call' && e.name === 'slow')
      .at(-1);
    assert.notEqual(call?.progressToken ?? null, null, 'VS Code asked for progress and the server got a token');
  });

  test('a tool that is not read-only runs too, after VS Code confirms it (the extension-test workbench answers yes itself)', async function () {
    this.timeout(30_000);
    const name = await toolName('touch');
    const before = events().length;
    // Outside a chat request (no toolInvocationToken) VS Code asks in a modal confirm dialog that no
    // setting skips (chat.tools.global.autoApprove covers chat requests); in extension tests its
    // dialog service answers "confirmed" without showing anything, so this checks the call only.
    const result = await vscode.lm.invokeTool(
      name,
      { input: {}, toolInvocationToken: undefined },
      new vscode.CancellationTokenSource().token,
    );
    assert.equal(textOf(result), 'touched');
    assert.deepEqual(
      events()
        .slice(before)
        .filter((e) => e.event === 'call')
        .map((e) => e.name),
      ['touch'],
    );
  });

  test('a cancelled invocation reaches the server as notifications/cancelled; the server stays usable', async function () {
    this.timeout(30_000);
    const name = await toolName('slow');
    const before = events().length;
    const cts = new vscode.CancellationTokenSource();
    const invocation = Promise.resolve(
      vscode.lm.invokeTool(name, { input: { steps: 1, hold: true }, toolInvocationToken: undefined }, cts.token),
    );
    invocation.catch(() => undefined);
    const call = await waitFor(
      'the held call at the server',
      () =>
        events()
          .slice(before)
          .find((e) => e.event === 'call' && e.name === 'slow'),
      15_000,
    );
    cts.cancel();
    await assert.rejects(invocation, (e: Error) => /cancel/i.test(`${e.name} ${e.message}`));
    const cancelled = await waitFor(
      'notifications/cancelled at the server',
      () =>
        events()
          .slice(before)
          .find((e) => e.event === 'cancelled'),
      15_000,
    );
    assert.equal(cancelled.requestId, call.id, 'the cancellation names the held call');
    assert.equal(cancelled.wasHeld, true);
    const again = await vscode.lm.invokeTool(
      await toolName('whoami'),
      { input: {}, toolInvocationToken: undefined },
      new vscode.CancellationTokenSource().token,
    );
    assert.match(textOf(again), /^pid \d+$/);
  });
});
