// Our MCP servers in VS Code's own MCP list (VS Code 1.101+): the definition we offer is started by
// VS Code's MCP service, the server runs once on the executor (a descendant of the exec-server, not
// of VS Code's proxy), its tools reach vscode.lm.tools, and a stop on either side ends both. On a
// VS Code without the provider API (1.100) the extension says so and offers nothing.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { startHttpMcpServer, type HttpMcpServer } from '../../helpers/mcpHttpServer';
import { getApi, startExecServer, waitFor, withSettings } from './helpers';
import { ancestors, processes, providerApiExpected, snapshot, waitForSnapshot } from './mcpProcs';

const TAG = `vscode-list-${process.pid}-${Date.now()}`;
const TINY = join(__dirname, '..', '..', 'helpers', 'mcpTinyServer.js');
const hasApi =
  typeof (vscode as unknown as { lm?: { registerMcpServerDefinitionProvider?: unknown } }).lm?.registerMcpServerDefinitionProvider ===
  'function';

/** The server itself (the orphan-reaper wrapper shell carries the tag too). */
const serverProcs = (procs = processes()) => procs.filter((p) => p.env.includes(`MCP_TEST_TAG=${TAG}\0`) && !p.cmd.startsWith('/bin/sh'));
const proxies = (socket: string, procs = processes()) => procs.filter((p) => p.cmd.includes('mcp-proxy') && p.cmd.includes(socket));

