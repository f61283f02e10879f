import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { StdioTransport } from '../../../src/rpc/stdioTransport';

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
