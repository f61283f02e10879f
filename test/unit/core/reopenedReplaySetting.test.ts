/**
 * execBridge.reopenedTerminalReplayMiB (core/reopenedReplaySetting.ts): how it is read, and the
 * bounds it gives `chooseReplayStart` (core/terminalReplayRange.ts) over a spool held in memory.
 * Everything (0) against our real exec-server: test/integration/core/terminalReplayRange.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ProcessReadResult } from '../../../src/protocol';
import { MAX_REOPENED_REPLAY_MIB, replayBytesFromSetting } from '../../../src/core/reopenedReplaySetting';
import { chooseReplayStart, REPLAY_MAX_BYTES, type ReadOutput } from '../../../src/core/terminalReplayRange';

const MiB = 1024 * 1024;

describe('execBridge.reopenedTerminalReplayMiB', () => {
  test('unset: the default, 2 MiB, said nowhere', () => {
    assert.equal(REPLAY_MAX_BYTES, 2 * MiB);
    assert.deepEqual(replayBytesFromSetting(undefined), { maxBytes: 2 * MiB });
    assert.deepEqual(replayBytesFromSetting(null), { maxBytes: 2 * MiB });
    assert.deepEqual(replayBytesFromSetting(2), { maxBytes: 2 * MiB });
  });

  test('a number of MiB up to the spool’s largest cap: that many bytes; 0: everything held', () => {
    assert.deepEqual(replayBytesFromSetting(64), { maxBytes: 64 * MiB });
    assert.deepEqual(replayBytesFromSetting(0.5), { maxBytes: 512 * 1024 });
    assert.deepEqual(replayBytesFromSetting(MAX_REOPENED_REPLAY_MIB), { maxBytes: 1024 * MiB });
    assert.deepEqual(replayBytesFromSetting(1e-9), { maxBytes: 1 });
    assert.deepEqual(replayBytesFromSetting(0), { maxBytes: Number.POSITIVE_INFINITY });
  });

  test('anything else: the default, and a line for the log that says what was wrong and what applies', () => {
    for (const [bad, shown] of [
      [-1, '-1'],
      [1025, '1025'],
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      ['lots', '"lots"'],
      [true, 'true'],
      [{ mib: 4 }, '{"mib":4}'],
    ] as const) {
      const r = replayBytesFromSetting(bad);
      assert.equal(r.maxBytes, 2 * MiB, shown);
      assert.equal(
        r.problem,
        `execBridge.reopenedTerminalReplayMiB is ${shown}, not a number of MiB from 0 (everything the executor holds) to 1024: reopened terminals are given the default, at most the newest 2 MiB`,
      );
    }
  });
});

/** Line k: k in 15 digits and "\n". */
const line = (k: number) => String(k).padStart(15, '0') + '\n';
const LINE = 16;
/** Lines per output event (16 KiB, as a pipe gives them). */
const PER_EVENT = 1024;

/**
 * A spool held in memory, answering `process/read` as a spooling server does: events of
 * PER_EVENT numbered lines, the first `dropped` events gone (a cap), pages within the byte budget
 * (at least one event). Counts the bytes it hands out.
 */
function spool(events: number, dropped: number) {
  const data = (seq: number) => Buffer.from(Array.from({ length: PER_EVENT }, (_, i) => line((seq - 1) * PER_EVENT + i)).join(''));
  let handedOut = 0;
  const read: ReadOutput = (afterSeq, maxBytes) => {
    const chunks: ProcessReadResult['chunks'] = [];
    let bytes = 0;
    for (let seq = Math.max(afterSeq + 1, dropped + 1); seq <= events && (chunks.length === 0 || bytes < maxBytes); seq++) {
      const d = data(seq);
      bytes += d.length;
      chunks.push({ seq, stream: 'stdout', chunk: d.toString('base64') });
    }
    handedOut += bytes;
    const last = chunks.at(-1)?.seq;
    return Promise.resolve({
      chunks,
      nextSeq: last !== undefined ? last + 1 : events + 1,
      exited: false,
      exitCode: null,
      closed: false,
      sandboxDenied: false,
      execBridgeSpooled: true,
      execBridgeOutputBytes: events * PER_EVENT * LINE,
      execBridgeDroppedBytes: dropped * PER_EVENT * LINE,
    });
  };
  return { read, handedOut: () => handedOut, heldBytes: (events - dropped) * PER_EVENT * LINE };
}

describe('chooseReplayStart with the setting’s bounds', () => {
  test('a cap above what is held and a scrollback that holds it all: from the oldest held byte, nothing said not shown', async () => {
    // 4 MiB printed, the first MiB dropped: 3 MiB held; the setting at 8 MiB.
    const s = spool(256, 64);
    const r = await chooseReplayStart(s.read, { lines: 1_000_000, scrollback: 999_950, maxBytes: 8 * MiB });
    assert.equal(r.afterSeq, 64, 'the replay starts at the first held event');
    assert.equal(r.skipBytes, 0);
    assert.equal(r.limit, 'none');
    assert.equal(r.notShownBytes, 0);
    assert.equal(r.oldestHeldSeq, 65);
    assert.equal(r.maxBytes, 8 * MiB);
    // All of it is read to count its lines (pages run a little past each range asked).
    assert.ok(s.handedOut() <= s.heldBytes + MiB, `${s.handedOut()} bytes read`);
  });

  test('a cap below what is held: the newest cap bytes from a line boundary, the rest said not shown; no more read than the cap and a round', async () => {
    const s = spool(256, 64);
    const r = await chooseReplayStart(s.read, { lines: 1_000_000, scrollback: 999_950, maxBytes: 1.5 * MiB });
    assert.equal(r.limit, 'bytes');
    // 1.5 MiB is 96 whole events: the cut falls between events, at a line boundary. (Kept to exactly
    // the cap, such events were once read back to the oldest and called 'none': the notice said nothing.)
    assert.equal(r.afterSeq, 256 - 96);
    assert.equal(r.skipBytes, 0);
    assert.equal(r.notShownBytes, s.heldBytes - 1.5 * MiB);
    assert.ok(s.handedOut() <= 1.5 * MiB + MiB, `${s.handedOut()} bytes read`);
  });

  test('a large cap still gives only the lines the terminal holds, read from the end', async () => {
    const s = spool(256, 64);
    const r = await chooseReplayStart(s.read, { lines: 1500, scrollback: 1450, maxBytes: 64 * MiB });
    assert.equal(r.limit, 'lines');
    // 1500 lines back from the end of event 256: 476 into event 255.
    assert.equal(r.afterSeq, 254);
    assert.equal(r.skipBytes, (PER_EVENT - (1500 - PER_EVENT)) * LINE);
    assert.equal(r.notShownBytes, s.heldBytes - 1500 * LINE);
    assert.ok(s.handedOut() < MiB, `${s.handedOut()} bytes read`);
  });
});
