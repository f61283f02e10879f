import { NEWLINE, PAGE_BYTES, PAST_THE_END, readRange, type ReadOutput } from './outputPages';
import type { ReplayStart } from './terminalReplayRange';

/**
 * `chooseReplayStart`'s rule (core/terminalReplayRange.ts: the newest `lines` newline-terminated
 * lines, never more than `maxBytes` before the end, then from the first line boundary within them
 * or mid-line) for a byte cap above the default (execBridge.reopenedTerminalReplayMiB): the output
 * is walked back from the end a range at a time and each range is scanned once, newest byte first,
 * then let go. `chooseReplayStart` keeps everything within the cap and looks at all of it again
 * each round: at 64 MiB with a scrollback that holds it all that was 15–27 s of the extension host's
 * time (its event loop held up to 0.4 s at a time) before the first byte; here it is one pass, a
 * range in memory (0.3–0.4 s, stalls under 50 ms).
 */

/** A start: the replay shows output event `seq` from byte `offset` on, and `shown` bytes in all. */
interface At {
  seq: number;
  offset: number;
  length: number;
  shown: number;
}

/**
 * Where a reopened terminal's replay starts, as `chooseReplayStart` finds it, in one backward pass;
 * undefined without the spool (the executor holds its 1 MiB window: `chooseReplayStart` reads it).
 */
export async function scanReplayStart(
  read: ReadOutput,
  o: { lines: number; scrollback: number; maxBytes: number },
): Promise<ReplayStart | undefined> {
  const probe = await read(0, 1);
  if (!probe.execBridgeSpooled) return undefined;
  const oldestHeldSeq = probe.chunks[0]?.seq ?? 0;
  const { lines, maxBytes } = o;
  const end = await read(PAST_THE_END, 1);
  const held =
    end.execBridgeOutputBytes !== undefined && end.execBridgeDroppedBytes !== undefined
      ? end.execBridgeOutputBytes - end.execBridgeDroppedBytes
      : undefined;
  /** `scanned`: every byte held was walked (the executor did not say how many it holds: those). */
  const result = (at: At | undefined, limit: ReplayStart['limit'], scanned: number | undefined, midLine = false): ReplayStart => ({
    // A start at the end of an event is the start of the next.
    afterSeq: at ? (at.offset >= at.length ? at.seq : at.seq - 1) : 0,
    skipBytes: at && at.offset < at.length ? at.offset : 0,
    limit,
    lines,
    scrollback: o.scrollback,
    maxBytes,
    notShownBytes: held !== undefined || scanned !== undefined ? Math.max(0, (held ?? scanned)! - (at?.shown ?? 0)) : undefined,
    midLine,
    oldestHeldSeq,
  });
  /** Bytes after the position being scanned (all newer output). */
  let after = 0;
  let newlines = 0;
  /** The oldest line start seen that is within the cap and shows something. */
  let lowest: At | undefined;
  /** The byte `maxBytes` before the end (a start inside a line longer than the cap). */
  let capAt: At | undefined;
  let oldest: At | undefined;
  let below = end.nextSeq;
  let readBytes = 0;
  let readSeqs = 0;
  let step = 4;
  // Each round reads about PAGE_BYTES * 2 further back and stops at the cap, the lines or the oldest seq.
  for (let round = 0; round < 1_000_000 && below > 1; round++) {
    // Sized by the average event so far, at most twice the last round's: newest events of a few bytes
    // (typed echoes) before 64 KiB ones must not make one round read the whole spool into memory.
    step = Math.min(step * 2, readBytes > 0 ? Math.max(1, Math.ceil((2 * PAGE_BYTES * readSeqs) / readBytes)) : 8);
    const from = Math.max(0, below - 1 - step);
    const got = await readRange(read, from, below);
    readSeqs += below - 1 - from;
    for (let i = got.length - 1; i >= 0; i--) {
      const { seq, data } = got[i]!;
      const length = data.length;
      readBytes += length;
      if (capAt === undefined && after < maxBytes && maxBytes <= after + length)
        capAt = { seq, offset: after + length - maxBytes, length, shown: maxBytes };
      for (let j = data.lastIndexOf(NEWLINE); j >= 0; j = j > 0 ? data.lastIndexOf(NEWLINE, j - 1) : -1) {
        const a = after + length - 1 - j;
        // Over the byte cap before enough lines: from the oldest line start within it, or mid-line.
        if (a > maxBytes) return lowest ? result(lowest, 'bytes', undefined) : result(capAt, 'bytes', undefined, true);
        if (++newlines > lines) return result({ seq, offset: j + 1, length, shown: a }, 'lines', undefined);
        if (a > 0) lowest = { seq, offset: j + 1, length, shown: a };
      }
      after += length;
      oldest = { seq, offset: 0, length, shown: after };
    }
    if (from < oldestHeldSeq || from === 0) break;
    below = from + 1;
  }
  // Everything held was scanned.
  if (after > maxBytes) return lowest ? result(lowest, 'bytes', after) : result(capAt, 'bytes', after, true);
  return result(oldest, 'none', after);
}
