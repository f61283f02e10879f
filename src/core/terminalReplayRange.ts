import type { ExecServerClient } from '../client';
import { NEWLINE, PAGE_BYTES, PAST_THE_END, readRange, type ReadOutput } from './outputPages';
import { scanReplayStart } from './replayStartScan';
import { replayModes } from './terminalModes';

/**
 * What a reopened terminal replays (docs/architecture.md "Output spool"): the newest part of what
 * the executor holds that the terminal can keep. xterm keeps `terminal.integrated.scrollback` lines
 * plus its rows and parses then throws away everything before them, at about 2 M characters a
 * second: replaying a 64 MiB spool took half a minute and kept the window busy for nothing. So the
 * replay starts `lines` newline-terminated lines before the end (at a line boundary), at most
 * `REPLAY_MAX_BYTES` before it; the rest is one command away (Exec Bridge: Open Full Output,
 * ./terminalFullOutput.ts).
 */

/** The most a reopened terminal is given of what was printed before it: about a second of parsing. */
export const REPLAY_MAX_BYTES = 2 * 1024 * 1024;
/** VS Code's default `terminal.integrated.scrollback`. */
export const DEFAULT_SCROLLBACK = 1000;
/** Rows when the terminal did not say (it opened hidden). */
const DEFAULT_ROWS = 50;
export type { ReadOutput } from './outputPages';

/** One output event, decoded. */
export interface TailChunk {
  seq: number;
  data: Buffer;
}

/** Where a reopened terminal's replay starts. */
export interface ReplayStart {
  /** Replay the output after this seq (0: from the oldest byte held). */
  afterSeq: number;
  /** Bytes at the start of output event `afterSeq + 1` that are not shown (the rest of a line before the cut). */
  skipBytes: number;
  /** What set the start: nothing (everything held is replayed), the terminal's lines, or the byte cap. */
  limit: 'none' | 'lines' | 'bytes';
  /** Lines the terminal holds (scrollback plus rows): the most it is given. */
  lines: number;
  /** Scrollback lines (for the notice). */
  scrollback: number;
  /** The byte cap it was chosen with (Infinity: everything held, execBridge.reopenedTerminalReplayMiB 0). */
  maxBytes: number;
  /** Bytes the executor held before the start (not shown); undefined when the executor does not say. */
  notShownBytes: number | undefined;
  /** The start is not at a line boundary: the byte cap fell inside a line longer than it. */
  midLine: boolean;
  /** The seq of the oldest output event the executor held (0: none): above 1, older output is gone. */
  oldestHeldSeq: number;
}

/** Lines a terminal keeps: its scrollback (`terminal.integrated.scrollback`, not a number: the default) plus its rows. */
export function terminalLines(scrollback: unknown, rows: number | undefined): { lines: number; scrollback: number } {
  const s = typeof scrollback === 'number' && Number.isFinite(scrollback) && scrollback >= 0 ? Math.floor(scrollback) : DEFAULT_SCROLLBACK;
  const r = rows !== undefined && rows > 0 ? rows : DEFAULT_ROWS;
  return { lines: s + r, scrollback: s };
}

/**
 * Pure: where in `tail` (consecutive output, oldest first) the replay starts. Walks back from the end
 * over `lines` newline-terminated lines (a last line without its newline, such as a prompt, comes
 * on top) and starts after the newline before them; never more than `maxBytes` before the end: then
 * at the first line boundary within those bytes, or inside a line longer than that. Undefined when
 * `tail` is too short to tell and is not `whole` (everything held): the caller reads further back.
 */
