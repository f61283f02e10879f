import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DisconnectedError, OutputLostError } from '../../../src/client/errors';
import { TerminalStreamModel, type TerminalAction } from '../../../src/core/terminalStreamModel';
import { describeExitCode } from '../../../src/util/exitCode';

/** A model with its outputs recorded. */
function harness() {
  const model = new TerminalStreamModel();
  const writes: string[] = [];
  const actions: TerminalAction[] = [];
  const closes: (number | undefined)[] = [];
  model.onWrite((t) => writes.push(t));
  model.onAction((a) => actions.push(a));
  model.onClose((c) => closes.push(c));
  return { model, writes, actions, closes, text: () => writes.join('') };
}

const out = (seq: number, s: string | Buffer, stream: 'stdout' | 'stderr' | 'pty' = 'stdout') => ({
  type: 'output' as const,
  seq,
  stream,
  data: typeof s === 'string' ? Buffer.from(s) : s,
});
const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

test('buffers everything written before open, then flushes it in order', () => {
  const h = harness();
  h.model.notice('$ echo hi');
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent(out(1, 'hi\n'));
  assert.deepEqual(h.writes, [], 'nothing reaches VS Code before open()');
  h.model.open({ cols: 100, rows: 30 });
  assert.equal(h.writes.length, 1, 'one flush');
  assert.equal(plain(h.text()), '$ echo hi\r\nhi\r\n');
  assert.deepEqual(h.model.dimensions, { cols: 100, rows: 30 });
  h.model.processEvent(out(2, 'more\n'));
  assert.equal(h.writes.length, 2, 'after open, writes go straight through');
});

test('pipe output: lone \\n becomes \\r\\n, existing \\r\\n stays, also across chunk boundaries', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent(out(1, 'a\nb\r\nc\r'));
  h.model.processEvent(out(2, '\nd\n\n'));
  h.model.processEvent(out(3, 'err\n', 'stderr'));
  assert.equal(h.text(), 'a\r\nb\r\nc\r\nd\r\n\r\nerr\r\n');
});

test('PTY output passes through untouched', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: true, stdinWritable: true });
  h.model.processEvent(out(1, 'x\ny\r\n\x1b[1mbold\x1b[0m', 'pty'));
  assert.equal(h.text(), 'x\ny\r\n\x1b[1mbold\x1b[0m');
});

test('UTF-8 split across chunks is decoded whole', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  const bytes = Buffer.from('héllo — ✓\n');
  h.model.processEvent(out(1, bytes.subarray(0, 2)));
  h.model.processEvent(out(2, bytes.subarray(2, 13)));
  h.model.processEvent(out(3, bytes.subarray(13)));
  assert.equal(h.text(), 'héllo — ✓\r\n');
});

test('exit code line is the last line; any key then closes it, with no failure code for VS Code to raise an error about', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent(out(1, 'no newline at the end'));
  h.model.processEvent({ type: 'exited', seq: 2, exitCode: 3, sandboxDenied: false });
  h.model.processEvent({ type: 'closed', seq: 3 });
  assert.equal(h.model.exitCode, 3);
  h.model.finish(3);
  assert.equal(h.model.phase, 'finished');
  assert.equal(
    plain(h.text()),
    'no newline at the end\r\n[exit code 3 — press any key to close]',
    'the status line starts on its own line',
  );
  assert.deepEqual(h.closes, []);
  h.model.handleInput('\x1b');
  assert.deepEqual(h.closes, [undefined], 'Escape closes it too; the 3 was shown, not reported as a failure');
  assert.equal(h.model.exitCode, 3, 'the model still knows the code');
  assert.equal(h.model.phase, 'closed');
  assert.deepEqual(h.actions, [], 'the key is not sent anywhere');
});

test('a finished run with exit code 0 closes with 0', () => {
  const h = harness();
  h.model.open();
  h.model.finish(0);
  h.model.handleInput('q');
  assert.deepEqual(h.closes, [0]);
});

