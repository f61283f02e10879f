import type { ProcessReadResult } from '../protocol/process';
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
  /** Seqs before this one were no longer retained (the executor keeps the newest 1 MiB); 0 when nothing was lost. */
  evictedBefore: number;
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
  // Without chunks: only the exit and close events (if any) are left to account for.
  const base = first !== undefined ? first - 1 : Math.max(0, read.nextSeq - 1 - (read.exited ? 1 : 0) - (read.closed ? 1 : 0));
  handle.orderer.skipTo(base);
  const outcome = handle.orderer.mergeRead(read);
  handle.publish(outcome.events);
  if (outcome.lost) handle.fail(new OutputLostError(handle.processId, outcome.lost.fromSeq, outcome.lost.toSeq));
  return { evictedBefore: base > 0 ? base + 1 : 0 };
}