export function cutTail(
  tail: readonly TailChunk[],
  lines: number,
  maxBytes: number,
  whole: boolean,
): { index: number; offset: number; limit: ReplayStart['limit']; midLine: boolean } | undefined {
  let total = 0;
  for (const c of tail) total += c.data.length;
  const floor = Math.max(0, total - maxBytes);
  /** The start at global offset `at`, as a chunk index and an offset in it. */
  const at = (start: number, limit: ReplayStart['limit'], midLine: boolean) => {
    let base = 0;
    for (let i = 0; i < tail.length; i++) {
      const n = tail[i]!.data.length;
      if (start < base + n) return { index: i, offset: start - base, limit, midLine };
      base += n;
    }
    return { index: tail.length, offset: 0, limit, midLine };
  };
  let newlines = 0;
  /** The lowest newline seen that a start after it stays within `maxBytes` and shows something. */
  let lowest: number | undefined;
  let end = total;
  for (let i = tail.length - 1; i >= 0; i--) {
    const data = tail[i]!.data;
    end -= data.length;
    for (let j = data.lastIndexOf(NEWLINE); j >= 0; j = j > 0 ? data.lastIndexOf(NEWLINE, j - 1) : -1) {
      const p = end + j;
      if (p + 1 < floor) {
        // Over the byte cap before enough lines: from the first line boundary within it.
        return lowest !== undefined ? at(lowest + 1, 'bytes', false) : at(floor, 'bytes', true);
      }
      newlines++;
      if (newlines > lines) return at(p + 1, 'lines', false);
      if (p + 1 < total) lowest = p;
    }
  }
  if (total > maxBytes) return lowest !== undefined ? at(lowest + 1, 'bytes', false) : at(floor, 'bytes', true);
  return whole ? at(0, 'none', false) : undefined;
}

/**
 * Drops the oldest chunks that a start within `maxBytes` of the end can never reach (in place);
 * whether it dropped any. More than `maxBytes` stays: the byte before the newest `maxBytes` tells
 * whether they start at a line (kept to exactly `maxBytes`, chunks that add up to it were read back to the oldest).
 */
function keepNewest(tail: TailChunk[], maxBytes: number): boolean {
  let total = sum(tail);
  let drop = 0;
  while (drop < tail.length && total - tail[drop]!.data.length > maxBytes) total -= tail[drop++]!.data.length;
  if (drop > 0) tail.splice(0, drop);
  return drop > 0;
}

/**
 * Finds where a reopened terminal's replay starts, reading the process's output from the end back
 * (`process/read` of spooled ranges, docs/protocol-extensions.md "Output spool"): at most about
 * `maxBytes` plus a page is read and kept, whatever the executor holds. On a connection without the
 * spool (a codex-style executor) the window (1 MiB) is read forward.
 */
