import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeBase64Result, encodeResult } from '../../../src/rpc/message';

test('encodeBase64Result is encodeResult of {dataBase64} byte for byte (every padding, chunk edges, string ids)', () => {
  const step = 3 * 256 * 1024;
  const sizes = [0, 1, 2, 3, 4, 5, step - 1, step, step + 1, 2 * step + 2, 3 * step + 7];
  const ids: Array<number | string> = [0, 7, 2 ** 53 - 1, 'r1', 'with "quotes" \\ and ü'];
  for (const size of sizes) {
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i++) data[i] = (i * 7919 + 13) & 0xff;
    for (const id of ids) {
      const expected = Buffer.from(encodeResult(id, { dataBase64: data.toString('base64') }), 'utf8');
      assert.ok(encodeBase64Result(id, data).equals(expected), `size ${size}, id ${JSON.stringify(id)}`);
    }
  }
});
