/**
 * Client capabilities (roots, elicitation, progress, cancellation, list_changed) against the
 * reference server-everything, and the gateway VS Code's MCP list reaches our servers through:
 * the real `mcp-proxy` command (dist/cli.js) spawned as VS Code spawns a stdio definition.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ElicitRequestFormParams, ElicitResult, Root } from '@modelcontextprotocol/sdk/types.js';
import type { McpClientFeatures } from '../../src/mcp/clientFeatures';
import { McpGateway } from '../../src/mcp/gateway';
import { buildProxyDefinitions } from '../../src/mcp/vscodeDefinitions';
import { Emitter } from '../../src/util/emitter';
import { descendantsOf, procFile, until } from '../helpers/procs';
import { CLI_JS } from '../helpers/servers';
import {
  configOf,
  manager,
  newTag,
  NODE,
  SERVER_EVERYTHING,
  startExecutor,
  tagged,
  taggedServers,
  text,
  TINY_SERVER,
  waitForState,
  type Executor,
} from './mcpFixtures';

class Features {
  roots: Root[] = [{ uri: 'file:///work/alpha', name: 'alpha' }];
  readonly rootsChanged = new Emitter<void>();
  answer: ElicitResult = { action: 'decline' };
  asked: ElicitRequestFormParams[] = [];
  readonly value: McpClientFeatures = {
    roots: { list: () => this.roots, onDidChange: this.rootsChanged.event },
    elicit: (_server, params) => {
      this.asked.push(params);
      return Promise.resolve(this.answer);
    },
  };
}

describe('MCP client capabilities and the VS Code gateway on ours exec-server', () => {
  let exec: Executor;
  before(async () => {
    exec = await startExecutor('ours');
  });
  after(async () => {
    await exec?.close();
  });

  test('server-everything: roots (and their change), elicitation accept/decline, progress, cancel, list_changed', async () => {
    const f = new Features();
    const m = manager(exec.host, { client: f.value });
    const tag = newTag();
    try {
      m.applyConfig(
        configOf({ everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'], env: { MCP_TEST_TAG: tag }, autoStart: true } }),
      );
      const s = m.get('everything')!;
      await waitForState(s, (st) => st.kind === 'ready', 30_000, 'ready');
      // The tools that need roots/elicitation are registered after initialize: list_changed brings them.
      await until(
        () => s.tools.some((t) => t.name === 'trigger-elicitation-request') && s.tools.some((t) => t.name === 'get-roots-list'),
        10_000,
        'conditional tools',
      );
      assert.ok(
        s.tools.every((t) => t.name !== 'trigger-sampling-request'),
        'sampling is not announced, so its tool is absent',
      );

      assert.match(text(await s.callTool('get-roots-list', {})), /file:\/\/\/work\/alpha/);
      f.roots = [...f.roots, { uri: 'file:///work/beta', name: 'beta' }];
      f.rootsChanged.fire();
      await until(async () => /work\/beta/.test(text(await s.callTool('get-roots-list', {}))), 10_000, 'the new root');

      f.answer = { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
      const accepted = text(await s.callTool('trigger-elicitation-request', {}));
      assert.match(accepted, /Name: Ada Lovelace/);
      assert.equal(f.asked.length, 1);
      assert.ok('name' in f.asked[0]!.requestedSchema.properties);
      f.answer = { action: 'decline' };
      assert.match(text(await s.callTool('trigger-elicitation-request', {})), /declined/);

      const progress: number[] = [];
      await s.callTool('trigger-long-running-operation', { duration: 1, steps: 4 }, { onprogress: (p) => progress.push(p.progress) });
      // Each step reports (the last may race the result); they count up.
      assert.ok(progress.length >= 3, `progress seen: ${JSON.stringify(progress)}`);
      assert.deepEqual(
        progress,
        [...progress].sort((a, b) => a - b),
      );

      // Cancel after the first progress: the call rejects at once, the server stays ready.
      const abort = new AbortController();
      const t0 = Date.now();
      await assert.rejects(
        s.callTool(
          'trigger-long-running-operation',
          { duration: 30, steps: 30 },
          { signal: abort.signal, onprogress: () => abort.abort() },
        ),
      );
      assert.ok(Date.now() - t0 < 10_000);
      assert.equal(s.state.kind, 'ready');
      assert.match(text(await s.callTool('echo', { message: 'still here' })), /still here/);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('sampling: announced only with a sampler that can serve; the request reaches it and its answer goes back', async () => {
    const asked: string[] = [];
    let canSample = false;
    const features: McpClientFeatures = {
      canSample: () => canSample,
      sample: (_server, params) => {
        asked.push(JSON.stringify(params.messages));
        return Promise.resolve({
          role: 'assistant',
          content: { type: 'text', text: 'forty-two' },
          model: 'test-model',
          stopReason: 'endTurn',
        });
      },
    };
    const m = manager(exec.host, { client: features });
    const tag = newTag();
    try {
      m.applyConfig(configOf({ everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'], env: { MCP_TEST_TAG: tag } } }));
      const s = m.get('everything')!;
      // No model: not announced, so the server offers no sampling tool.
      await s.start();
      assert.equal(s.state.kind, 'ready');
      assert.ok(!s.tools.some((t) => t.name === 'trigger-sampling-request'));
      await s.stop();
      canSample = true;
      await s.start();
      await until(() => s.tools.some((t) => t.name === 'trigger-sampling-request'), 10_000, 'the sampling tool');
      const out = text(await s.callTool('trigger-sampling-request', { prompt: 'the answer?' }));
      assert.match(out, /forty-two/);
      assert.match(asked[0] ?? '', /the answer\?/);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test("VS Code's side: the proxy reaches the one running server (its process a child of the exec-server), calls pass through, stop either side", async () => {
    const m = manager(exec.host);
    const gateway = new McpGateway(m);
    const tag = newTag();
    const clients: Client[] = [];
    try {
      m.applyConfig(configOf({ tiny: { command: NODE, args: [TINY_SERVER], env: { MCP_TEST_TAG: tag } } }));
      const socketPath = await gateway.listen();
      const [def] = buildProxyDefinitions(m.config.entries, {
        execPath: NODE,
        electron: false,
        cliPath: CLI_JS,
        socketPath,
        activeExecutor: 'local',
      });
      const connect = async () => {
        const c = new Client({ name: 'vscode-like', version: '0' });
        await c.connect(
          new StdioClientTransport({
            command: def!.command,
            args: def!.args,
            env: { ...(process.env as Record<string, string>), ...def!.env },
            stderr: 'pipe',
          }),
        );
        clients.push(c);
        return c;
      };

      // VS Code starts it: our server starts on the executor, once.
      const c1 = await connect();
      const s = m.get('tiny')!;
      assert.equal(s.state.kind, 'ready');
      const tools = await c1.listTools();
      assert.deepEqual(
        tools.tools.map((t) => t.name),
        s.tools.map((t) => t.name),
      );
      const pids = taggedServers(tag);
      assert.equal(pids.length, 1, 'one server process');
      assert.ok(
        descendantsOf(exec.server.child.pid!).some((p) => p.pid === pids[0]),
        'the server is a descendant of the exec-server',
      );
      const name = tools.tools[0]!.name;
      const viaProxy = await c1.callTool({ name, arguments: {} });
      const direct = await s.callTool(name, {});
      assert.deepEqual(viaProxy.content, direct.content);

      // Stop from VS Code's side (it ends the proxy): ours stops.
      await c1.close();
      const stopped = await waitForState(s, (st) => st.kind === 'stopped', 10_000, 'stopped from VS Code');
      assert.match(stopped.kind === 'stopped' ? (stopped.reason ?? '') : '', /VS Code/);
      await until(() => tagged(tag).length === 0, 10_000, 'no server process');

      // Stop from ours: VS Code's session ends (the proxy exits).
      const c2 = await connect();
      const closed = new Promise<void>((r) => (c2.onclose = r));
      await s.stop();
      await closed;
      assert.equal(gateway.sessionCount(), 0);
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await gateway.dispose();
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('50 start/stop cycles through the proxy leave no process and no session', async () => {
    const m = manager(exec.host);
    const gateway = new McpGateway(m);
    const tag = newTag();
    try {
      m.applyConfig(configOf({ tiny: { command: NODE, args: [TINY_SERVER], env: { MCP_TEST_TAG: tag } } }));
      const socketPath = await gateway.listen();
      const [def] = buildProxyDefinitions(m.config.entries, {
        execPath: NODE,
        electron: false,
        cliPath: CLI_JS,
        socketPath,
        activeExecutor: 'local',
      });
      const s = m.get('tiny')!;
      for (let i = 0; i < 50; i++) {
        const c = new Client({ name: 'vscode-like', version: '0' });
        const transport = new StdioClientTransport({ command: def!.command, args: def!.args, stderr: 'pipe' });
        await c.connect(transport);
        await c.listTools();
        await c.close();
        await waitForState(s, (st) => st.kind === 'stopped', 10_000, `stopped (cycle ${i})`);
      }
      await until(() => tagged(tag).length === 0 && gateway.sessionCount() === 0, 10_000, 'nothing left');
      const proxies = descendantsOf(process.pid).filter((p) => !p.zombie && procFile(p.pid, 'cmdline').includes('mcp-proxy'));
      assert.deepEqual(proxies, [], 'no proxy left');
    } finally {
      await gateway.dispose();
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});
