import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundedOutput, leftOutMarker, utf8End, utf8Start } from '../../../src/cli/mcpOutput';

test('BoundedOutput: output within the limit comes back whole, no marker', () => {
  const o = new BoundedOutput(1024);
  o.push(Buffer.from('one\n'));
  o.push(Buffer.from('two\n'));
  assert.equal(o.text(), 'one\ntwo\n');
  assert.equal(o.totalBytes, 8);
  assert.equal(o.leftOutBytes, 0);
});

test('BoundedOutput: 50 MiB in 64 KiB chunks keeps a quarter of the limit from the start and the rest from the end, the marker between', () => {
  const limit = 16 * 1024;
  const o = new BoundedOutput(limit);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  o.push(Buffer.from('FIRST\n'));
  for (let i = 0; i < 800; i++) o.push(chunk);
  o.push(Buffer.from('\nLAST\n'));
  const total = 6 + 800 * chunk.length + 6;
  assert.equal(o.totalBytes, total);
  assert.equal(o.leftOutBytes, total - limit);
  const text = o.text();
  assert.ok(Buffer.byteLength(text) <= limit + Buffer.byteLength(leftOutMarker(total)) + 2, `${Buffer.byteLength(text)} bytes`);
  assert.ok(text.startsWith('FIRST\nxxx'));
  assert.ok(text.endsWith('xxx\nLAST\n'));
  const lines = text.split('\n');
  assert.ok(lines.includes(leftOutMarker(total - limit)), 'the marker line with the exact count');
  // The head is the first quarter, the tail the rest.
  const [head, tail] = text.split(`${leftOutMarker(total - limit)}\n`) as [string, string];
  assert.equal(Buffer.byteLength(head), limit / 4 + 1); // + the newline before the marker
  assert.equal(Buffer.byteLength(tail), limit - limit / 4);
});

test('BoundedOutput: the tail ring wraps across many small pushes and keeps the newest bytes in order', () => {
  const o = new BoundedOutput(40); // head 10, tail 30
  let all = '';
  for (let i = 0; i < 200; i++) {
    const s = `${i},`;
    all += s;
    o.push(Buffer.from(s));
  }
  const text = o.text();
  const [head, tail] = text.split(/\n\[… [\d,]+ bytes left out …\]\n/) as [string, string];
  assert.equal(head, all.slice(0, 10));
  assert.equal(tail, all.slice(-30));
  assert.equal(o.leftOutBytes, all.length - 40);
});

test('BoundedOutput: a cut through a UTF-8 character drops its pieces (counted as left out), never shows a broken character', () => {
  const o = new BoundedOutput(16); // head 4, tail 12
  // "aaa€" puts the 3-byte € across the head's end; the tail starts inside a "€" too.
  o.push(Buffer.from('aaa€' + 'b'.repeat(20) + '€€€€'));
  const text = o.text();
  assert.ok(!text.includes('\ufffd'), JSON.stringify(text));
  assert.ok(text.startsWith('aaa\n[… '));
  assert.ok(text.endsWith('€€€€'));
  const counted = Number(/\[… ([\d,]+) bytes left out …\]/.exec(text)![1]!.replace(/,/g, ''));
  assert.equal(counted + Buffer.byteLength('aaa') + Buffer.byteLength('€€€€'), o.totalBytes);
});

test('BoundedOutput: take() hands over what came since the last take and starts over', () => {
  const o = new BoundedOutput(1024);
  o.push(Buffer.from('a'));
  assert.deepEqual(o.take(), { text: 'a', bytes: 1, leftOut: 0 });
  assert.deepEqual(o.take(), { text: '', bytes: 0, leftOut: 0 });
  o.push(Buffer.from('b'));
  assert.equal(o.text(), 'b');
});

test('utf8End / utf8Start: boundaries of cut sequences', () => {
  const euro = Buffer.from('€'); // e2 82 ac
  assert.equal(utf8End(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)])), 1);
  assert.equal(utf8End(Buffer.concat([Buffer.from('a'), euro])), 4);
  assert.equal(utf8End(Buffer.from('abc')), 3);
  assert.equal(utf8Start(Buffer.concat([euro.subarray(1), Buffer.from('a')])), 2);
  assert.equal(utf8Start(Buffer.from('abc')), 0);
});
