import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServerLog } from '../../../src/mcp/serverLog';
import { canTransition, describeState, FINAL_STATES, formatMs } from '../../../src/mcp/serverState';
import { exampleArguments, parseToolArguments } from '../../../src/mcp/toolArguments';
import { describeExitCode } from '../../../src/util/exitCode';

test('ServerLog splits stderr into lines across chunks and characters, bounds the ring and the lines', () => {
  const log = new ServerLog({ maxEntries: 5, maxLineChars: 10, now: () => 42 });
  const seen: string[] = [];
  log.onDidAppend((e) => seen.push(`${e.seq}:${e.kind}:${e.text}`));
  const euro = Buffer.from('€\n'); // 3 bytes + newline, split mid-character below
  log.stderr(Buffer.from('one\ntw'));
  log.stderr(Buffer.from('o\r\n\n'));
  log.stderr(euro.subarray(0, 1));
  log.stderr(euro.subarray(1));
  log.lifecycle('started');
  log.stderr(Buffer.from('x'.repeat(25) + '\n'));
  assert.deepEqual(seen, [
    '1:stderr:one',
    '2:stderr:two',
    '3:stderr:€',
    '4:lifecycle:started',
    '5:stderr:xxxxxxxxxx… (15 more characters)',
  ]);
  log.stderr(Buffer.from('partial'));
  assert.deepEqual(log.stderrTail(2), ['xxxxxxxxxx… (15 more characters)', 'partial'], 'the tail includes an unfinished line');
  log.flushStderr();
  log.append('trace', 't');
  assert.equal(log.all().length, 5, 'ring bounded');
  assert.equal(log.all()[0]?.seq, 3);
  assert.equal(log.all()[0]?.time, 42);
  // An intercepted line is not logged.
  log.stderr(Buffer.from('secret-marker\nkept\n'), (l) => l === 'secret-marker');
  assert.deepEqual(log.stderrTail(1), ['kept']);
});

test('ServerLog cuts a line that never ends instead of growing without bound', () => {
  const log = new ServerLog({ maxLineChars: 8 });
  log.stderr(Buffer.from('a'.repeat(20)));
  assert.equal(log.stderrTail(5).length, 1);
  assert.match(log.stderrTail(5)[0] ?? '', /^aaaaaaaa… \(12 more characters\)$/);
});

test('state transitions: every non-final state can reach a final one; finals only restart', () => {
  assert.deepEqual([...FINAL_STATES].sort(), ['crashed', 'stopped', 'timedOut']);
  assert.ok(canTransition('stopped', 'starting'));
  assert.ok(canTransition('starting', 'ready'));
  assert.ok(canTransition('ready', 'stopping'));
  assert.ok(canTransition('stopping', 'timedOut'));
  assert.ok(canTransition('ready', 'crashed'));
  assert.ok(!canTransition('stopped', 'ready'), 'never ready without starting');
  assert.ok(!canTransition('ready', 'stopped'), 'a stop always passes through stopping');
  assert.ok(!canTransition('timedOut', 'ready'));
  assert.equal(describeState({ kind: 'ready', since: 0, tools: 1 }, 0), 'Ready (1 tool)');
  assert.equal(describeState({ kind: 'timedOut', since: 0, reason: 'x', stderrTail: [], timeoutMs: 30_000 }, 0), 'Timed out after 30 s');
  assert.equal(
    describeState({ kind: 'crashed', since: 0, reason: 'x', stderrTail: [], exitCode: 3, restartAt: 2500 }, 500),
    'Crashed (exit 3) — restarting in 2 s',
  );
  assert.equal(
    describeState({ kind: 'crashed', since: 0, reason: 'x', stderrTail: [], waitingForExecutor: true }, 0),
    'Crashed — restarts when the executor is back',
  );
  assert.equal(formatMs(1500), '1.5 s');
  assert.equal(formatMs(61_000), '1 min 1 s');
  assert.equal(describeExitCode(137), 'exit code 137 (killed)');
  assert.equal(describeExitCode(134), 'exit code 134 (aborted)');
  assert.equal(describeExitCode(undefined), 'exit code unknown');
  assert.equal(describeExitCode(3), 'exit code 3');
});

test('tool arguments: JSON parse errors, non-objects and schema mismatches are explained', () => {
  const tool = {
    name: 'add',
    inputSchema: {
      type: 'object' as const,
      properties: { a: { type: 'number' }, mode: { type: 'string', enum: ['x', 'y'] } },
      required: ['a', 'mode'],
    },
  };
  assert.deepEqual(parseToolArguments(tool, '{"a": 1, "mode": "x"}'), { ok: true, args: { a: 1, mode: 'x' } });
  const bad = parseToolArguments(tool, '{"a": "one", "mode": "x"}');
  assert.ok(!bad.ok && /does not match the input schema of add/.test(bad.message), JSON.stringify(bad));
  const missing = parseToolArguments(tool, '{"a": 1}');
  assert.ok(!missing.ok && /mode/.test(missing.message));
  assert.deepEqual(parseToolArguments(tool, '[1]'), { ok: false, message: 'the arguments must be a JSON object, like {"name": "value"}' });
  const json = parseToolArguments(tool, '{a:1}');
  assert.ok(!json.ok && json.message.startsWith('not valid JSON'));
  assert.deepEqual(parseToolArguments({ name: 'none', inputSchema: { type: 'object' } }, '  '), { ok: true, args: {} });
  assert.equal(exampleArguments(tool), '{"a":0,"mode":"x"}');
});
