import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessReadResult, ProcessStartParams, requests, serverNotifications } from '../../../src/protocol';

test('process/start applies the reference defaults and keeps optional fields optional', () => {
  const p = ProcessStartParams.parse({ processId: 'p', argv: ['true'], cwd: 'file:///tmp', env: {}, tty: false });
  assert.equal(p.pipeStdin, false);
  assert.equal(p.arg0, undefined);
  assert.ok(!ProcessStartParams.safeParse({ processId: 'p', argv: ['true'], cwd: 'file:///tmp', env: {} }).success, 'tty is required');
  assert.ok(
    !ProcessStartParams.safeParse({ processId: 'p', argv: ['true'], cwd: 'file:///tmp', env: { A: 1 }, tty: false }).success,
    'env values are strings',
  );
});

test('base64 fields reject invalid symbols and accept the empty string', () => {
  const w = requests['process/write'].params;
  assert.ok(w.safeParse({ processId: 'p', chunk: '', writeId: 'w' }).success);
  assert.ok(w.safeParse({ processId: 'p', chunk: 'aGkK', writeId: 'w' }).success);
  assert.ok(!w.safeParse({ processId: 'p', chunk: '*', writeId: 'w' }).success);
  assert.ok(!w.safeParse({ processId: 'p', chunk: 'aGk', writeId: 'w' }).success);
});

test('results from older servers (no sandboxDenied, no closed seq) still parse', () => {
  const r = ProcessReadResult.parse({ chunks: [], nextSeq: 1, exited: false, exitCode: null, closed: false });
  assert.equal(r.sandboxDenied, false);
  assert.ok(serverNotifications['process/closed'].safeParse({ processId: 'p' }).success);
  assert.ok(serverNotifications['process/exited'].safeParse({ processId: 'p', seq: 3, exitCode: 0 }).success);
});

test('every request method has a params and a result schema', () => {
  for (const [method, { params, result }] of Object.entries(requests)) {
    assert.ok(params && result, method);
  }
});
