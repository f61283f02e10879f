import assert from 'node:assert/strict';
import { test } from 'node:test';
import { matchPreview } from '../../../src/core/matchPreview';

const line = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');

test('a line within the limit is previewed whole, its ranges as they are', () => {
  const m = { text: 'let x = "needle";', ranges: [{ start: 9, end: 15 }] };
  assert.deepEqual(matchPreview(m, 100), m);
  assert.deepEqual(matchPreview(m, m.text.length), m);
});

test('a long line is cut to start 40 characters before its first match, the ranges moved with it', () => {
  const text = line(300);
  const p = matchPreview({ text, ranges: [{ start: 100, end: 110 }] }, 50);
  assert.equal(p.text, text.slice(60, 110));
  assert.deepEqual(p.ranges, [{ start: 40, end: 50 }]);
  assert.equal(p.text.slice(40, 50), text.slice(100, 110));
});

test('a match near the start keeps the line from its beginning; one near the end keeps the last `max` characters', () => {
  const text = line(300);
  assert.deepEqual(matchPreview({ text, ranges: [{ start: 10, end: 12 }] }, 50), {
    text: text.slice(0, 50),
    ranges: [{ start: 10, end: 12 }],
  });
  assert.deepEqual(matchPreview({ text, ranges: [{ start: 290, end: 295 }] }, 50), {
    text: text.slice(250),
    ranges: [{ start: 40, end: 45 }],
  });
});

test('ranges past the preview are dropped and one that runs over its end is clipped', () => {
  const text = line(300);
  const p = matchPreview(
    {
      text,
      ranges: [
        { start: 100, end: 104 },
        { start: 105, end: 130 },
        { start: 200, end: 210 },
      ],
    },
    50,
  );
  assert.equal(p.text, text.slice(60, 110));
  assert.deepEqual(p.ranges, [
    { start: 40, end: 44 },
    { start: 45, end: 50 },
  ]);
});