suite("MCP servers in VS Code's own MCP list", () => {
  let restore: (() => Promise<void>) | undefined;

  suiteSetup(async () => {
    await getApi();
    restore = await withSettings({
      'mcp.servers': { listed: { command: process.execPath, args: [TINY], env: { MCP_TEST_TAG: TAG }, autoStart: false } },
    });
    await waitForSnapshot('the server from settings', (s) => s.servers.some((x) => x.name === 'listed'));
  });
  suiteTeardown(async () => {
    await restore?.();
  });

  if (!providerApiExpected) {
    test(`VS Code ${vscode.version} has no final provider API: nothing is offered, the tree still has the server`, async () => {
      const s = await snapshot();
      assert.equal(s.vscodeList, undefined);
      assert.ok(s.servers.some((x) => x.name === 'listed'));
    });
    return;
  }

  const id = 'exec-bridge.exec-bridge/listed · bundled';

  test('the definition is offered; VS Code starting it starts ours once, on the executor; its tools reach vscode.lm.tools', async function () {
    this.timeout(60_000);
    assert.ok(hasApi, `VS Code ${vscode.version} should have registerMcpServerDefinitionProvider`);
    const s0 = await waitForSnapshot('our definition', (s) => s.vscodeList?.definitions.some((d) => d.name === 'listed') === true);
    const def = s0.vscodeList!.definitions.find((d) => d.name === 'listed')!;
    assert.equal(def.label, 'listed · bundled');
    assert.ok(def.args.includes('mcp-proxy'));
    assert.ok(!JSON.stringify(def).match(/token/i), 'no secret in the definition');

    // VS Code reads a provider's definitions asynchronously after registration: until it has ours,
    // its start command finds no server with that id. Ask again until it does (bounded).
    for (let i = 0; i < 100 && (await snapshot()).servers.find((x) => x.name === 'listed')?.state.kind !== 'ready'; i++) {
      await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
      await new Promise((r) => setTimeout(r, 200));
    }
    await waitForSnapshot(
      'ready through VS Code',
      (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'ready' && s.vscodeList?.sessions['listed'] === 1,
    );
    const procs = processes();
    const servers = serverProcs(procs);
    assert.equal(servers.length, 1, 'exactly one server process');
    const [proxy] = proxies(s0.vscodeList!.socket, procs);
    assert.ok(proxy, "VS Code's proxy runs");
    const chain = ancestors(servers[0]!.pid, procs);
    const execServer = (await getApi()).bundledServerPid();
    assert.ok(
      execServer !== undefined && chain.some((p) => p.pid === execServer),
      `the server descends from the bundled exec-server (${execServer}): ${chain.map((p) => `${p.pid} ${p.cmd.slice(0, 60)}`).join(' <- ')}`,
    );
    assert.ok(!chain.some((p) => p.pid === proxy.pid), 'not from the proxy VS Code spawned');

    // VS Code registers the server's tools as language model tools (chat's tool picker lists them).
    await waitFor(
      `our echo tool in vscode.lm.tools (${vscode.lm.tools.map((t) => t.name).join(', ')})`,
      () => vscode.lm.tools.some((t) => /echo/.test(t.name) && /listed/i.test(t.name)),
      20_000,
    );
  });

  test("stopping it in VS Code's list stops ours; stopping ours ends VS Code's session", async function () {
    this.timeout(60_000);
    await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
    const s1 = await waitForSnapshot(
      'ready',
      (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'ready' && s.vscodeList?.sessions['listed'] === 1,
    );
    await vscode.commands.executeCommand('workbench.mcp.stopServer', id);
    const stopped = await waitForSnapshot(
      'stopped from VS Code',
      (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'stopped',
    );
    assert.match(stopped.servers.find((x) => x.name === 'listed')!.state.reason ?? '', /VS Code/);
    await waitFor('no server process', () => serverProcs().length === 0, 10_000);

    await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
    await waitForSnapshot(
      'ready again',
      (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'ready' && s.vscodeList?.sessions['listed'] === 1,
    );
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'listed');
    await waitForSnapshot("VS Code's session closed", (s) => s.vscodeList?.sessions['listed'] === 0);
    await waitFor("VS Code's proxy exited", () => proxies(s1.vscodeList!.socket).length === 0, 10_000);
  });

  test("50 start/stop cycles through VS Code's side leave nothing running", async function () {
    this.timeout(180_000);
    const socket = (await snapshot()).vscodeList!.socket;
    for (let i = 0; i < 50; i++) {
      // Right after a session VS Code saw end from our side (the test before), its first start
      // request is sometimes dropped (seen 1 in 3 CI runs, cycle 0 only): ask again, bounded.
      for (let attempt = 1; ; attempt++) {
        await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
        const ready = await waitForSnapshot(
          `ready (cycle ${i})`,
          (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'ready',
          10_000,
        ).then(
          () => true,
          () => false,
        );
        if (ready) break;
        if (attempt === 3) throw new Error(`VS Code did not start the server in cycle ${i} (asked 3 times)`);
      }
      await vscode.commands.executeCommand('workbench.mcp.stopServer', id);
      await waitForSnapshot(`stopped (cycle ${i})`, (s) => s.servers.find((x) => x.name === 'listed')?.state.kind === 'stopped');
    }
    await waitFor('nothing left', () => serverProcs().length === 0 && proxies(socket).length === 0, 10_000);
    assert.equal((await snapshot()).vscodeList?.sessions['listed'], 0);
  });
});

suite("VS Code's MCP list with a stdio server on a remote executor and an http server", () => {
  if (!providerApiExpected) return;
  let restore: (() => Promise<void>) | undefined;
  let exec: Awaited<ReturnType<typeof startExecServer>> | undefined;
  let http: HttpMcpServer | undefined;
  const tag = `${TAG}-far`;

  suiteSetup(async function () {
    this.timeout(30_000);
    await getApi();
    exec = await startExecServer();
    http = await startHttpMcpServer({ token: 'web-token' });
    restore = await withSettings({
      executors: [{ name: 'devbox', url: exec.url }],
      'mcp.servers': {
        far: { command: process.execPath, args: [TINY], executor: 'devbox', env: { MCP_TEST_TAG: tag } },
        web: { type: 'http', url: http.url, headers: { Authorization: 'Bearer web-token' } },
      },
    });
  });
  suiteTeardown(async () => {
    for (const n of ['far', 'web']) await vscode.commands.executeCommand('execBridge.mcp.stop', n).then(undefined, () => undefined);
    await restore?.();
    await http?.close();
    exec?.stop();
  });

  test('both are listed and started by VS Code; the stdio one runs under the remote exec-server; their tools reach chat', async function () {
    this.timeout(90_000);
    const s0 = await waitForSnapshot('both definitions', (s) =>
      ['far · devbox', 'web · http'].every((l) => s.vscodeList?.definitions.some((d) => d.label === l)),
    );
    for (const label of ['far · devbox', 'web · http']) {
      const name = label.split(' ')[0]!;
      for (let i = 0; i < 100 && (await snapshot()).servers.find((x) => x.name === name)?.state.kind !== 'ready'; i++) {
        await vscode.commands.executeCommand('workbench.mcp.startServer', `exec-bridge.exec-bridge/${label}`, {
          autoTrustChanges: true,
          waitForLiveTools: true,
        });
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const s1 = await waitForSnapshot('both ready with a VS Code session', (s) =>
      ['far', 'web'].every((n) => s.servers.find((x) => x.name === n)?.state.kind === 'ready' && s.vscodeList?.sessions[n] === 1),
    );
    assert.ok(s1.servers.find((x) => x.name === 'web')?.tools.includes('shout'));
    const procs = processes();
    const far = procs.filter((p) => p.env.includes(`MCP_TEST_TAG=${tag}\0`) && !p.cmd.startsWith('/bin/sh'));
    assert.equal(far.length, 1, 'one process for the remote stdio server');
    const chain = ancestors(far[0]!.pid, procs);
    assert.ok(
      chain.some((p) => p.cmd.includes(`serve --listen ws://127.0.0.1:0`)),
      `under the remote exec-server: ${chain.map((p) => p.cmd.slice(0, 80)).join(' <- ')}`,
    );
    assert.ok(!chain.some((p) => proxies(s0.vscodeList!.socket, procs).some((x) => x.pid === p.pid)));
    await waitFor(
      `both tools in vscode.lm.tools (${vscode.lm.tools.map((t) => t.name).join(', ')})`,
      () => vscode.lm.tools.some((t) => /shout/.test(t.name)) && vscode.lm.tools.some((t) => /echo/.test(t.name) && /far/i.test(t.name)),
      20_000,
    );
  });
});