test('a finished run says nothing about the connection', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.finish(0);
  const before = h.text();
  h.model.connectionState({ kind: 'recovering', since: 0, attempt: 1, cause: 'socket closed' });
  h.model.connectionState({ kind: 'connected', sessionId: 's' });
  h.model.connectionState({ kind: 'recovering', since: 0, attempt: 1, cause: 'socket closed' });
  h.model.connectionState({ kind: 'failed', error: new DisconnectedError('recoveryDeadline', 'gone') });
  assert.equal(h.text(), before);
  assert.match(plain(h.text()), /\[exit code 0 — press any key to close\]$/);
});

test('well-known exit codes are explained', () => {
  assert.equal(describeExitCode(0), 'exit code 0');
  assert.equal(describeExitCode(130), 'exit code 130 (interrupted)');
  assert.equal(describeExitCode(137), 'exit code 137 (killed)');
  assert.equal(describeExitCode(143), 'exit code 143 (terminated)');
});

test('pipe stdin: local echo, backspace, Enter sends the line, Ctrl-C interrupts', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: true });
  h.model.handleInput('helo');
  h.model.handleInput('\x7f');
  h.model.handleInput('lo\x1b[D'); // an arrow key is dropped
  h.model.handleInput('\r');
  h.model.handleInput('two\nthree');
  h.model.handleInput('\x03');
  assert.deepEqual(h.actions, [{ kind: 'write', data: 'hello\n' }, { kind: 'write', data: 'two\n' }, { kind: 'interrupt' }]);
  assert.equal(h.text(), 'helo\b \blo\r\ntwo\r\nthree^C\r\n');
});

test('pipe without stdin: typing is ignored but Ctrl-C still interrupts', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.handleInput('abc\r');
  h.model.handleInput('\x03');
  assert.deepEqual(h.actions, [{ kind: 'interrupt' }]);
});

test('PTY input is forwarded raw (Ctrl-C included); resize maps to an action', () => {
  const h = harness();
  h.model.open({ cols: 80, rows: 24 });
  h.model.attach({ tty: true, stdinWritable: true });
  h.model.handleInput('ls\r');
  h.model.handleInput('\x03');
  h.model.setDimensions(120, 40);
  assert.deepEqual(h.actions, [
    { kind: 'write', data: 'ls\r' },
    { kind: 'write', data: '\x03' },
    { kind: 'resize', cols: 120, rows: 40 },
  ]);
  assert.equal(h.text(), '', 'no local echo in a PTY');
});

test('resize of a pipe process is only remembered', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: true });
  h.model.setDimensions(90, 20);
  assert.deepEqual(h.actions, []);
  assert.deepEqual(h.model.dimensions, { cols: 90, rows: 20 });
});

test('closing the terminal while running terminates the process, once, and silences it', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.close();
  h.model.close();
  assert.deepEqual(h.actions, [{ kind: 'terminate' }]);
  h.model.processEvent(out(1, 'late\n'));
  h.model.notice('late notice');
  assert.equal(h.text(), '');
  assert.deepEqual(h.closes, [], 'VS Code closed it; no onClose echo');
});

test('closing after the process ended sends nothing', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent({ type: 'exited', seq: 1, exitCode: 0, sandboxDenied: false });
  h.model.processEvent({ type: 'closed', seq: 2 });
  h.model.finish(0);
  h.model.close();
  assert.deepEqual(h.actions, []);
});

