import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BINARY_RESULT_HEADROOM, BinaryResult, decodeBinaryResult, encodeBinaryResult } from '../../../src/protocol/binaryOutput';

/** A result whose data sits after `headroom` spare bytes of its own memory (as readWhole leaves them). */
function withRoom(data: Buffer, headroom: number): BinaryResult {
  const whole = Buffer.alloc(headroom + data.length, 0xee);
  data.copy(whole, headroom);
  return new BinaryResult(whole.subarray(headroom), headroom);
}

test('a result with room in front is framed in place: the same bytes as a copied frame, no new memory', () => {
  const data = Buffer.from('the bytes of a file\n'.repeat(1000));
  for (const id of [7, 123456789, 'req-1', 'é']) {
    const copied = encodeBinaryResult(id, data);
    const result = withRoom(data, BINARY_RESULT_HEADROOM);
    const inPlace = encodeBinaryResult(id, result);
    assert.ok(inPlace.equals(copied), `same frame for id ${String(id)}`);
    assert.equal(inPlace.buffer, result.data.buffer, 'written into the result’s own memory');
    assert.deepEqual(decodeBinaryResult(inPlace), { id, data });
    assert.ok(result.data.equals(data), 'the data itself untouched');
  }
});

test('without enough room (an id longer than the headroom, or none) the frame is a copy and the result is untouched', () => {
  const data = Buffer.from('abc');
  const longId = 'x'.repeat(BINARY_RESULT_HEADROOM);
  const result = withRoom(data, BINARY_RESULT_HEADROOM);
  const before = Buffer.from(result.data.buffer, result.data.byteOffset - BINARY_RESULT_HEADROOM, BINARY_RESULT_HEADROOM + 3);
  const snapshot = Buffer.from(before);
  const frame = encodeBinaryResult(longId, result);
  assert.notEqual(frame.buffer, result.data.buffer);
  assert.deepEqual(decodeBinaryResult(frame), { id: longId, data });
  assert.ok(before.equals(snapshot), 'nothing written in front of the data');
  const plain = encodeBinaryResult(1, new BinaryResult(data));
  assert.deepEqual(decodeBinaryResult(plain), { id: 1, data });
});
