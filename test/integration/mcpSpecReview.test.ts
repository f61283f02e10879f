/**
 * What a server written against the SDK's spec revision (2025-11-25) expects of a client, beyond
 * mcpClientFeatures.test.ts: URL-mode elicitation (server-everything registers its
 * trigger-url-elicitation tool only for a client that announces it; a URL that is not http(s) is
 * declined without asking), and completions through the gateway VS Code's MCP list uses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpClientFeatures } from '../../src/mcp/clientFeatures';
import { McpGateway } from '../../src/mcp/gateway';
import { buildProxyDefinitions } from '../../src/mcp/vscodeDefinitions';
import { until } from '../helpers/procs';
import { CLI_JS } from '../helpers/servers';
import { configOf, manager, NODE, SERVER_EVERYTHING, startExecutor, text, waitForState, type Executor } from './mcpFixtures';

const everything = configOf({ everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'], autoStart: true } });

describe('MCP spec 2025-11-25 client features on ours exec-server', () => {
  let exec: Executor;
  before(async () => {
    exec = await startExecutor('ours');
  });
  after(async () => {
    await exec?.close();
  });

  test('URL-mode elicitation: announced with a URL handler; the request reaches it; a non-http URL is declined unasked', async () => {
    const asked: ElicitRequestURLParams[] = [];
    const features: McpClientFeatures = {
      elicit: () => Promise.resolve({ action: 'decline' }),
      elicitUrl: (_server, params): Promise<ElicitResult> => {
        asked.push(params);
        return Promise.resolve({ action: 'accept' });
      },
    };
    const m = manager(exec.host, { client: features });
    try {
      m.applyConfig(everything);
      const s = m.get('everything')!;
      await waitForState(s, (st) => st.kind === 'ready', 30_000, 'ready');
      await until(() => s.tools.some((t) => t.name === 'trigger-url-elicitation'), 10_000, 'the URL elicitation tool');
      const r = await s.callTool('trigger-url-elicitation', { url: 'https://example.com/sign-in', message: 'Sign in to Example' });
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.url, 'https://example.com/sign-in');
      assert.equal(asked[0]!.message, 'Sign in to Example');
      assert.ok(asked[0]!.elicitationId);
      assert.match(text(r), /accept/);
      const bad = await s.callTool('trigger-url-elicitation', { url: 'file:///etc/passwd' });
      assert.equal(asked.length, 1, 'not asked');
      assert.match(text(bad), /decline/);
    } finally {
      await m.shutdown();
    }
    // Without a URL handler only form mode is announced, and the server hides the tool.
    const m2 = manager(exec.host, { client: { elicit: () => Promise.resolve({ action: 'decline' }) } });
    try {
      m2.applyConfig(everything);
      const s = m2.get('everything')!;
      await waitForState(s, (st) => st.kind === 'ready', 30_000, 'ready');
      await until(() => s.tools.some((t) => t.name === 'trigger-elicitation-request'), 10_000, 'the form elicitation tool');
      assert.ok(!s.tools.some((t) => t.name === 'trigger-url-elicitation'));
    } finally {
      await m2.shutdown();
    }
  });

  test("the gateway (VS Code's side) offers the server's completions, passes output schemas and a -32042 error with its pages", async () => {
    const m = manager(exec.host, {
      client: {
        elicit: () => Promise.resolve({ action: 'decline' }),
        elicitUrl: () => Promise.resolve({ action: 'decline' }),
      },
    });
    const gateway = new McpGateway(m);
    let c: Client | undefined;
    try {
      m.applyConfig(everything);
      const socketPath = await gateway.listen();
      const [def] = buildProxyDefinitions(m.config.entries, {
        execPath: NODE,
        electron: false,
        cliPath: CLI_JS,
        socketPath,
        activeExecutor: 'local',
      });
      c = new Client({ name: 'vscode-like', version: '0' });
      await c.connect(
        new StdioClientTransport({
          command: def!.command,
          args: def!.args,
          env: { ...(process.env as Record<string, string>), ...def!.env },
          stderr: 'pipe',
        }),
      );
      assert.ok(c.getServerCapabilities()?.completions, 'completions announced');
      const done = await c.complete({
        ref: { type: 'ref/prompt', name: 'completable-prompt' },
        argument: { name: 'department', value: 'E' },
      });
      assert.ok(done.completion.values.includes('Engineering'), JSON.stringify(done.completion));
      const direct = m
        .get('everything')!
        .tools.filter((t) => t.outputSchema)
        .map((t) => t.name);
      assert.ok(direct.length > 0, 'server-everything has tools with an output schema');
      const listed = (await c.listTools()).tools.filter((t) => t.outputSchema).map((t) => t.name);
      assert.deepEqual(listed, direct);
      // "URL elicitation required" reaches VS Code's client as that error, pages included.
      await until(() => m.get('everything')!.tools.some((t) => t.name === 'trigger-url-elicitation'), 10_000, 'the URL tool');
      await assert.rejects(
        c.callTool({ name: 'trigger-url-elicitation', arguments: { url: 'https://example.com/x', errorPath: true } }),
        (e: { code?: number; data?: { elicitations?: { url: string }[] } }) =>
          e.code === -32042 && e.data?.elicitations?.[0]?.url === 'https://modelcontextprotocol.io',
      );
    } finally {
      await c?.close().catch(() => undefined);
      await gateway.dispose();
      await m.shutdown();
    }
  });
});
