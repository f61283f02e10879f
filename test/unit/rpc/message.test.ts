import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMessage } from '../../../src/rpc/message';

test('classifies requests, notifications, responses and errors', () => {
  assert.deepEqual(parseMessage('{"id":1,"method":"m","params":{}}'), { kind: 'request', id: 1, method: 'm', params: {} });
  assert.deepEqual(parseMessage('{"id":"s","method":"m"}'), { kind: 'request', id: 's', method: 'm', params: undefined });
  assert.deepEqual(parseMessage('{"method":"n","params":[1]}'), { kind: 'notification', method: 'n', params: [1] });
  assert.deepEqual(parseMessage('{"id":2,"result":{"a":1}}'), { kind: 'response', id: 2, result: { a: 1 } });
  assert.deepEqual(parseMessage('{"error":{"code":-32600,"message":"x"},"id":-1}'), {
    kind: 'error',
    id: -1,
    error: { code: -32600, message: 'x' },
  });
  // The "jsonrpc" member is tolerated and ignored.
  assert.equal(parseMessage('{"jsonrpc":"2.0","id":3,"method":"m"}').kind, 'request');
});

test('rejects what the real server rejects as malformed', () => {
  for (const text of [
    '{not json',
    '42',
    '[]',
    '[{"id":1,"method":"m"}]',
    '{}',
    'null',
    '{"id":99.5,"method":"m"}',
    '{"id":null,"method":"m"}',
    '{"id":1,"method":7}',
  ]) {
    assert.equal(parseMessage(text).kind, 'malformed', text);
  }
});
