/**
 * Leak-free shutdown: stubborn servers with grandchildren, 50 start/stop/crash cycles counted in
 * the executor's process tree, configuration changes and executor switches through the one drain.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '../helpers/procs';
import {
  configOf,
  describeOnExecutors,
  FIXTURE_SERVER,
  manager,
  newTag,
  NODE,
  tagged,
  taggedServers,
  TIMINGS,
  waitForState,
} from './mcpFixtures';

describeOnExecutors('MCP shutdown', (exec) => {
  test('a server with a grandchild that ignores stdin EOF and SIGINT leaves nothing behind after stop', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    try {
      m.applyConfig(
        configOf({
          stubborn: {
            command: NODE,
            args: [FIXTURE_SERVER],
            env: { MCP_TEST_TAG: tag, FIXTURE_GRANDCHILD: '1', FIXTURE_IGNORE_EOF: '1', FIXTURE_IGNORE_SIGINT: '1' },
          },
        }),
      );
      const s = m.get('stubborn')!;
      await s.start();
      assert.equal(s.state.kind, 'ready');
      // node + the grandchild (bash exec'd into sleep).
      await until(() => taggedServers(tag).length === 2, 5000, 'server and grandchild running');
      const t0 = Date.now();
      await s.stop();
      const took = Date.now() - t0;
      assert.equal(s.state.kind, 'stopped');
      assert.ok(took < TIMINGS.graceMs! + 3000, `stop took ${took} ms`);
      assert.ok(
        s.log.all().some((e) => e.text.startsWith('terminated (process group killed)')),
        'escalated to terminate',
      );
      await until(() => tagged(tag).length === 0, 5000, 'grandchild gone');
    } finally {
      await m.shutdown();
    }
  });

  test('configuration changes: changed → restart to apply, removed → drained, added with autoStart → started', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    const base = { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag } };
    try {
      m.applyConfig(configOf({ keep: { ...base, autoStart: true }, drop: { ...base, autoStart: true } }));
      await waitForState(m.get('keep')!, (s) => s.kind === 'ready');
      const drop = m.get('drop')!;
      await waitForState(drop, (s) => s.kind === 'ready');
      const keepPid = m.get('keep')!.processId;

      m.applyConfig(
        configOf({
          keep: { ...base, autoStart: true, args: [FIXTURE_SERVER, '--changed'], disabledTools: ['crash'] },
          added: { ...base, autoStart: true },
        }),
      );
      const keep = m.get('keep')!;
      assert.equal(keep.stale, true, 'a changed launch shows "restart to apply"');
      assert.equal(keep.processId, keepPid, 'and keeps running meanwhile');
      assert.deepEqual(keep.tools.map((t) => t.name).sort(), ['add_tool', 'echo'], 'tool filters apply at once');
      assert.equal(m.get('drop'), undefined);
      await m.drain('test: wait for the removed server', { filter: () => false });
      assert.equal(drop.state.kind, 'stopped');
      await waitForState(m.get('added')!, (s) => s.kind === 'ready');
      await keep.restart();
      assert.equal(keep.stale, false);
      assert.notEqual(keep.processId, keepPid);
      assert.equal(taggedServers(tag).length, 2);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('switching the active executor moves running servers through the drain', async () => {
    const tag = newTag();
    const other = await exec().connect();
    const m = manager(exec().host);
    try {
      exec().host.set('other', other);
      m.applyConfig(
        configOf({
          mover: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag } },
          pinned: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag }, executor: 'local' },
        }),
      );
      await Promise.all([m.start('mover'), m.start('pinned')]);
      const mover = m.get('mover')!;
      const pinned = m.get('pinned')!;
      assert.equal(mover.executor?.id, 'local');
      const firstPid = taggedServers(tag);
      exec().host.active = 'other';
      exec().host.changed();
      await waitForState(mover, (s) => s.kind === 'ready' && mover.executor?.id === 'other', 15_000, 'ready on the other executor');
      assert.equal(pinned.executor?.id, 'local', 'a server pinned to an executor stays');
      assert.equal(pinned.state.kind, 'ready');
      assert.equal(taggedServers(tag).length, 2);
      assert.notDeepEqual(taggedServers(tag).sort(), firstPid.sort());
    } finally {
      exec().host.active = 'local';
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});
