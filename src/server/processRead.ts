import type { ProcessReadResult } from '../protocol';
import type { LongPolls } from './longPolls';
import { SPOOL_PAGE_BYTES, type OutputSpool } from './outputSpool';
import type { OutputWindow } from './outputWindow';

/** A spool page (`process/read` of spooled output) carries at most this, whatever `maxBytes` asks. */
const MAX_SPOOL_PAGE = 2 * SPOOL_PAGE_BYTES;

/** What `process/read` needs of its process (./managedProcess.ts), read afresh after each wait. */
export interface ReadSource {
  window: OutputWindow;
  polls: LongPolls;
  spool(): OutputSpool | undefined;
  /** The seq the next event gets. */
  nextSeq(): number;
  exit(): { code: number; seq: number } | undefined;
  closed(): boolean;
  destroyed(): boolean;
  denied(): { denied: boolean; target: string | undefined };
  /** Why the server stopped the process, if it did. */
  failure(): string | null;
  /** Output bytes ever produced, and those no longer held. */
  bytes(): { output: number; dropped: number };
}

/**
 * `process/read`. With `spooled` (the connection asked for `execBridgeOutputSpool`), a range older
 * than the window is served from the spool, one bounded page per answer (`execBridgeSpooled`:
 * read on from `nextSeq`), and every answer says how many bytes were dropped.
 */
export async function readOutput(
  src: ReadSource,
  afterSeq: number,
  maxBytes: number | undefined,
  waitMs: number,
  spooled = false,
  spoolMaxBytes?: number,
): Promise<ProcessReadResult> {
  const window = src.window;
  const fromSpool = () => {
    const s = src.spool();
    if (!spooled || !s || s.retainedBytes === 0 || afterSeq >= s.lastSeq) return undefined;
    const first = window.firstSeq;
    return first === undefined || afterSeq + 1 < first ? s : undefined;
  };
  await src.polls.until(() => {
    const exit = src.exit();
    return (
      fromSpool() !== undefined ||
      (src.nextSeq() - 1 > afterSeq && window.after(afterSeq, 0).length > 0) ||
      src.closed() ||
      (exit !== undefined && afterSeq < exit.seq) ||
      src.destroyed()
    );
  }, waitMs);
  const spool = fromSpool();
  if (spool) {
    const page = await spool.read(afterSeq, Math.min(spoolMaxBytes ?? maxBytes ?? SPOOL_PAGE_BYTES, MAX_SPOOL_PAGE));
    // Empty: a cap dropped the range meanwhile; the window answers (with the gap and the count).
    if (page.chunks.length > 0) return { ...readStatus(src, true), chunks: page.chunks, nextSeq: page.nextSeq, execBridgeSpooled: true };
  }
  if (spooled && spoolMaxBytes !== undefined) {
    // A page of the window too when it holds more than the budget: a replay stays within the reader's room.
    const all = window.after(afterSeq);
    const some = window.after(afterSeq, spoolMaxBytes);
    if (some.length < all.length) {
      const chunks = some.map((c) => ({ seq: c.seq, stream: c.stream, chunk: c.data.toString('base64') }));
      return { ...readStatus(src, true), chunks, nextSeq: some[some.length - 1]!.seq + 1, execBridgeSpooled: true };
    }
  }
  const chunks = window.after(afterSeq, maxBytes);
  const nextSeq = maxBytes !== undefined && chunks.length > 0 ? chunks[chunks.length - 1]!.seq + 1 : src.nextSeq();
  return {
    ...readStatus(src, spooled),
    chunks: chunks.map((c) => ({ seq: c.seq, stream: c.stream, chunk: c.data.toString('base64') })),
    nextSeq,
  };
}

/** The fields of a read answer besides chunks and cursor; with `spooled`, ours too. */
function readStatus(src: ReadSource, spooled: boolean): Omit<ProcessReadResult, 'chunks' | 'nextSeq'> {
  const exit = src.exit();
  const { denied, target } = src.denied();
  const bytes = spooled ? src.bytes() : undefined;
  return {
    exited: exit !== undefined,
    exitCode: exit?.code ?? null,
    closed: src.closed(),
    failure: src.failure(),
    sandboxDenied: denied,
    ...(target ? { sandboxDeniedTarget: target } : {}),
    ...(bytes
      ? {
          execBridgeDroppedBytes: bytes.dropped,
          execBridgeOutputBytes: bytes.output,
          ...(exit ? { execBridgeExitSeq: exit.seq } : {}),
        }
      : {}),
  };
}
