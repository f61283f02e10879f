import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AGENT_OUTPUT_LIMIT, BoundedOutput, forModel, leftOutMarker, outputBound } from '../../../src/core/agentOutput';

test('output within the bound is given whole, without a marker', () => {
  const o = new BoundedOutput({ head: 8, tail: 8 });
  o.push(Buffer.from('hello '));
  o.push(Buffer.from('world\n'));
  assert.equal(o.text(), 'hello world\n');
  assert.equal(o.leftOutBytes, 0);
});

test('a flood keeps its head and its tail, and says how many bytes were left out between them', () => {
  const o = new BoundedOutput({ head: 10, tail: 10 });
  o.push(Buffer.from('0123456789abcdef'));
  for (let i = 0; i < 1000; i++) o.push(Buffer.from('x'.repeat(97) + '\n'));
  o.push(Buffer.from('THE END!!\n'));
  const text = o.text();
  assert.ok(text.startsWith('0123456789\n'), text);
  assert.ok(text.endsWith('\nTHE END!!\n'), text);
  assert.equal(o.totalBytes, 16 + 98_000 + 10);
  assert.ok(text.includes(leftOutMarker(16 + 98_000 + 10 - 20)), text);
});

test('50 MiB through the default bound: at most the bound (plus the marker line) is kept and given', () => {
  const o = new BoundedOutput();
  const chunk = Buffer.from('y\n'.repeat(32 * 1024));
  for (let i = 0; i < (50 * 1024 * 1024) / chunk.length; i++) o.push(chunk);
  const text = o.text();
  assert.equal(o.totalBytes, 50 * 1024 * 1024);
  assert.ok(Buffer.byteLength(text) <= AGENT_OUTPUT_LIMIT + 120, `${Buffer.byteLength(text)} bytes`);
  assert.match(text, /\[… 52,412,416 bytes left out; the full output is in the terminal …\]/);
  const { head, tail } = outputBound();
  assert.equal(head + tail, AGENT_OUTPUT_LIMIT);
  assert.ok(tail > head, 'more of the end, where errors are');
});

test('cuts never split a UTF-8 character (the bytes of a cut character count as left out)', () => {
  const o = new BoundedOutput({ head: 4, tail: 4 });
  o.push(Buffer.from('aéé' + 'z'.repeat(50) + 'ééb')); // é is two bytes
  const text = o.text();
  assert.doesNotMatch(text, /\uFFFD/);
  assert.ok(text.startsWith('aé\n'), JSON.stringify(text));
  assert.ok(text.endsWith('\néb'), JSON.stringify(text));
  const leftOut = Number(/\[… ([\d,]+) bytes/.exec(text)![1]!.replace(/,/g, ''));
  assert.equal(leftOut, Buffer.byteLength('aéé' + 'z'.repeat(50) + 'ééb') - Buffer.byteLength('aé') - Buffer.byteLength('éb'));
});

test('take() gives what came since the last take, then starts over', () => {
  const o = new BoundedOutput({ head: 100, tail: 100 });
  o.push(Buffer.from('first\n'));
  assert.deepEqual(o.take(), { text: 'first\n', bytes: 6, leftOut: 0 });
  assert.deepEqual(o.take(), { text: '', bytes: 0, leftOut: 0 });
  o.push(Buffer.from('second\n'));
  assert.equal(o.take().text, 'second\n');
});

test('for a model: no escape codes, CRLF as LF, a progress line redrawn with CR as its last state', () => {
  assert.equal(forModel('\x1b[31merror\x1b[0m: x\r\n'), 'error: x\n');
  assert.equal(forModel('\x1b]0;title\x07done\n'), 'done\n');
  assert.equal(forModel('10%\r50%\r100%\nnext\n'), '100%\nnext\n');
  assert.equal(forModel('cut mid-line\r'), 'cut mid-line');
});
