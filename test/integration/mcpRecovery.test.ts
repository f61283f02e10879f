/** MCP sessions across dropped exec connections (through the fault proxy). */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { until } from '../helpers/procs';
import {
  configOf,
  describeOnExecutors,
  FIXTURE_SERVER,
  manager,
  newTag,
  NODE,
  SERVER_MEMORY,
  startExecutor,
  tagged,
  taggedServers,
  text,
  waitForState,
  type Executor,
} from './mcpFixtures';

describeOnExecutors(
  'MCP sessions and dropped connections',
  (exec) => {
    test('the MCP session survives a cut connection without a restart', async () => {
      const tag = newTag();
      const m = manager(exec().host);
      try {
        m.applyConfig(
          configOf({
            memory: { command: NODE, args: [SERVER_MEMORY], env: { MCP_TEST_TAG: tag, MEMORY_FILE_PATH: join(tmpdir(), `${tag}.jsonl`) } },
          }),
        );
        const s = m.get('memory')!;
        await s.start();
        assert.equal(s.state.kind, 'ready');
        const processId = s.processId;
        const readySince = s.state.since;
        await s.callTool('create_entities', { entities: [{ name: 'before-cut', entityType: 'test', observations: [] }] });

        const sawRecovering = new Promise<void>((resolve) => {
          const sub = exec().client.onDidChangeState((st) => {
            if (st.kind === 'recovering') {
              sub.dispose();
              resolve();
            }
          });
        });
        exec().proxy!.cut();
        await sawRecovering;
        // A call made while reconnecting waits and then goes through on the same session.
        const graph = await s.callTool('read_graph', {});
        assert.match(text(graph), /before-cut/);
        await until(() => exec().client.state.kind === 'connected', 15_000, 'client connected again');
        assert.equal(s.state.kind, 'ready');
        assert.equal(s.state.since, readySince, 'never left ready');
        assert.equal(s.processId, processId, 'same process');
        assert.ok(exec().proxy!.accepted >= 2, 'really reconnected');
        assert.equal(taggedServers(tag).length, 1);
      } finally {
        await m.shutdown();
      }
      assert.deepEqual(tagged(tag), []);
    });
  },
  { proxy: true, client: { deadlineMs: 15_000 } },
);

describe('MCP servers when recovery fails (ours, short session TTL)', () => {
  let exec: Executor;
  before(async () => {
    exec = await startExecutor('ours', {
      proxy: true,
      // The client asks no TTL of its own (ours asks 10 h): the server's 1.5 s applies to its session.
      client: { deadlineMs: 1000, keepalive: { intervalMs: 200, timeoutMs: 300 }, sessionTtlMs: null },
      serverArgs: ['--session-ttl-ms', '1500'],
    });
  });
  after(async () => {
    await exec?.close();
  });

  test('servers go crashed with the reason, their processes end with the session, onCrash restarts them once the executor is back', async () => {
    const tag = newTag();
    const m = manager(exec.host);
    try {
      m.applyConfig(configOf({ fixture: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag }, restart: 'onCrash' } }));
      const s = m.get('fixture')!;
      await s.start();
      assert.equal(s.state.kind, 'ready');
      // The path to the executor is gone for good: connections are reset and refused.
      await exec.proxy!.close();
      const st = await waitForState(s, (x) => x.kind === 'crashed', 15_000, 'crashed after the recovery deadline');
      assert.ok(st.kind === 'crashed' && st.waitingForExecutor === true, JSON.stringify(st));
      assert.match(st.kind === 'crashed' ? st.reason : '', /connection|lost/);
      // The server side ends the detached session's processes when its TTL passes.
      await until(() => tagged(tag).length === 0, 10_000, 'the old process ended with its session');

      // The executor is back (the extension reconnects and tells the manager).
      const fresh = await exec.connect({}, false);
      exec.host.set('local', fresh);
      exec.host.changed();
      await waitForState(s, (x) => x.kind === 'ready', 15_000, 'ready on the new connection');
      assert.equal(taggedServers(tag).length, 1);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});