export async function chooseReplayStart(
  read: ReadOutput,
  o: { lines: number; scrollback: number; maxBytes?: number },
): Promise<ReplayStart> {
  const maxBytes = o.maxBytes ?? REPLAY_MAX_BYTES;
  const done = (tail: TailChunk[], cut: NonNullable<ReturnType<typeof cutTail>>, held: number | undefined): ReplayStart => {
    let before = 0;
    for (let i = 0; i < cut.index; i++) before += tail[i]!.data.length;
    before += cut.offset;
    let shown = -before;
    for (const c of tail) shown += c.data.length;
    const first = tail[cut.index];
    return {
      afterSeq: first ? first.seq - 1 : (tail[tail.length - 1]?.seq ?? 0),
      skipBytes: first ? cut.offset : 0,
      limit: cut.limit,
      lines: o.lines,
      scrollback: o.scrollback,
      maxBytes,
      notShownBytes: held !== undefined ? Math.max(0, held - shown) : undefined,
      midLine: cut.midLine,
      oldestHeldSeq,
    };
  };
  const probe = await read(0, 1);
  const oldestHeldSeq = probe.chunks[0]?.seq ?? 0;
  if (!probe.execBridgeSpooled) {
    // Everything held is in the window: read it forward, keeping the newest part.
    const tail: TailChunk[] = [];
    let held = 0;
    let after = 0;
    for (let page = 0; page < 100_000; page++) {
      const r = page === 0 && probe.chunks.length === 0 ? probe : await read(after, PAGE_BYTES);
      const last = r.chunks[r.chunks.length - 1]?.seq;
      if (last === undefined || last <= after) break;
      for (const c of r.chunks) {
        if (c.seq <= after) continue;
        const data = Buffer.from(c.chunk, 'base64');
        held += data.length;
        tail.push({ seq: c.seq, data });
      }
      keepNewest(tail, maxBytes);
      after = last;
    }
    const cut = cutTail(tail, o.lines, maxBytes, true)!;
    return done(tail, cut, held);
  }
  // The spool holds older output: walk back from the end.
  const end = await read(PAST_THE_END, 1);
  const held =
    end.execBridgeOutputBytes !== undefined && end.execBridgeDroppedBytes !== undefined
      ? end.execBridgeOutputBytes - end.execBridgeDroppedBytes
      : undefined;
  let tail: TailChunk[] = [];
  let below = end.nextSeq;
  let whole = false;
  /** Older chunks were let go (more than `maxBytes` is read): the tail's size no longer tells what is held. */
  let trimmed = false;
  let readBytes = 0;
  let readSeqs = 0;
  let step = 4;
  // Each round reads about PAGE_BYTES * 2 further back: bounded by maxBytes (the cap ends it) and by the seqs.
  for (let round = 0; round < 1000; round++) {
    const cut = cutTail(tail, o.lines, maxBytes, whole);
    if (cut) return done(tail, cut, held ?? (whole && !trimmed ? sum(tail) : undefined));
    // At most twice the last round's (./replayStartScan.ts says why).
    step = Math.min(step * 2, readBytes > 0 ? Math.max(1, Math.ceil((2 * PAGE_BYTES * readSeqs) / readBytes)) : 8);
    const from = Math.max(0, below - 1 - step);
    const got = await readRange(read, from, below);
    for (const c of got) readBytes += c.data.length;
    readSeqs += below - 1 - from;
    tail = [...got, ...tail];
    trimmed = keepNewest(tail, maxBytes) || trimmed;
    whole = from < oldestHeldSeq || from === 0;
    below = from + 1;
  }
  return done(tail, cutTail(tail, o.lines, maxBytes, true)!, held);
}

function sum(tail: readonly TailChunk[]): number {
  let n = 0;
  for (const c of tail) n += c.data.length;
  return n;
}

/**
 * A reopened terminal's process, followed from the newest part the terminal can hold
 * (`chooseReplayStart`) or, `maxBytes` Infinity, from the oldest byte held, then live. A process
 * a language model reads in the background (`agentReadSeq`) starts no later than what the model
 * has not read yet. A tty whose replay skips output gets `modes`: the modes to restore before the
 * replay, and whether to make it redraw (./terminalModes.ts).
 */
