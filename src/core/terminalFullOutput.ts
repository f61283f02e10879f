import { mib } from './terminalReplayRange';
import type { ProcessReadResult } from '../protocol';

/**
 * Exec Bridge: Open Full Output (the vscode layer in src/vscode/terminalOutput.ts): every byte the
 * executor still holds of one process, in seq order (stdout and stderr as the terminal shows them),
 * streamed from `process/read` a page at a time into `write` — memory stays at one page whatever
 * it holds. Up to the output there was when it began: a process that goes on printing does not
 * keep it going.
 */

/** One `process/read` page: the spool serves at most 2 MiB an answer. */
const PAGE_BYTES = 1024 * 1024;
/** `afterSeq` past every seq: the answer's `nextSeq` is the next seq to be assigned. */
const PAST_THE_END = Number.MAX_SAFE_INTEGER;

/** `process/read {afterSeq, maxBytes}`; without `maxBytes`, the whole window (as codex answers). */
export type ReadPage = (afterSeq: number, maxBytes?: number) => Promise<ProcessReadResult>;

export interface FullOutput {
  /** Bytes written. */
  bytes: number;
  /** The executor spools (`execBridgeOutputSpool`); false: what its window (the newest 1 MiB) holds. */
  spooled: boolean;
  /** Output older than all it holds that the executor no longer has (a cap dropped it, or the window evicted it); undefined: not said. */
  droppedBytes: number | undefined;
  /** The window-only executor had evicted older output (its oldest held event is not the first). */
  evicted: boolean;
  /** A cap dropped output in the middle of the copy (the process went on printing): the copy has a hole there. */
  gap: boolean;
  /** Cancelled before the end. */
  cancelled: boolean;
}

/**
 * Copies the output into `write` (awaited page by page: a slow disk holds the reads back).
 * `onProgress(bytes, of)`: after each page, with what the executor held when it began if it said.
 */
export async function copyFullOutput(
  read: ReadPage,
  write: (data: Buffer) => Promise<void>,
  o: { signal?: AbortSignal; onProgress?: (bytes: number, of: number | undefined) => void } = {},
): Promise<FullOutput> {
  const first = await read(0, PAGE_BYTES);
  const spooled = first.execBridgeDroppedBytes !== undefined;
  const out: FullOutput = {
    bytes: 0,
    spooled,
    droppedBytes: first.execBridgeDroppedBytes,
    evicted: false,
    gap: false,
    cancelled: false,
  };
  const put = async (r: ProcessReadResult, after: number) => {
    for (const c of r.chunks) {
      if (c.seq <= after) continue;
      const data = Buffer.from(c.chunk, 'base64');
      await write(data);
      out.bytes += data.length;
    }
  };
  if (!spooled) {
    // A codex-style executor: its window, in one answer.
    const all = await read(0);
    out.evicted = (all.chunks[0]?.seq ?? 1) > 1;
    await put(all, 0);
    o.onProgress?.(out.bytes, out.bytes);
    return out;
  }
  const end = (await read(PAST_THE_END, 1)).nextSeq - 1;
  const of =
    first.execBridgeOutputBytes !== undefined && first.execBridgeDroppedBytes !== undefined
      ? first.execBridgeOutputBytes - first.execBridgeDroppedBytes
      : undefined;
  let r = first;
  let after = 0;
  // Each page moves `after` on by at least one seq: bounded by `end`.
  for (let page = 0; page <= end; page++) {
    if (o.signal?.aborted) {
      out.cancelled = true;
      return out;
    }
    const firstSeq = r.chunks[0]?.seq;
    const last = r.chunks[r.chunks.length - 1]?.seq;
    if (firstSeq === undefined || last === undefined || last <= after) break;
    // Seqs skipped after the first page (not the exit event's) were dropped by the cap meanwhile.
    const skipped =
      firstSeq - after - 1 - (r.execBridgeExitSeq !== undefined && r.execBridgeExitSeq > after && r.execBridgeExitSeq < firstSeq ? 1 : 0);
    if (page > 0 && skipped > 0) out.gap = true;
    await put({ ...r, chunks: r.chunks.filter((c) => c.seq <= end) }, after);
    o.onProgress?.(out.bytes, of);
    if (last >= end) break;
    after = Math.max(last, r.nextSeq - 1);
    r = await read(after, PAGE_BYTES);
  }
  return out;
}

/** What the editor's copy is, for the message shown with it (undefined: nothing worth saying). */
export function fullOutputNote(r: FullOutput): string | undefined {
  if (r.cancelled) return `Copy cancelled: the document has the first ${mib(r.bytes)} only.`;
  const notes: string[] = [];
  if (r.bytes === 0) notes.push('The executor holds no output of this process.');
  if (!r.spooled && r.evicted)
    notes.push("This executor keeps only the newest 1 MiB of a process's output (it does not spool): that is what the document has.");
  if (r.spooled && r.droppedBytes !== undefined && r.droppedBytes > 0)
    notes.push(
      `The executor's spool cap had dropped the oldest ${mib(r.droppedBytes)} (setting execBridge.outputSpoolMiB): the document starts after them.`,
    );
  if (r.gap) notes.push('The process went on printing past the spool cap while it was copied: some output in the middle is missing.');
  return notes.length > 0 ? notes.join(' ') : undefined;
}
