import type { ExecServerClient } from '../client';
import { errorMessage } from '../util';
import type { RememberedProcess } from './sessionMemory';

/** Ending a resumed session's leftovers waits at most this long before the connection is handed out. */
const SETTLE_MS = 5_000;

/**
 * After a window reload resumed a session: what ran in it besides terminals (MCP servers, tasks) had
 * its owner in the old extension host, which is gone, so it is ended here — before anyone can start
 * its replacement, so one server never runs twice. Returns the processes to reopen terminals for.
 */
export async function settleLeftovers(
  client: ExecServerClient,
  remembered: readonly RememberedProcess[],
  log: (line: string) => void,
): Promise<RememberedProcess[]> {
  const terminals = remembered.filter((p) => p.terminal);
  const others = remembered.filter((p) => !p.terminal);
  if (others.length === 0) return terminals;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ends = Promise.all(
    others.map((p) =>
      client.call('process/terminate', { processId: p.processId }).then(
        (r) => r.running && log(`ended ${p.processId}, left over from before the reload (its owner is gone; it is started anew if needed)`),
        // Unknown: it ended and was forgotten meanwhile.
        (e: unknown) => log(`${p.processId} left over from before the reload: ${errorMessage(e)}`),
      ),
    ),
  );
  await Promise.race([ends, new Promise<void>((resolve) => (timer = setTimeout(resolve, SETTLE_MS)))]);
  clearTimeout(timer);
  return terminals;
}
