/**
 * What the gateway forwards beyond calls (VS Code's MCP list → `mcp-proxy` → gateway → our
 * server): resource subscriptions (the update reaches the session that subscribed, and only it; the
 * server is asked once per uri and told when the last subscriber leaves, a session that goes away
 * included) and logging (`logging/setLevel` reaches the server; each session gets the server's
 * `notifications/message` at its own level).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpGateway } from '../../src/mcp/gateway';
import { buildProxyDefinitions } from '../../src/mcp/vscodeDefinitions';
import { until } from '../helpers/procs';
import { CLI_JS } from '../helpers/servers';
import { configOf, manager, NODE, startExecutor, type Executor } from './mcpFixtures';

const FIXTURE = join(__dirname, '..', 'helpers', 'mcpConformanceServer.js');

describe('the gateway forwards subscriptions and logging on ours exec-server', () => {
  let exec: Executor;
  before(async () => {
    exec = await startExecutor('ours');
  });
  after(async () => {
    await exec?.close();
  });

  test('resources/subscribe, notifications/resources/updated, logging/setLevel and notifications/message pass both ways', async () => {
    const m = manager(exec.host);
    const gateway = new McpGateway(m);
    const clients: Client[] = [];
    try {
      m.applyConfig(configOf({ fixture: { command: NODE, args: [FIXTURE] } }));
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
      const a = await connect();
      const b = await connect();
      const caps = a.getServerCapabilities();
      assert.equal(caps?.resources?.subscribe, true, 'subscribe announced');
      assert.ok(caps?.logging, 'logging announced');

      const updated: Record<string, string[]> = { a: [], b: [] };
      a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated['a']!.push(n.params.uri));
      b.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated['b']!.push(n.params.uri));
      await a.subscribeResource({ uri: 'test://watched-resource' });
      await until(() => updated['a']!.length > 0, 10_000, 'the update');
      assert.deepEqual(updated, { a: ['test://watched-resource'], b: [] }, 'only the subscriber hears it');
      const server = m.get('fixture')!;
      assert.ok(server.log.all().every((e) => !e.text.startsWith('protocol error')));

      const logs: Record<string, string[]> = { a: [], b: [] };
      a.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs['a']!.push(`${n.params.level}:${String(n.params.data)}`));
      b.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs['b']!.push(`${n.params.level}:${String(n.params.data)}`));
      await a.setLoggingLevel('debug');
      await b.setLoggingLevel('error');
      await a.callTool({ name: 'test_tool_with_logging', arguments: {} });
      await until(() => logs['a']!.length >= 3, 10_000, 'the log messages');
      assert.deepEqual(logs['a'], ['info:Tool execution started', 'info:Tool processing data', 'info:Tool execution completed']);
      assert.deepEqual(logs['b'], [], 'an info message is below the level b asked for');

      await a.unsubscribeResource({ uri: 'test://watched-resource' });
      // A session that goes away releases its subscriptions (the server is told once nobody holds them).
      await b.subscribeResource({ uri: 'test://watched-resource' });
      await b.close();
      await until(() => gateway.sessionCount('fixture') === 1, 10_000, 'the session to end');
      await a.subscribeResource({ uri: 'test://watched-resource' });
      await until(() => updated['a']!.length >= 2, 10_000, 'a fresh subscription is sent to the server again');
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await gateway.dispose();
      await m.shutdown();
    }
  });
});
