import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeMcpConfig, parseMcpJson, parseSettingsServers } from '../../../src/mcp/config';
import type { McpExecutor, McpExecutorHost } from '../../../src/mcp/executorHost';
import { McpServerManager } from '../../../src/mcp/serverManager';
import { McpTreeModel } from '../../../src/mcp/treeModel';
import { Emitter } from '../../../src/util/emitter';
import { FakeClock } from '../../helpers/fakeClock';

/** An executor seam with no executor at all: every acquire fails, as when nothing is connected. */
class NoExecutors implements McpExecutorHost {
  private readonly emitter = new Emitter<void>();
  readonly onDidChange = this.emitter.event;
  acquires = 0;
  acquire(executor: string | undefined): Promise<McpExecutor> {
    this.acquires++;
    return Promise.reject(new Error(`executor "${executor ?? 'active'}" is not connected`));
  }
  resolveId(executor: string | undefined): string | undefined {
    return executor ?? 'local';
  }
  fire(): void {
    this.emitter.fire();
  }
}

const file = '/ws/.vscode/mcp.json';

test('the tree shows an empty hint, then servers with state, executor badge and configuration errors', async () => {
  const host = new NoExecutors();
  const clock = new FakeClock(1_000_000);
  const manager = new McpServerManager({ host, clock });
  const model = new McpTreeModel(manager);
  const changes: (string | undefined)[] = [];
  model.onDidChange((n) => changes.push(n?.id));

  assert.deepEqual(model.snapshot(), [
    { label: 'No MCP servers configured', description: 'add .vscode/mcp.json', contextValue: 'mcpEmpty;', children: [] },
  ]);

  manager.applyConfig(
    mergeMcpConfig([
      parseMcpJson('{"servers": {"ok": {"command": "node", "executor": "devbox"}, "broken": {"command": "node", "args": [1]}}}', {
        kind: 'mcpJson',
        file,
        workspaceFolder: '/ws',
      }),
      parseSettingsServers({ fromSettings: { command: 'srv' } }, { kind: 'settings', file: 'settings' }),
    ]),
  );
  assert.deepEqual(changes, [undefined]);
  const snap = model.snapshot();
  assert.deepEqual(
    snap.map((n) => [n.label, n.description, n.contextValue]),
    [
      ['ok', 'Stopped · devbox', 'mcpServer;stopped;canStart;canShowOutput;canShowConfiguration;'],
      ['broken', 'configuration error', 'mcpServer;stopped;canShowOutput;canShowConfiguration;'],
      ['fromSettings', 'Stopped', 'mcpServer;stopped;canStart;canShowOutput;canShowConfiguration;'],
    ],
  );
  assert.deepEqual(
    snap[1]?.children.map((c) => c.label),
    ['servers.broken.args[0]: each argument must be a string, got 1'],
  );
  const detail = model.getChildren(model.getChildren()[1])[0]!;
  assert.equal(
    model.getItem(detail).tooltip,
    `${file}:1:102, server "broken", key "servers.broken.args[0]": each argument must be a string, got 1`,
  );
  // The same node object comes back for the same id (VS Code refreshes elements by identity).
  assert.equal(model.getChildren()[0], model.getChildren()[0]);
  const tooltip = model.getItem({ kind: 'server', id: 'mcp:ok', server: 'ok' }).tooltip ?? '';
  assert.match(tooltip, /Command: `node`/);
  assert.match(tooltip, /Defined in: \/ws\/\.vscode\/mcp\.json/);

  // Starting an invalid server is refused with the diagnostic.
  await assert.rejects(manager.start('broken'), /cannot start "broken": .*each argument must be a string/);
  await manager.shutdown();
});

test('no executor: a start ends crashed with the reason; onCrash waits for the executor instead of spinning', async () => {
  const host = new NoExecutors();
  const manager = new McpServerManager({ host, clock: new FakeClock(0) });
  const model = new McpTreeModel(manager);
  manager.applyConfig(
    mergeMcpConfig([
      parseSettingsServers({ a: { command: 'x' }, b: { command: 'x', restart: 'onCrash' } }, { kind: 'settings', file: 'settings' }),
    ]),
  );
  const a = manager.get('a')!;
  const b = manager.get('b')!;
  await a.start();
  assert.equal(a.state.kind, 'crashed');
  assert.ok(
    a.state.kind === 'crashed' && /executor not available: executor "active" is not connected/.test(a.state.reason),
    JSON.stringify(a.state),
  );
  assert.equal(a.waitingForExecutor, false);
  await b.start();
  assert.ok(b.waitingForExecutor, JSON.stringify(b.state));
  assert.match(b.describe(), /restarts when the executor is back/);
  assert.match(model.getItem({ kind: 'server', id: 'mcp:b', server: 'b' }).contextValue, /;canStop;/, 'a pending restart can be cancelled');
  const before = host.acquires;
  // The executor "changed" but is still not there: one more try, and no loop.
  host.fire();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(host.acquires, before + 1);
  assert.ok(b.waitingForExecutor);
  // Stop cancels the pending restart.
  await b.stop();
  assert.equal(b.waitingForExecutor, false);
  host.fire();
  await new Promise((r) => setImmediate(r));
  assert.equal(host.acquires, before + 1);
  assert.deepEqual(
    model.snapshot()[0]?.children.map((c) => c.label),
    ['executor not available: executor "active" is not connected'],
  );
  await manager.shutdown();
  assert.deepEqual(manager.servers, []);
});
