import type { ProcessReadResult } from '../protocol';

/**
 * Reading a process's held output back page by page, for a reopened terminal's start search
 * (./terminalReplayRange.ts `chooseReplayStart`, ./replayStartScan.ts `scanReplayStart`).
 */

/** `process/read {afterSeq, maxBytes}` of one process (on a connection that asked for the spool, or not). */
export type ReadOutput = (afterSeq: number, maxBytes: number) => Promise<ProcessReadResult>;

/** The budget of one `process/read` while looking for the start. */
export const PAGE_BYTES = 256 * 1024;
/** `afterSeq` past every seq: the answer is empty and its `nextSeq` is the next seq to be assigned. */
export const PAST_THE_END = Number.MAX_SAFE_INTEGER;
export const NEWLINE = 0x0a;

/** The output events with `from < seq < below`, oldest first, read page by page forward from `from`. */
export async function readRange(read: ReadOutput, from: number, below: number): Promise<{ seq: number; data: Buffer }[]> {
  const out: { seq: number; data: Buffer }[] = [];
  let after = from;
  // Each page moves `after` on by at least one seq: bounded by the seqs in the range.
  for (let page = 0; page <= below - from; page++) {
    const r = await read(after, PAGE_BYTES);
    const last = r.chunks[r.chunks.length - 1]?.seq;
    if (last === undefined) break;
    for (const c of r.chunks) if (c.seq > after && c.seq < below) out.push({ seq: c.seq, data: Buffer.from(c.chunk, 'base64') });
    if (last >= below - 1) break;
    after = Math.max(last, r.nextSeq - 1);
  }
  return out;
}
