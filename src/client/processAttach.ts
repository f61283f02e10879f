import type { ProcessReadResult } from '../protocol';
import { OutputLostError } from './errors';
import type { ProcessHandleImpl } from './processHandle';

/**
 * The session this client was asked to resume (`resumeSessionId`) is not on the executor any more:
 * it expired (detached longer than the TTL) or the executor restarted. Its processes are gone.
 */
export class SessionExpiredError extends Error {
  constructor(
    readonly sessionId: string,
    serverMessage: string,
  ) {
    super(`the executor no longer has session ${sessionId} (${serverMessage}); what ran in it has ended`);
    this.name = 'SessionExpiredError';
  }
}

export interface AttachedProcess {
  /** Seqs before this one were no longer retained (the executor keeps the newest 1 MiB, or what its spool holds); 0 when nothing was lost. */
  evictedBefore: number;
  /** A server that spools (`execBridgeOutputSpool`): how many output bytes it had dropped (its cap) when the replay began. */
  droppedBytes?: number;
  /** And its cap on what one process keeps (bytes). */
  spoolCapBytes?: number;
}

/**
 * Feeds a handle for a process this client did not start (a resumed session's, after a window
 * reload) from the executor's retained output: `read` is `process/read {afterSeq: 0}`. Output the
 * executor no longer retains (older than its window) is skipped, not an error: the handle starts
 * with the oldest retained chunk and `evictedBefore` says where. Live notifications that raced the
 * read are merged by seq, as after any resume.
 */
export function adoptRead(handle: ProcessHandleImpl, read: ProcessReadResult): AttachedProcess {
  const first = read.chunks[0]?.seq;
  const dropped = read.execBridgeDroppedBytes !== undefined ? { droppedBytes: read.execBridgeDroppedBytes } : {};
  if (read.execBridgeSpooled) {
    // The first page of the spool: the rest follows (`replaySpool`), then the window and live output.
    const outcome = handle.orderer.mergeSpooled(read, true);
    handle.publish(outcome.events);
    return { evictedBefore: first !== undefined && first > 1 ? first : 0, ...dropped };
  }
  // Without chunks: only the exit and close events (if any) are left to account for.
  const base = first !== undefined ? first - 1 : Math.max(0, read.nextSeq - 1 - (read.exited ? 1 : 0) - (read.closed ? 1 : 0));
  handle.orderer.skipTo(base);
  const outcome = handle.orderer.mergeRead(read);
  handle.publish(outcome.events);
  if (outcome.lost) handle.fail(new OutputLostError(handle.processId, outcome.lost.fromSeq, outcome.lost.toSeq));
  return { evictedBefore: base > 0 ? base + 1 : 0, ...dropped };
}

/**
 * The rest of a spooled replay after its first page: `process/read` page by page from `afterSeq`
 * until an answer is not a spool page (the window), each page read only once the consumer has
 * room in the handle's credit window and no larger than that room (`execBridgeSpoolMaxBytes`): a
 * reopened terminal is fed as fast as it draws, not 64 MiB at once. Output a cap drops meanwhile
 * is skipped as at the start (`skipDropped`, an attach) or fails the handle (a recovery's catch-up).
 */
export async function replaySpool(
  handle: ProcessHandleImpl,
  afterSeq: number,
  read: (afterSeq: number, spoolMaxBytes: number | undefined) => Promise<ProcessReadResult>,
  skipDropped = true,
): Promise<void> {
  if (handle.spoolReplay) return;
  handle.spoolReplay = true;
  try {
    let after = afterSeq;
    // Each page moves `after` forward by at least one seq: bounded by the seqs the server assigned.
    for (let page = 0; page < Number.MAX_SAFE_INTEGER && !handle.isFinished; page++) {
      await handle.whenCreditRoom();
      if (handle.isFinished) return;
      after = Math.max(after, handle.orderer.lastPublished);
      const r = await read(after, handle.creditRoom);
      const outcome = handle.orderer.mergeSpooled(r, skipDropped);
      handle.publish(outcome.events);
      if (outcome.lost) {
        handle.fail(new OutputLostError(handle.processId, outcome.lost.fromSeq, outcome.lost.toSeq));
        return;
      }
      if (!r.execBridgeSpooled) return;
      if (r.nextSeq - 1 <= after) return;
      after = r.nextSeq - 1;
    }
  } finally {
    handle.spoolReplay = false;
  }
}
