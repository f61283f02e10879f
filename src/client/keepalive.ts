import type { Clock, TimerHandle, Disposable } from '../util';
import type { Connection } from './types';

export interface KeepaliveOptions {
  intervalMs: number;
  timeoutMs: number;
  clock: Clock;
  /** While true we are not reading the connection, so a missing pong proves nothing. */
  readingPaused(): boolean;
  log(line: string): void;
}

/**
 * Pings `conn` every `intervalMs` and closes it when nothing at all came back within `timeoutMs`.
 * Undefined when the connection has no ping (then it gets no keepalive).
 */
export function startKeepalive(conn: Connection, o: KeepaliveOptions): Disposable[] | undefined {
  if (!conn.ping || !conn.onPong) return undefined;
  const { clock } = o;
  let probe: TimerHandle | undefined;
  let deadline: TimerHandle | undefined;
  // Any frame from the server proves the path works; a pong stuck behind a burst of output must
  // not count as a dead connection.
  const alive = () => {
    if (deadline !== undefined) {
      clock.clearTimeout(deadline);
      deadline = undefined;
    }
  };
  const subscriptions = [conn.onPong(alive), conn.onMessage(alive)];
  const schedule = () => {
    probe = clock.setTimeout(() => {
      if (o.readingPaused()) {
        // We are not reading: no pong could be seen. Not a dead connection.
        alive();
        schedule();
        return;
      }
      conn.ping?.();
      deadline ??= clock.setTimeout(() => {
        // Paused after the ping went out: its pong is unread, not missing.
        if (o.readingPaused()) return alive();
        o.log(`no pong within ${o.timeoutMs} ms; dropping the connection`);
        conn.close(`keepalive: no answer within ${o.timeoutMs} ms`);
      }, o.timeoutMs);
      deadline.unref?.();
      schedule();
    }, o.intervalMs);
    probe.unref?.();
  };
  schedule();
  return [
    ...subscriptions,
    {
      dispose: () => {
        if (probe !== undefined) clock.clearTimeout(probe);
        if (deadline !== undefined) clock.clearTimeout(deadline);
      },
    },
  ];
}
