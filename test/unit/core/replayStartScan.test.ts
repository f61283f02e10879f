/**
 * `scanReplayStart` (core/replayStartScan.ts), the one-pass walk a byte cap above the default uses,
 * against `chooseReplayStart` (core/terminalReplayRange.ts) over spools held in memory: the same
 * start, limit and notice figures for random output, line lengths, caps and scrollbacks, each byte
 * read about once. Against our real exec-server: test/integration/core/terminalReplayRange.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ProcessReadResult } from '../../../src/protocol';
import { scanReplayStart } from '../../../src/core/replayStartScan';
import { chooseReplayStart, type ReadOutput } from '../../../src/core/terminalReplayRange';

const MiB = 1024 * 1024;

/** A small deterministic generator (mulberry32): a failure names its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A spool of `events` (seq 1..n), the first `dropped` gone, answering `process/read` as a spooling server does. */
function spool(events: Buffer[], dropped: number) {
  const encoded = events.map((e) => e.toString('base64'));
  const total = events.reduce((n, e) => n + e.length, 0);
  const droppedBytes = events.slice(0, dropped).reduce((n, e) => n + e.length, 0);
  let handedOut = 0;
  const read: ReadOutput = (afterSeq, maxBytes) => {
    const chunks: ProcessReadResult['chunks'] = [];
    let bytes = 0;
    for (let seq = Math.max(afterSeq + 1, dropped + 1); seq <= events.length && (chunks.length === 0 || bytes < maxBytes); seq++) {
      bytes += events[seq - 1]!.length;
      chunks.push({ seq, stream: 'stdout', chunk: encoded[seq - 1]! });
    }
    handedOut += bytes;
    const last = chunks.at(-1)?.seq;
    return Promise.resolve({
      chunks,
      nextSeq: last !== undefined ? last + 1 : events.length + 1,
      exited: false,
      exitCode: null,
      closed: false,
      sandboxDenied: false,
      execBridgeSpooled: true,
      execBridgeOutputBytes: total,
      execBridgeDroppedBytes: droppedBytes,
    });
  };
  return { read, handedOut: () => handedOut, held: total - droppedBytes };
}

/** Random output: `n` events of 1..maxEvent bytes, lines of 0..maxLine bytes (sometimes none at all). */
function output(next: () => number, n: number, maxEvent: number, maxLine: number): Buffer[] {
  const events: Buffer[] = [];
  let untilNewline = Math.floor(next() * (maxLine + 1));
  for (let i = 0; i < n; i++) {
    const b = Buffer.alloc(1 + Math.floor(next() * maxEvent), 0x61);
    for (let j = 0; j < b.length; j++) {
      if (untilNewline-- > 0) continue;
      b[j] = 0x0a;
      untilNewline = Math.floor(next() * (maxLine + 1));
    }
    events.push(b);
  }
  return events;
}

async function same(seed: number, o: { n: number; maxEvent: number; maxLine: number }) {
  const next = random(seed);
  const events = output(next, o.n, o.maxEvent, o.maxLine);
  const dropped = next() < 0.5 ? Math.floor(next() * o.n * 0.5) : 0;
  const total = events.reduce((n, e) => n + e.length, 0);
  // A fifth each: everything fits (from the oldest held byte), the cap binds (small caps), else anything.
  const kind = next();
  const lines = kind < 0.2 ? total + 1 : Math.floor(next() * next() * (total / Math.max(1, o.maxLine / 2)));
  const maxBytes = 1 + Math.floor(next() * total * (kind < 0.2 ? 2 : kind < 0.4 ? 0.2 : 1.2));
  const scrollback = Math.max(0, lines - 5);
  const a = spool(events, dropped);
  const b = spool(events, dropped);
  const scanned = await scanReplayStart(a.read, { lines, scrollback, maxBytes });
  const chosen = await chooseReplayStart(b.read, { lines, scrollback, maxBytes });
  assert.deepEqual(
    scanned,
    chosen,
    `seed ${seed}: ${o.n} events, ${total} bytes, dropped ${dropped}, lines ${lines}, maxBytes ${maxBytes}`,
  );
  return { a, scanned };
}

describe('scanReplayStart: chooseReplayStart’s start in one pass', () => {
  test('the same start for random output, caps and scrollbacks (small events, short and long lines)', async () => {
    for (let seed = 1; seed <= 400; seed++) await same(seed, { n: 1 + (seed % 40), maxEvent: 200, maxLine: seed % 3 === 0 ? 400 : 30 });
  });

  test('the same over several rounds of reading back (MiBs of output)', async () => {
    for (let seed = 1001; seed <= 1012; seed++)
      await same(seed, { n: 60 + (seed % 40), maxEvent: 64 * 1024, maxLine: seed % 2 ? 200 : 100_000 });
  });

  test('a cap and a scrollback that hold all 16 MiB: from the oldest held byte, each byte read about once', async () => {
    const line = (k: number) => String(k).padStart(15, '0') + '\n';
    const events = Array.from({ length: 1024 }, (_, e) => Buffer.from(Array.from({ length: 1024 }, (_, i) => line(e * 1024 + i)).join('')));
    const s = spool(events, 64);
    const r = await scanReplayStart(s.read, { lines: 2_000_000, scrollback: 1_999_950, maxBytes: 64 * MiB });
    assert.ok(r);
    assert.equal(r.afterSeq, 64);
    assert.equal(r.skipBytes, 0);
    assert.equal(r.limit, 'none');
    assert.equal(r.notShownBytes, 0);
    // One pass: what is held, and what the pages run past the range asked (chooseReplayStart rescans the kept tail every round).
    assert.ok(s.handedOut() <= s.held * 1.1 + MiB, `${s.handedOut()} bytes read of ${s.held}`);
  });

  test('without the spool: undefined (chooseReplayStart reads the window)', async () => {
    const read: ReadOutput = () =>
      Promise.resolve({ chunks: [], nextSeq: 1, exited: false, exitCode: null, closed: false, sandboxDenied: false });
    assert.equal(await scanReplayStart(read, { lines: 10, scrollback: 5, maxBytes: 8 * MiB }), undefined);
  });
});
