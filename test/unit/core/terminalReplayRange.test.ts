/**
 * What a reopened terminal replays (core/terminalReplayRange.ts), as pure logic: where the replay
 * cuts, the notice and the terminal size. Against our real exec-server:
 * test/integration/core/terminalReplayRange.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cutTail, mib, reopenNotice, terminalLines, type TailChunk } from '../../../src/core/terminalReplayRange';

const MiB = 1024 * 1024;

const chunks = (...parts: string[]): TailChunk[] => parts.map((p, i) => ({ seq: i + 1, data: Buffer.from(p) }));
/** The bytes from a cut on. */
const from = (tail: TailChunk[], cut: { index: number; offset: number }) =>
  Buffer.concat([
    tail[cut.index]?.data.subarray(cut.offset) ?? Buffer.alloc(0),
    ...tail.slice(cut.index + 1).map((c) => c.data),
  ]).toString();

describe('cutTail: where the replay starts', () => {
  test('after the newline before the last `lines` lines, inside a chunk', () => {
    const tail = chunks('a\nb\nc', '\nd\n', 'e\n');
    const cut = cutTail(tail, 2, 1000, false)!;
    assert.deepEqual(cut, { index: 1, offset: 1, limit: 'lines', midLine: false });
    assert.equal(from(tail, cut), 'd\ne\n');
  });

  test('a last line without its newline (a prompt) comes on top of the lines', () => {
    const tail = chunks('1\n2\n3\n$ ');
    const cut = cutTail(tail, 2, 1000, false)!;
    assert.equal(from(tail, cut), '2\n3\n$ ');
  });

  test('a cut right after a chunk that ends with the newline starts at the next chunk', () => {
    const tail = chunks('x\n', 'y\n', 'z\n');
    const cut = cutTail(tail, 2, 1000, false)!;
    assert.deepEqual(cut, { index: 1, offset: 0, limit: 'lines', midLine: false });
  });

  test('fewer lines than asked: everything, when it is all the executor holds; else undefined (read further back)', () => {
    const tail = chunks('a\n', 'b');
    assert.deepEqual(cutTail(tail, 5, 1000, true), { index: 0, offset: 0, limit: 'none', midLine: false });
    assert.equal(cutTail(tail, 5, 1000, false), undefined);
    assert.deepEqual(cutTail([], 5, 1000, true), { index: 0, offset: 0, limit: 'none', midLine: false });
  });

  test('the byte cap: at the first line boundary within the newest maxBytes', () => {
    const tail = chunks('aaaa\nbbbb\n', 'cccc\ndd');
    const cut = cutTail(tail, 100, 10, false)!;
    assert.equal(cut.limit, 'bytes');
    assert.equal(from(tail, cut), 'cccc\ndd');
    assert.equal(cut.midLine, false);
  });

  test('a line longer than the cap: the newest maxBytes of it, mid-line', () => {
    const tail = chunks('x'.repeat(30), 'y'.repeat(30));
    const cut = cutTail(tail, 100, 20, false)!;
    assert.deepEqual(cut, { index: 1, offset: 10, limit: 'bytes', midLine: true });
    // Its only newline is the last byte: nothing would be shown after it, so the cap's bytes are.
    const ends = chunks('x'.repeat(40) + '\n');
    assert.equal(from(ends, cutTail(ends, 100, 20, false)!), 'x'.repeat(19) + '\n');
  });

  test('exactly maxBytes from a newline is still within the cap', () => {
    const tail = chunks('aa\nbbbb\n');
    assert.equal(from(tail, cutTail(tail, 100, 5, false)!), 'bbbb\n');
  });
});

describe('the notice and the terminal size', () => {
  test('scrollback from the setting (else 1000) plus rows (else 50)', () => {
    assert.deepEqual(terminalLines(500, 30), { lines: 530, scrollback: 500 });
    assert.deepEqual(terminalLines(undefined, undefined), { lines: 1050, scrollback: 1000 });
    assert.deepEqual(terminalLines('lots', 0), { lines: 1050, scrollback: 1000 });
  });

  test('says what is not shown, why, where it is, and what the cap dropped', () => {
    const replay = { limit: 'lines' as const, notShownBytes: 63.2 * MiB, scrollback: 1000, oldestHeldSeq: 9, maxBytes: 2 * MiB };
    assert.equal(
      reopenNotice({ evictedBefore: 9, droppedBytes: 136.8 * MiB, spoolCapBytes: 64 * MiB, replay }),
      "↻ reopened after the window reload; 63.2 MiB of earlier output is not shown here (more than the terminal's 1000 lines of scrollback): Exec Bridge: Open Full Output; 136.8 MiB before that was dropped (spool cap 64 MiB)",
    );
    assert.equal(
      reopenNotice({
        evictedBefore: 0,
        droppedBytes: 0,
        spoolCapBytes: 64 * MiB,
        replay: { ...replay, limit: 'bytes', notShownBytes: undefined },
      }),
      '↻ reopened after the window reload; earlier output is not shown here (the terminal is given at most the newest 2 MiB): Exec Bridge: Open Full Output',
    );
    assert.equal(
      reopenNotice({ evictedBefore: 0, droppedBytes: 0, spoolCapBytes: 64 * MiB, replay: { ...replay, limit: 'none' } }),
      '↻ reopened after the window reload',
    );
    // No spool (a codex-style executor): its window lost older output.
    assert.equal(
      reopenNotice({ evictedBefore: 40, replay: { ...replay, notShownBytes: 5000 } }),
      "↻ reopened after the window reload; 5 KiB of earlier output is not shown here (more than the terminal's 1000 lines of scrollback): Exec Bridge: Open Full Output; the executor no longer holds its oldest output (it keeps the newest 1 MiB)",
    );
    assert.equal(mib(8 * MiB), '8 MiB');
    assert.equal(mib(0.25 * MiB), '0.3 MiB');
  });
});