test('recovery: one dim line per outage, nothing on resume, the reason on failure (once)', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent(out(1, 'tick 1\n'));
  h.model.connectionState({ kind: 'recovering', since: 0, attempt: 0, cause: 'socket closed' });
  h.model.connectionState({ kind: 'recovering', since: 0, attempt: 1, cause: 'socket closed' });
  h.model.connectionState({ kind: 'recovering', since: 0, attempt: 2, cause: 'socket closed' });
  h.model.connectionState({ kind: 'connected', sessionId: 's' });
  h.model.processEvent(out(2, 'tick 2\n'));
  assert.equal(h.text(), 'tick 1\r\n\x1b[2mconnection lost — resuming…\x1b[0m\r\ntick 2\r\n');
  h.model.connectionState({ kind: 'recovering', since: 5, attempt: 0, cause: 'socket closed' });
  const error = new DisconnectedError('recoveryDeadline', 'the executor did not come back within 25 s');
  h.model.connectionState({ kind: 'failed', error });
  h.model.processEvent({ type: 'failed', error });
  const lines = plain(h.text()).split('\r\n');
  assert.deepEqual(lines.slice(2), [
    'tick 2',
    'connection lost — resuming…',
    'disconnected: the executor did not come back within 25 s',
    '',
  ]);
  assert.equal(h.model.phase, 'idle', 'the run is over; the controller finishes it');
});

test('a failure that reaches the process before the connection state is also said once', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  const error = new DisconnectedError('disposed', 'the bundled exec-server was killed (SIGKILL)');
  h.model.processEvent({ type: 'failed', error });
  h.model.connectionState({ kind: 'failed', error });
  assert.deepEqual(plain(h.text()).split('\r\n'), ['the bundled exec-server was killed (SIGKILL)', '']);
});

test('a failed process (output lost) says why', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent({ type: 'failed', error: new OutputLostError('p1', 3, 9) });
  assert.match(plain(h.text()), /output lost: seq 3–9 of process p1/);
  h.model.finish(undefined);
  assert.match(plain(h.text()), /\[no exit code — press any key to close\]$/);
  h.model.handleInput(' ');
  assert.deepEqual(h.closes, [undefined]);
});

test('a retry re-attaches: new decoders and exit code, same terminal', () => {
  const h = harness();
  h.model.open();
  h.model.attach({ tty: false, stdinWritable: false });
  h.model.processEvent(out(1, Buffer.from([0xe2, 0x9c]))); // half of ✓, then the process ends
  h.model.processEvent({ type: 'exited', seq: 2, exitCode: 1, sandboxDenied: true });
  h.model.processEvent({ type: 'closed', seq: 3 });
  h.model.warning('re-running');
  h.model.attach({ tty: false, stdinWritable: false });
  assert.equal(h.model.exitCode, undefined);
  h.model.processEvent(out(1, 'ok\n'));
  h.model.processEvent({ type: 'exited', seq: 2, exitCode: 0, sandboxDenied: false });
  h.model.processEvent({ type: 'closed', seq: 3 });
  h.model.finish(0);
  const lines = plain(h.text()).split('\r\n');
  assert.equal(lines[0], '\ufffd', 'the dangling half character is flushed as a replacement, not carried over');
  assert.deepEqual(lines.slice(1), ['re-running', 'ok', '[exit code 0 — press any key to close]']);
});

test('dispose closes the terminal (with the code if it had finished)', () => {
  const running = harness();
  running.model.open();
  running.model.attach({ tty: true, stdinWritable: true });
  running.model.dispose();
  assert.deepEqual(running.actions, [{ kind: 'terminate' }]);
  assert.deepEqual(running.closes, [undefined]);

  const done = harness();
  done.model.open();
  done.model.finish(7);
  done.model.dispose();
  assert.deepEqual(done.closes, [7]);
});

test('keys typed before the process starts are delivered once it does; keys between runs are dropped', () => {
  const h = harness();
  h.model.open();
  h.model.handleInput('echo hi\r');
  assert.deepEqual(h.actions, []);
  h.model.attach({ tty: true, stdinWritable: true });
  assert.deepEqual(h.actions, [{ kind: 'write', data: 'echo hi\r' }]);
  h.model.processEvent({ type: 'exited', seq: 1, exitCode: 1, sandboxDenied: true });
  h.model.processEvent({ type: 'closed', seq: 2 });
  h.model.handleInput('typed while the approval is pending');
  h.model.attach({ tty: true, stdinWritable: true });
  assert.equal(h.actions.length, 1);
});
