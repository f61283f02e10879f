import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_OUTPUT_SPOOL_MIB,
  defaultExecutorProblem,
  describeExecutor,
  outputSpoolFromSetting,
  parseExecutors,
  redactUrl,
} from '../../../src/core/executorConfig';

test('bundled is always first; valid entries follow in setting order', () => {
  const { executors, problems } = parseExecutors(
    [
      { name: 'devbox', url: 'ws://127.0.0.1:7000' },
      { name: 'ssh box', command: ['ssh', 'box', 'exec-bridge', 'serve', '--listen', 'stdio'], cwd: '/srv' },
      { name: 'codex', url: 'wss://exec.example.test/x', tokenSecret: 'codex-token' },
    ],
    '/work/project',
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(executors, [
    { kind: 'bundled', name: 'bundled', cwd: '/work/project' },
    { kind: 'websocket', name: 'devbox', url: 'ws://127.0.0.1:7000', tokenSecret: 'devbox' },
    { kind: 'stdio', name: 'ssh box', command: ['ssh', 'box', 'exec-bridge', 'serve', '--listen', 'stdio'], cwd: '/srv' },
    { kind: 'websocket', name: 'codex', url: 'wss://exec.example.test/x', tokenSecret: 'codex-token' },
  ]);
});

test('missing or non-list settings give just the bundled executor', () => {
  for (const raw of [undefined, null, []]) {
    assert.deepEqual(parseExecutors(raw), { executors: [{ kind: 'bundled', name: 'bundled' }], problems: [] });
  }
  const notAList = parseExecutors({ name: 'x' });
  assert.equal(notAList.executors.length, 1);
  assert.match(notAList.problems[0]!.message, /must be a list/);
});

test('bad entries are skipped one by one, each with a reason', () => {
  const { executors, problems } = parseExecutors([
    { name: 'both', url: 'ws://a:1', command: ['x'] },
    { name: 'neither' },
    'a string',
    { name: 'http', url: 'http://127.0.0.1:1' },
    { name: '', url: 'ws://a:1' },
    { name: 'empty', command: [] },
    { name: 'relative', url: 'ws://a:1', cwd: 'src' },
    { name: 'token', url: 'ws://a:1', token: 'do-not-put-tokens-here' },
    { name: 'bundled', url: 'ws://a:1' },
    { name: 'ok', url: 'ws://127.0.0.1:9' },
    { name: 'ok', url: 'ws://127.0.0.1:10' },
  ]);
  assert.deepEqual(
    executors.map((e) => e.name),
    ['bundled', 'ok'],
  );
  assert.deepEqual(
    problems.map((p) => p.index),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 10],
  );
  assert.match(problems[0]!.message, /exactly one of "url", "command" or "ssh"/);
  assert.match(problems[3]!.message, /url: url must start with ws:\/\/ or wss:\/\//);
  assert.match(problems[6]!.message, /cwd must be an absolute path/);
  assert.match(problems[7]!.message, /token/, 'unknown keys (a token pasted into settings) are refused');
  assert.match(problems[8]!.message, /"bundled" is already used/);
  assert.match(problems[9]!.message, /"ok" is already used/);
});

test('descriptions never show credentials', () => {
  assert.equal(redactUrl('wss://user:secret@host.test:443/x'), 'wss://host.test:443/x');
  assert.equal(redactUrl('ws://127.0.0.1:1'), 'ws://127.0.0.1:1');
  const [, remote] = parseExecutors([{ name: 'r', url: 'wss://me:pw@h.test/' }]).executors;
  assert.equal(describeExecutor(remote!), 'wss://h.test/');
  assert.match(describeExecutor({ kind: 'bundled', name: 'bundled' }), /this machine/);
});

test('defaultExecutor: a known name or none is fine; an unknown one is named with what there is', () => {
  assert.equal(defaultExecutorProblem(undefined, ['bundled']), undefined);
  assert.equal(defaultExecutorProblem('devbox', ['bundled', 'devbox']), undefined);
  assert.equal(
    defaultExecutorProblem('debox', ['bundled', 'devbox']),
    'execBridge.defaultExecutor is "debox", which is not an executor (known: bundled, devbox); using bundled',
  );
});

test('execBridge.outputSpoolMiB: the default asks with a plain true (every version of our server knows it), another size in bytes, 0 for none', () => {
  assert.equal(outputSpoolFromSetting(DEFAULT_OUTPUT_SPOOL_MIB), true);
  assert.equal(outputSpoolFromSetting(undefined), true);
  assert.equal(outputSpoolFromSetting('lots'), true);
  assert.equal(outputSpoolFromSetting(-3), true);
  assert.equal(outputSpoolFromSetting(0), false);
  assert.deepEqual(outputSpoolFromSetting(8), { processBytes: 8 * 1024 * 1024 });
  assert.deepEqual(outputSpoolFromSetting(256), { processBytes: 256 * 1024 * 1024 });
});
