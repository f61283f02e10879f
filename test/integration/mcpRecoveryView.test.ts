/**
 * How an MCP server whose executor is reconnecting looks (issue 14 item 12): a state of its own in
 * the tree (icon and words first, a tooltip), and one log line per outage however many resume
 * attempts it takes.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { McpTreeModel } from '../../src/mcp/treeModel';
import { until } from '../helpers/procs';
import { configOf, manager, newTag, NODE, SERVER_MEMORY, startExecutor, tagged, type Executor } from './mcpFixtures';

describe('an MCP server while its executor reconnects (ours)', () => {
  let exec: Executor;
  before(async () => {
    // Quick failing attempts while the proxy swallows everything: several attempts per outage. An
    // attempt is given a second (not 150 ms): the first connect must get through on a busy machine.
    exec = await startExecutor('ours', {
      proxy: true,
      client: { deadlineMs: 60_000, attemptTimeoutMs: 1_000, backoff: { stepMs: 20, maxMs: 40 }, keepalive: false },
    });
  });
  after(async () => {
    await exec?.close();
  });

  test('the tree shows "executor reconnecting…" with its own icon and tooltip; the log says it once', async () => {
    const tag = newTag();
    const m = manager(exec.host);
    const tree = new McpTreeModel(m);
    try {
      m.applyConfig(
        configOf({
          memory: { command: NODE, args: [SERVER_MEMORY], env: { MCP_TEST_TAG: tag, MEMORY_FILE_PATH: join(tmpdir(), `${tag}.jsonl`) } },
        }),
      );
      const s = m.get('memory')!;
      await s.start();
      const node = tree.getChildren()[0]!;
      assert.equal(tree.getItem(node).icon, 'pass-filled');

      let attempts = 0;
      const sub = exec.client.onDidChangeState((st) => {
        if (st.kind === 'recovering') attempts = Math.max(attempts, st.attempt);
      });
      exec.proxy!.blackhole();
      exec.proxy!.cut();
      await until(() => attempts >= 4, 30_000, 'several resume attempts');
      const item = tree.getItem(node);
      assert.equal(item.icon, 'debug-disconnect');
      assert.match(item.description ?? '', /^executor reconnecting…/, 'the words come first (a narrow sidebar cuts the end)');
      assert.match(item.tooltip ?? '', /tool calls wait until the connection is back/);
      exec.proxy!.heal();
      await until(() => exec.client.state.kind === 'connected', 30_000, 'connected again');
      sub.dispose();
      assert.equal(tree.getItem(node).icon, 'pass-filled');
      const lines = s.log.all().map((e) => e.text);
      assert.equal(lines.filter((l) => l.startsWith('exec connection lost')).length, 1, `one outage, one line (${attempts} attempts)`);
      assert.equal(lines.filter((l) => l.startsWith('exec connection recovered')).length, 1);
    } finally {
      tree.dispose();
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});
