/**
 * The MCP manager against the three pinned reference servers and a fixture that misbehaves on
 * request, running as processes of a real exec-server — ours and `codex exec-server`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { until } from '../helpers/procs';
import {
  configOf,
  describeOnExecutors,
  FIXTURE_SERVER,
  manager,
  newTag,
  NODE,
  SERVER_EVERYTHING,
  SERVER_FILESYSTEM,
  SERVER_MEMORY,
  tagged,
  taggedServers,
  text,
  TIMINGS,
  waitForState,
} from './mcpFixtures';

describeOnExecutors('MCP servers', (exec) => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'mcp-it-'));
  });
  after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('the three reference servers become ready with their tools; tools can be called', async () => {
    const tag = newTag();
    writeFileSync(join(scratch, 'hello.txt'), 'hi');
    const m = manager(exec().host);
    try {
      m.applyConfig(
        configOf({
          memory: {
            command: NODE,
            args: [SERVER_MEMORY],
            env: { MEMORY_FILE_PATH: join(scratch, 'mem.jsonl'), MCP_TEST_TAG: tag },
            autoStart: true,
          },
          everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'], env: { MCP_TEST_TAG: tag }, autoStart: true },
          filesystem: {
            command: NODE,
            args: [SERVER_FILESYSTEM, scratch],
            env: { MCP_TEST_TAG: tag },
            autoStart: true,
            disabledTools: ['write_file'],
          },
        }),
      );
      const [memory, everything, filesystem] = ['memory', 'everything', 'filesystem'].map((n) => m.get(n)!);
      for (const s of [memory!, everything!, filesystem!]) await waitForState(s, (st) => st.kind === 'ready', 30_000, 'ready');

      assert.equal(memory!.tools.length, 9);
      assert.ok(memory!.tools.some((t) => t.name === 'read_graph'));
      assert.deepEqual(memory!.state.kind === 'ready' && memory!.state.tools, 9);
      assert.equal(everything!.tools.length, 13);
      assert.equal(everything!.prompts.length, 4);
      assert.equal(everything!.resources.length, 7);
      assert.equal(everything!.resourceTemplates.length, 2);
      assert.equal(everything!.serverInfo?.name, 'mcp-servers/everything');
      // disabledTools hides a tool without hiding the others.
      assert.equal(filesystem!.allTools.length, 14);
      assert.equal(filesystem!.tools.length, 13);
      assert.ok(!filesystem!.tools.some((t) => t.name === 'write_file'));

      assert.match(text(await memory!.callTool('read_graph', {})), /"entities"/);
      assert.equal(text(await everything!.callTool('echo', { message: 'over the executor' })), 'Echo: over the executor');
      assert.match(text(await filesystem!.callTool('list_directory', { path: scratch })), /hello\.txt/);
      assert.ok((await everything!.ping()) >= 0);
      const prompt = await everything!.getPrompt('simple-prompt');
      assert.ok(prompt.messages.length > 0);
      assert.equal(taggedServers(tag).length, 3, 'one process per server');
    } finally {
      await m.shutdown();
    }
    await until(() => tagged(tag).length === 0, 5000, 'no server process left after shutdown');
  });

  test('list_changed updates the lists in place (tools on the fixture, resources on everything)', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    try {
      m.applyConfig(
        configOf({
          fixture: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag } },
          everything: { command: NODE, args: [SERVER_EVERYTHING, 'stdio'], env: { MCP_TEST_TAG: tag } },
        }),
      );
      const fixture = m.get('fixture')!;
      const everything = m.get('everything')!;
      // A second start while starting joins the first and resolves when it is ready.
      await Promise.all([fixture.start(), fixture.start(), everything.start()]);
      assert.equal(fixture.state.kind, 'ready');
      assert.equal(everything.state.kind, 'ready');
      assert.equal(fixture.tools.length, 3);

      const toolsChanged = waitForState(fixture, (s) => s.kind === 'ready' && s.tools === 4, 10_000, 'tool count 4');
      assert.equal(text(await fixture.callTool('add_tool', { name: 'late_tool' })), 'added late_tool');
      await toolsChanged;
      assert.ok(fixture.tools.some((t) => t.name === 'late_tool'));
      assert.equal(text(await fixture.callTool('late_tool', {})), 'late_tool');

      const before = everything.resources.length;
      const listsChanged = new Promise<void>((resolve) => {
        const sub = everything.onDidChange((c) => {
          if (c === 'lists' && everything.resources.length === before + 1) {
            sub.dispose();
            resolve();
          }
        });
      });
      await everything.callTool('gzip-file-as-resource', {
        name: 'x.gz',
        data: 'data:text/plain;base64,aGVsbG8=',
        outputType: 'resourceLink',
      });
      await Promise.race([
        listsChanged,
        new Promise((_, reject) => setTimeout(() => reject(new Error('no resources list_changed')), 10_000)),
      ]);
      assert.ok(everything.resources.some((r) => r.name === 'x.gz'));
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('a server that never answers goes timedOut within its bound, with its stderr, and is killed', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    try {
      m.applyConfig(
        configOf({
          silent: {
            command: 'bash',
            args: ['-c', 'echo "loading a very large model" >&2; exec sleep 300'],
            env: { MCP_TEST_TAG: tag },
            startupTimeoutMs: 1500,
          },
        }),
      );
      const s = m.get('silent')!;
      const t0 = Date.now();
      await s.start();
      const took = Date.now() - t0;
      const st = s.state;
      assert.equal(st.kind, 'timedOut');
      assert.ok(took >= 1400 && took < 1500 + TIMINGS.graceMs! + 3000, `took ${took} ms`);
      assert.match(s.describe(), /Timed out after 1\.5 s/);
      assert.ok(st.kind === 'timedOut' && st.stderrTail.includes('loading a very large model'), JSON.stringify(st));
      assert.deepEqual(tagged(tag), [], 'the process is gone when the final state is reached');
    } finally {
      await m.shutdown();
    }
  });

  test('a server that crashes goes crashed with its exit code and stderr tail', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    try {
      m.applyConfig(
        configOf({
          atStart: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag, FIXTURE_CRASH_AT_START: '3' } },
          later: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag } },
        }),
      );
      const atStart = m.get('atStart')!;
      await atStart.start();
      assert.equal(atStart.state.kind, 'crashed');
      assert.ok(atStart.state.kind === 'crashed' && atStart.state.exitCode === 3, JSON.stringify(atStart.state));
      assert.deepEqual(atStart.state.kind === 'crashed' && atStart.state.stderrTail, [
        'fixture: reading configuration',
        'fixture: fatal: missing API key',
      ]);

      const later = m.get('later')!;
      await later.start();
      assert.equal(later.state.kind, 'ready');
      const crashed = waitForState(later, (s) => s.kind === 'crashed', 10_000, 'crashed');
      await later.callTool('crash', { code: 7 }).catch(() => undefined);
      const st = await crashed;
      assert.ok(st.kind === 'crashed');
      assert.equal(st.exitCode, 7);
      assert.equal(st.stderrTail.length, 20);
      assert.equal(st.stderrTail.at(-1), 'fixture: last words');
      assert.match(st.reason, /exited on its own: exit code 7/);
      assert.equal(later.tools.length, 0, 'a crashed server offers no tools');
      await assert.rejects(later.callTool('echo', { text: 'x' }), /not ready/);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('restart onCrash: restarts with backoff, gives up after 3 tries', async () => {
    const tag = newTag();
    const m = manager(exec().host);
    try {
      m.applyConfig(configOf({ flaky: { command: NODE, args: [FIXTURE_SERVER], env: { MCP_TEST_TAG: tag }, restart: 'onCrash' } }));
      const s = m.get('flaky')!;
      await s.start();
      const pids: string[] = [];
      for (let i = 1; i <= 3; i++) {
        pids.push(s.processId!);
        await s.callTool('crash', { code: 1 }).catch(() => undefined);
        const st = await waitForState(s, (x) => x.kind === 'crashed', 10_000, `crash ${i}`);
        assert.ok(st.kind === 'crashed' && st.restartAt !== undefined, `restart ${i} is scheduled: ${JSON.stringify(st)}`);
        await waitForState(s, (x) => x.kind === 'ready', 10_000, `ready again after restart ${i}`);
      }
      assert.equal(new Set([...pids, s.processId]).size, 4, 'each restart is a new process');
      await s.callTool('crash', { code: 1 }).catch(() => undefined);
      const st = await waitForState(s, (x) => x.kind === 'crashed', 10_000, 'final crash');
      assert.ok(st.kind === 'crashed' && st.restartAt === undefined);
      assert.match(st.kind === 'crashed' ? st.reason : '', /gave up after 3 automatic restarts/);
      // A manual start resets the counter.
      await s.start();
      assert.equal(s.state.kind, 'ready');
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});
