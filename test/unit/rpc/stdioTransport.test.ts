import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { StdioTransport } from '../../../src/rpc/stdioTransport';
import { MAX_FRAME_BYTES } from '../../../src/rpc/transport';

const tick = () => new Promise((r) => setImmediate(r));

test('a paused stdio transport reads nothing until resumed, then delivers everything in order', async () => {
  const input = new PassThrough();
  const t = new StdioTransport(input, new PassThrough());
  const got: string[] = [];
  t.onMessage((m) => got.push(m));
  input.write('{"a":1}\n');
  await tick();
  assert.deepEqual(got, ['{"a":1}']);
  t.pause();
  input.write('{"b":2}\n{"c":3}\n');
  await tick();
  assert.deepEqual(got, ['{"a":1}'], 'nothing read while paused');
  t.resume();
  await tick();
  assert.deepEqual(got, ['{"a":1}', '{"b":2}', '{"c":3}']);
  t.close();
});

test('lines split across chunks arrive whole; a line past the frame limit closes the transport and nothing after it is read', async () => {
  const input = new PassThrough();
  const t = new StdioTransport(input, new PassThrough());
  const got: string[] = [];
  let reason: string | undefined;
  t.onMessage((m) => got.push(m));
  t.onClose((r) => (reason = r));
  input.write('{"a":');
  input.write('1}\r\n\n{"b":2}\n');
  await tick();
  assert.deepEqual(got, ['{"a":1}', '{"b":2}']);
  input.write(Buffer.alloc(MAX_FRAME_BYTES + 1, 0x20));
  await tick();
  assert.equal(t.isClosed, true);
  assert.equal(reason, `frame larger than ${MAX_FRAME_BYTES} bytes`);
  assert.equal(t.messageTooLarge, true, 'the close says it was for size (the client then fails the read instead of repeating it)');
  input.write('\n{"c":3}\n');
  await tick();
  assert.deepEqual(got, ['{"a":1}', '{"b":2}']);
});