export async function attachNewest(
  client: Pick<ExecServerClient, 'call' | 'attachProcess' | 'capabilities'>,
  processId: string,
  o: {
    tty: boolean;
    stdinWritable: boolean;
    creditWindow?: number;
    scrollback: unknown;
    rows: number | undefined;
    agentReadSeq?: number;
    /** The most replayed (default `REPLAY_MAX_BYTES`); Infinity: everything the executor holds (execBridge.reopenedTerminalReplayMiB 0). */
    maxBytes?: number;
  },
) {
  const read: ReadOutput = (afterSeq, maxBytes) => client.call('process/read', { processId, afterSeq, maxBytes });
  const { lines, scrollback } = terminalLines(o.scrollback, o.rows);
  // `maxBytes` Infinity: everything held, from the oldest byte, read only as the terminal draws (nothing is looked for first).
  const everything = o.maxBytes === Number.POSITIVE_INFINITY;
  // Above the default cap the spool is walked back in one pass, a range in memory (./replayStartScan.ts).
  const wide = !everything && o.maxBytes !== undefined && o.maxBytes > REPLAY_MAX_BYTES;
  let replay = everything
    ? undefined
    : ((wide ? await scanReplayStart(read, { lines, scrollback, maxBytes: o.maxBytes! }) : undefined) ??
      (await chooseReplayStart(read, { lines, scrollback, ...(o.maxBytes !== undefined ? { maxBytes: o.maxBytes } : {}) })));
  // The model reads by seq from where it stopped (core/agentTools.ts): nothing after that is skipped.
  if (replay && o.agentReadSeq !== undefined && o.agentReadSeq < replay.afterSeq)
    replay = { ...replay, afterSeq: o.agentReadSeq, skipBytes: 0, limit: 'none', notShownBytes: undefined, midLine: false };
  // Asked before the attach: the replay's start is fixed, and its redraw decision is about now.
  // Everything held starts at the oldest event the executor still has (a cap may have dropped older
  // ones, and the modes they set): one probe says which.
  const start = replay ?? (o.tty ? { afterSeq: Math.max(0, ((await read(0, 1)).chunks[0]?.seq ?? 1) - 1), skipBytes: 0 } : undefined);
  const modes = o.tty && start ? await replayModes(client, processId, start) : undefined;
  const attached = await client.attachProcess(processId, {
    tty: o.tty,
    stdinWritable: o.stdinWritable,
    ...(o.creditWindow !== undefined ? { creditWindow: o.creditWindow } : {}),
    afterSeq: replay?.afterSeq ?? 0,
  });
  // Everything: the replay starts at the oldest held event (`evictedBefore`, 0 when nothing before it is gone).
  replay ??= {
    afterSeq: 0,
    skipBytes: 0,
    limit: 'none',
    lines,
    scrollback,
    maxBytes: Number.POSITIVE_INFINITY,
    notShownBytes: 0,
    midLine: false,
    oldestHeldSeq: attached.evictedBefore,
  };
  return { ...attached, replay, ...(modes ? { modes } : {}) };
}

/** The line a reopened terminal starts with: what of its earlier output the terminal does not show, and where it is. */
export function reopenNotice(a: {
  evictedBefore: number;
  droppedBytes?: number;
  spoolCapBytes?: number;
  replay?: Pick<ReplayStart, 'limit' | 'notShownBytes' | 'scrollback' | 'oldestHeldSeq' | 'maxBytes'>;
}): string {
  const parts = ['↻ reopened after the window reload'];
  const r = a.replay;
  if (r && r.limit !== 'none' && r.notShownBytes !== 0) {
    const amount = r.notShownBytes !== undefined ? `${mib(r.notShownBytes)} of earlier output is` : 'earlier output is';
    const why =
      r.limit === 'lines'
        ? `more than the terminal's ${r.scrollback} lines of scrollback`
        : `the terminal is given at most the newest ${mib(r.maxBytes)}`;
    parts.push(`${amount} not shown here (${why}): ${OPEN_FULL_OUTPUT_TITLE}`);
  }
  if (a.droppedBytes !== undefined && a.spoolCapBytes !== undefined) {
    const what = parts.length > 1 ? 'before that' : 'of earlier output';
    if (a.droppedBytes > 0) parts.push(`${mib(a.droppedBytes)} ${what} was dropped (spool cap ${mib(a.spoolCapBytes)})`);
  } else if (r ? r.oldestHeldSeq > 1 : a.evictedBefore > 0)
    parts.push('the executor no longer holds its oldest output (it keeps the newest 1 MiB)');
  return parts.join('; ');
}

/** The command's title as the palette shows it (package.json `execBridge.openFullOutput`); the terminal's link matches it. */
export const OPEN_FULL_OUTPUT_TITLE = 'Exec Bridge: Open Full Output';

/** Bytes for a person: KiB below 0.1 MiB, else MiB to one decimal ("63.2 MiB", "8 MiB"). */
export function mib(bytes: number): string {
  const m = bytes / (1024 * 1024);
  if (m < 0.1) return `${Math.max(1, Math.round(bytes / 1024))} KiB`;
  return `${m.toFixed(1).replace(/\.0$/, '')} MiB`;
}
