import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AGENT_OUTPUT_LIMIT,
  BoundedOutput,
  forModel,
  FULL_OUTPUT_IN_TERMINAL,
  leftOutMarker,
  outputBound,
  utf8End,
  utf8Start,
} from '../../../src/core/agentOutput';

test('output within the bound is given whole, without a marker', () => {
  const o = new BoundedOutput({ head: 8, tail: 8 });
  o.push(Buffer.from('hello '));
  o.push(Buffer.from('world\n'));
  assert.equal(o.text(), 'hello world\n');
  assert.equal(o.totalBytes, 12);
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
  assert.ok(text.includes(`\n${leftOutMarker(16 + 98_000 + 10 - 20)}\n`), text);
});

test('the marker: the count alone, or with a note of where the rest is (the extension: the terminal)', () => {
  assert.equal(leftOutMarker(52_428_800), '[… 52,428,800 bytes left out …]');
  assert.equal(leftOutMarker(1234, FULL_OUTPUT_IN_TERMINAL), '[… 1,234 bytes left out; the full output is in the terminal …]');
  const plain = new BoundedOutput({ head: 2, tail: 2 });
  const noted = new BoundedOutput({ head: 2, tail: 2 }, FULL_OUTPUT_IN_TERMINAL);
  for (const o of [plain, noted]) o.push(Buffer.from('ab-cut-out-yz'));
  assert.equal(plain.text(), 'ab\n[… 9 bytes left out …]\nyz');
  assert.equal(noted.text(), 'ab\n[… 9 bytes left out; the full output is in the terminal …]\nyz');
});

test('50 MiB through the default bound in 64 KiB chunks: a quarter of the bound from the start, the rest from the end, the marker between', () => {
  const o = new BoundedOutput(outputBound(), FULL_OUTPUT_IN_TERMINAL);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  o.push(Buffer.from('FIRST\n'));
  for (let i = 0; i < 800; i++) o.push(chunk);
  o.push(Buffer.from('\nLAST\n'));
  const total = 6 + 800 * chunk.length + 6;
  assert.equal(o.totalBytes, total);
  assert.equal(o.leftOutBytes, total - AGENT_OUTPUT_LIMIT);
  const text = o.text();
  const marker = leftOutMarker(total - AGENT_OUTPUT_LIMIT, FULL_OUTPUT_IN_TERMINAL);
  assert.ok(Buffer.byteLength(text) <= AGENT_OUTPUT_LIMIT + Buffer.byteLength(marker) + 2, `${Buffer.byteLength(text)} bytes`);
  assert.ok(text.startsWith('FIRST\nxxx'));
  assert.ok(text.endsWith('xxx\nLAST\n'));
  assert.ok(
    text.includes(`\n[… ${(total - AGENT_OUTPUT_LIMIT).toLocaleString('en-US')} bytes left out; the full output is in the terminal …]\n`),
  );
  const [head, tail] = text.split(`${marker}\n`) as [string, string];
  const bound = outputBound();
  assert.equal(bound.head + bound.tail, AGENT_OUTPUT_LIMIT);
  assert.ok(bound.tail > bound.head, 'more of the end, where errors are');
  assert.equal(Buffer.byteLength(head), bound.head + 1); // + the newline before the marker
  assert.equal(Buffer.byteLength(tail), bound.tail);
});

test('another limit (exec-bridge mcp --max-output-bytes) splits the same way', () => {
  assert.deepEqual(outputBound(1024), { head: 256, tail: 768 });
  assert.deepEqual(outputBound(1025), { head: 256, tail: 769 });
});

test('the tail ring wraps across many small pushes and keeps the newest bytes in order', () => {
  const o = new BoundedOutput(outputBound(40)); // head 10, tail 30
  let all = '';
  for (let i = 0; i < 200; i++) {
    const s = `${i},`;
    all += s;
    o.push(Buffer.from(s));
  }
  const [head, tail] = o.text().split(/\n\[… [\d,]+ bytes left out …\]\n/) as [string, string];
  assert.equal(head, all.slice(0, 10));
  assert.equal(tail, all.slice(-30));
  assert.equal(o.leftOutBytes, all.length - 40);
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

  // A three-byte character across the head's end, the tail starting inside another.
  const e = new BoundedOutput(outputBound(16)); // head 4, tail 12
  e.push(Buffer.from('aaa€' + 'b'.repeat(20) + '€€€€'));
  const t = e.text();
  assert.doesNotMatch(t, /\uFFFD/);
  assert.ok(t.startsWith('aaa\n[… '), JSON.stringify(t));
  assert.ok(t.endsWith('€€€€'), JSON.stringify(t));
  const counted = Number(/\[… ([\d,]+) bytes left out …\]/.exec(t)![1]!.replace(/,/g, ''));
  assert.equal(counted + Buffer.byteLength('aaa') + Buffer.byteLength('€€€€'), e.totalBytes);
});

test('utf8End / utf8Start: the boundaries of cut sequences', () => {
  const euro = Buffer.from('€'); // e2 82 ac
  assert.equal(utf8End(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)])), 1);
  assert.equal(utf8End(Buffer.concat([Buffer.from('a'), euro])), 4);
  assert.equal(utf8End(Buffer.from('abc')), 3);
  assert.equal(utf8Start(Buffer.concat([euro.subarray(1), Buffer.from('a')])), 2);
  assert.equal(utf8Start(Buffer.from('abc')), 0);
});

test('take() gives what came since the last take, then starts over', () => {
  const o = new BoundedOutput({ head: 100, tail: 100 });
  o.push(Buffer.from('first\n'));
  assert.deepEqual(o.take(), { text: 'first\n', bytes: 6, leftOut: 0 });
  assert.deepEqual(o.take(), { text: '', bytes: 0, leftOut: 0 });
  o.push(Buffer.from('second\n'));
  assert.equal(o.take().text, 'second\n');
  // After a take that had left bytes out, the ring starts empty too.
  const f = new BoundedOutput({ head: 2, tail: 2 });
  f.push(Buffer.from('abcdefgh'));
  assert.equal(f.take().leftOut, 4);
  f.push(Buffer.from('xy'));
  assert.deepEqual(f.take(), { text: 'xy', bytes: 2, leftOut: 0 });
});

test('for a model: no escape codes, CRLF as LF, a progress line redrawn with CR as its last state', () => {
  assert.equal(forModel('\x1b[31merror\x1b[0m: x\r\n'), 'error: x\n');
  assert.equal(forModel('\x1b]0;title\x07done\n'), 'done\n');
  assert.equal(forModel('10%\r50%\r100%\nnext\n'), '100%\nnext\n');
  assert.equal(forModel('cut mid-line\r'), 'cut mid-line');
  // Through the bounder, on both sides of the marker.
  const o = new BoundedOutput({ head: 12, tail: 16 });
  o.push(Buffer.from('\x1b[1mbold\x1b[0m\r\n' + '-'.repeat(100) + '\r\n\x1b[32mok\x1b[0m\r\n'));
  // 12 + 2 + 100 + 2 + 13 bytes: the CRLF after the head and 99 of the dashes are left out.
  assert.equal(o.text(), 'bold\n[… 101 bytes left out …]\n-\nok\n');
});
