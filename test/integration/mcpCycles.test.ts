/**
 * The leak count: 50 start/stop/restart/crash cycles (5 servers at once, half of them stubborn:
 * a grandchild that ignores signals, no exit on stdin EOF, SIGINT ignored), then the executor's
 * process tree (read from /proc) must be what it was, and no process carrying the test's tag may
 * be left anywhere (a re-parented grandchild is outside the tree).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '../helpers/procs';
import { configOf, describeOnExecutors, descendants, manager, newTag, NODE, tagged, TINY_SERVER, waitForState } from './mcpFixtures';

describeOnExecutors('MCP start/stop/crash cycles', (exec) => {
  test('50 start/stop/crash cycles leave the executor process tree as it was', async () => {
    const tag = newTag();
    const serverPid = exec().server.child.pid!;
    const treeBefore = descendants(serverPid).length;
    const m = manager(exec().host, { timings: { restartDelaysMs: [] } });
    const names = ['c0', 'c1', 'c2', 'c3', 'c4'];
    try {
      const servers: Record<string, object> = {};
      for (const [i, n] of names.entries()) {
        // Every other one is the stubborn variant (grandchild, ignores EOF and SIGINT).
        const stubborn = i % 2 === 1 ? { FIXTURE_GRANDCHILD: '1', FIXTURE_IGNORE_EOF: '1', FIXTURE_IGNORE_SIGINT: '1' } : {};
        servers[n] = { command: NODE, args: [TINY_SERVER], env: { MCP_TEST_TAG: tag, ...stubborn }, restart: 'never' };
      }
      m.applyConfig(configOf(servers));
      let cycles = 0;
      await Promise.all(
        names.map(async (n) => {
          const s = m.get(n)!;
          for (let i = 0; i < 10; i++) {
            await s.start();
            assert.equal(s.state.kind, 'ready', `${n} cycle ${i}: ${s.describe()}`);
            if (i % 3 === 2) {
              await s.callTool('crash', { code: 9 }).catch(() => undefined);
              await waitForState(s, (x) => x.kind === 'crashed', 10_000, 'crashed');
            } else if (i % 3 === 1) {
              await s.restart();
              assert.equal(s.state.kind, 'ready');
              await s.stop();
            } else {
              await s.stop();
            }
            cycles++;
          }
        }),
      );
      assert.equal(cycles, 50);
    } finally {
      await m.shutdown();
    }
    await until(() => tagged(tag).length === 0, 5000, 'no tagged process left');
    await until(
      () => descendants(serverPid).length === treeBefore,
      5000,
      `executor tree back to ${treeBefore} processes (now ${descendants(serverPid).length})`,
    );
  });
});
