/**
 * A normal stop leaves no error lines in the server's log, and sends the server no cancellation of
 * requests it answered long ago (the SDK keeps its abort listeners: the start's requests, on the
 * run's signal, were "cancelled" by every stop — on an http server as requests the close then cut
 * off, each an error line). After Call Tool (with a progress
 * handler and a cancellable signal, as the tree calls), with VS Code's session open through the
 * gateway (a subscription, a log level, a call of its own), and while a request the server sent
 * us is still unanswered (an elicitation nobody answered yet). The stop's own lines say how it went.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpGateway } from '../../src/mcp/gateway';
import { buildProxyDefinitions } from '../../src/mcp/vscodeDefinitions';
import { until } from '../helpers/procs';
import { CLI_JS } from '../helpers/servers';
import { configOf, manager, NODE, SERVER_EVERYTHING, startExecutor, type Executor } from './mcpFixtures';

const FIXTURE = join(__dirname, '..', 'helpers', 'mcpConformanceServer.js');
const PROBE = join(__dirname, '..', 'helpers', 'mcpProbeServer.js');
const ERROR_LINE = /protocol error|aborted|could not confirm|lost the process/i;

describe('a normal stop writes no error lines, on ours exec-server', () => {
  let exec: Executor;
  before(async () => {
    exec = await startExecutor('ours');
  });
  after(async () => {
    await exec?.close();
  });

  test('a stop cancels nothing the server answered long ago (initialize, the lists, finished calls)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'exec-bridge-stoplog-'));
    const probeLog = join(dir, 'probe.jsonl');
    const m = manager(exec.host);
    try {
      m.applyConfig(configOf({ probe: { command: NODE, args: [PROBE], env: { MCP_PROBE_LOG: probeLog, MCP_PROBE_IGNORE_SIGINT: '1' } } }));
      const s = m.get('probe')!;
      await s.start();
      await s.callTool('whoami', {}, { signal: new AbortController().signal, onprogress: () => undefined });
      await s.stop();
      const events = readFileSync(probeLog, 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event);
      assert.deepEqual(events, ['initialize', 'call'], 'no notifications/cancelled reached the server');
      assert.deepEqual(
        s.log
          .all()
          .filter((e) => e.kind === 'lifecycle' && ERROR_LINE.test(e.text))
          .map((e) => e.text),
        [],
      );
    } finally {
      await m.shutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('after calls from the tree and from VS Code, with a question of the server unanswered', async () => {
    let asked = 0;
    const m = manager(exec.host, {
      client: {
        // Never answered: the stop comes while the server waits for it.
        elicit: () => {
          asked++;
          return new Promise(() => undefined);
        },
      },
    });
    const gateway = new McpGateway(m);
    let c: Client | undefined;
    try {
      m.applyConfig(
        configOf({ fixture: { command: NODE, args: [FIXTURE] }, everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'] } }),
      );
      const socketPath = await gateway.listen();
      const defs = buildProxyDefinitions(m.config.entries, {
        execPath: NODE,
        electron: false,
        cliPath: CLI_JS,
        socketPath,
        activeExecutor: 'local',
      });
      const def = defs.find((d) => d.args.includes('fixture'))!;
      c = new Client({ name: 'vscode-like', version: '0' });
      await c.connect(
        new StdioClientTransport({
          command: def.command,
          args: def.args,
          env: { ...(process.env as Record<string, string>), ...def.env },
          stderr: 'pipe',
        }),
      );
      const fixture = m.get('fixture')!;
      const everything = m.get('everything')!;
      await everything.start();
      const abort = new AbortController();
      await fixture.callTool(
        'test_tool_with_progress',
        {},
        { signal: abort.signal, onprogress: () => undefined, resetTimeoutOnProgress: true },
      );
      await everything.callTool(
        'echo',
        { message: 'hi' },
        { signal: abort.signal, onprogress: () => undefined, resetTimeoutOnProgress: true },
      );
      await c.subscribeResource({ uri: 'test://watched-resource' });
      await c.setLoggingLevel('info');
      await c.callTool({ name: 'test_tool_with_logging', arguments: {} });
      // A question of the server in flight at the stop (ours: the tree's call made it).
      const pending = fixture.callTool('test_elicitation', { message: 'unanswered' }).catch(() => undefined);
      await until(() => asked === 1, 10_000, 'the question');
      await Promise.all([fixture.stop(), everything.stop()]);
      await pending;
      for (const s of [fixture, everything]) {
        const lines = s.log
          .all()
          .filter((e) => e.kind === 'lifecycle')
          .map((e) => e.text);
        assert.deepEqual(
          lines.filter((l) => ERROR_LINE.test(l)),
          [],
          lines.join('\n'),
        );
        assert.ok(
          lines.some((l) => /^stopped after interrupt|^terminated/.test(l)),
          lines.join('\n'),
        );
        assert.equal(s.state.kind, 'stopped');
      }
    } finally {
      await c?.close().catch(() => undefined);
      await gateway.dispose();
      await m.shutdown();
    }
  });
});
