import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineSplitter, type LineOverflow } from '../../../src/util/lineSplitter';

function splitter(overflow: LineOverflow, maxLineBytes = 8) {
  const lines: string[] = [];
  let overflows = 0;
  const s = new LineSplitter({ maxLineBytes, overflow, onLine: (l) => lines.push(l.toString()), onOverflow: () => overflows++ });
  return { s, lines, overflows: () => overflows };
}

test('LineSplitter: lines across chunks, several in one chunk, the rest held until takeRest', () => {
  const { s, lines } = splitter('discard', 100);
  s.push(Buffer.from('ab'));
  s.push(Buffer.from('c\nde\n\nf'));
  s.push(Buffer.from('g\r\nhi'));
  assert.deepEqual(lines, ['abc', 'de', '', 'fg\r']);
  assert.equal(s.takeRest()?.toString(), 'hi');
  assert.equal(s.takeRest(), undefined);
});

test('LineSplitter discard: an oversized line is dropped through its newline, once reported, and the next line counts', () => {
  const { s, lines, overflows } = splitter('discard');
  s.push(Buffer.from('ok\n0123'));
  s.push(Buffer.from('456789'));
  assert.equal(overflows(), 1);
  s.push(Buffer.from('still the long line'));
  s.push(Buffer.from(' end\nnext\npart'));
  assert.deepEqual(lines, ['ok', 'next']);
  assert.equal(overflows(), 1);
  assert.equal(s.takeRest()?.toString(), 'part');
});

test('LineSplitter discard: nothing of a line being discarded comes out of takeRest', () => {
  const { s } = splitter('discard');
  s.push(Buffer.from('0123456789'));
  assert.equal(s.takeRest(), undefined);
});

test('LineSplitter stop: an oversized line is reported and nothing after it is split', () => {
  const { s, lines, overflows } = splitter('stop');
  s.push(Buffer.from('ok\n0123456789'));
  s.push(Buffer.from('\nlater\n'));
  assert.deepEqual(lines, ['ok']);
  assert.equal(overflows(), 1);
});

test('LineSplitter stop(): the owner closing ends the splitting, even mid-chunk', () => {
  const lines: string[] = [];
  const s = new LineSplitter({
    maxLineBytes: 100,
    overflow: 'stop',
    onLine: (l) => (lines.push(l.toString()), lines.length === 1 && s.stop()),
    onOverflow: () => undefined,
  });
  s.push(Buffer.from('a\nb\nc'));
  assert.deepEqual(lines, ['a']);
  assert.equal(s.takeRest(), undefined);
});
