import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TextTail } from '../../../src/util/textTail';

test('keeps exactly the last `limit` characters, whatever the chunk sizes', () => {
  const tail = new TextTail(10);
  let all = '';
  for (const piece of ['', 'abc', 'defghijklmnop', 'q', '', 'rstuvwxyz0123456789', 'X']) {
    tail.append(piece);
    all += piece;
    assert.equal(tail.text(), all.slice(-10));
  }
  assert.equal(new TextTail(5).text(), '');
});

test('many small writes keep only what the tail needs', () => {
  const tail = new TextTail(1000);
  for (let i = 0; i < 100_000; i++) tail.append(`${i % 10}`.repeat(7));
  const text = tail.text();
  assert.equal(text.length, 1000);
  assert.equal(text.slice(-7), '9999999');
});
