import { websocketConnector, ExecServerClient, SessionExpiredError, type ClientOptions, type Connector } from '../client';
import { errorMessage, pidAlive } from '../util';
import type { BundledServer } from './bundledServer';

/** The daemon's socket; each (re)connect attempt first checks that the daemon still runs. */
export async function bundledConnector(bundled: BundledServer | undefined): Promise<Connector> {
  if (!bundled) throw new Error('the bundled exec-server is not available in this build');
  const info = await bundled.ensureStarted();
  const open = websocketConnector(info.url, info.token);
  return (signal) => {
    if (!bundled.checkAlive()) return Promise.reject(new Error(`the exec-bridge daemon (pid ${info.pid}) is gone`));
    return open(signal);
  };
}

/**
 * A remembered session this version's daemon does not know: try the daemons of other versions
 * that still run (an extension update, docs/architecture.md "An extension update"). The first
 * that knows it becomes the bundled executor's daemon for this window until its session ends.
 * `log` lines are the executor's (its name first).
 */
export async function resumeOnOlderDaemon(
  bundled: BundledServer | undefined,
  options: ClientOptions,
  sessionId: string,
  log: (line: string) => void,
): Promise<ExecServerClient | undefined> {
  if (!bundled) return undefined;
  for (const daemon of await bundled.olderDaemons()) {
    const open = websocketConnector(daemon.url, daemon.token);
    try {
      const client = await ExecServerClient.connect({
        ...options,
        connector: (signal) =>
          pidAlive(daemon.pid) ? open(signal) : Promise.reject(new Error(`the exec-bridge daemon (pid ${daemon.pid}) is gone`)),
        resumeSessionId: sessionId,
        takeOverSession: true,
      });
      bundled.useDaemon(daemon);
      log(
        `resumed session ${sessionId} on the exec-bridge daemon of version ${daemon.key ?? '?'} (pid ${daemon.pid}), kept from before the update; Reconnect moves to this version's daemon (a new session)`,
      );
      return client;
    } catch (e) {
      if (!(e instanceof SessionExpiredError)) log(`the daemon ${daemon.key ?? '?'} (pid ${daemon.pid}): ${errorMessage(e)}`);
    }
  }
  return undefined;
}

/** In VS Code: how the bundled daemon is started again after it died. */
export const RECONNECT_TO_RESTART = 'Run "Exec Bridge: Reconnect" (or click the status bar) to start it again';

/** What a user reads when the bundled server died under them: what happened, then what to do (`restartHint`). */
export function bundledExitText(pid: number, restartHint = RECONNECT_TO_RESTART): string {
  return `the bundled exec-server (the exec-bridge daemon, pid ${pid}) is gone, and what ran on it ended with it. ${restartHint}`;
}
