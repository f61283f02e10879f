import { ExecServerClient, SessionExpiredError, type ClientOptions } from '../client';
import { backoffDelay, errorMessage } from '../util';

/** What one failed attempt to resume the remembered session makes the executor's state. */
export interface ResumeRetryState {
  kind: 'recovering';
  since: number;
  attempt: number;
  cause: string;
  until: number;
}

export interface RememberedResumeOptions {
  /** The executor's name, for the log and the words of giving up. */
  name: string;
  /** The client's options, with `resumeSessionId` and `takeOverSession` set. */
  options: ClientOptions;
  sessionId: string;
  /** Since when the executor is unreachable (never later than now). */
  since: number;
  /** When the executor no longer keeps the session: the attempts stop and say it expired. */
  until: number;
  isDisposed(): boolean;
  /** After each failed attempt, before the back-off. */
  onRetry(state: ResumeRetryState): void;
  log?(line: string): void;
}

/**
 * Resuming a remembered session through an outage (`ExecutorConnection.resumeRemembered`): attempts
 * with the client's back-off until one connects, the session is known to be gone (then
 * `SessionExpiredError`), or it is given up (`abort`, the connection disposed). `wake` ends the
 * current back-off at once (window focus, the network came back).
 */
export class RememberedResume {
  private aborted = false;
  private wakeWait: () => void = () => undefined;

  constructor(private readonly o: RememberedResumeOptions) {}

  wake(): void {
    this.wakeWait();
  }

  abort(): void {
    this.aborted = true;
    this.wakeWait();
  }

  async run(): Promise<ExecServerClient> {
    const { name, options, sessionId, since, until } = this.o;
    const { stepMs, maxMs, longMaxMs = 30_000 } = options.backoff ?? { stepMs: 100, maxMs: 2000, longMaxMs: 30_000 };
    const jitter = Math.random() * 0.3;
    for (let attempt = 1; ; attempt++) {
      try {
        return await ExecServerClient.connect(options);
      } catch (e) {
        if (e instanceof SessionExpiredError || this.o.isDisposed()) throw e;
        const givenUp = () => new Error(`${name}: resuming the remembered session was given up`, { cause: e });
        if (this.aborted) throw givenUp();
        // Unreachable for longer than it keeps a session: gone, said as such (then a new session).
        if (Date.now() >= until)
          throw new SessionExpiredError(sessionId, `unreachable since ${new Date(since).toISOString()}: ${errorMessage(e)}`);
        const cause = errorMessage(e);
        this.o.log?.(
          `${name}: resuming session ${sessionId}: attempt ${attempt} failed (${cause}); trying again while the executor may keep it`,
        );
        this.o.onRetry({ kind: 'recovering', since, attempt, cause, until });
        const cap = Date.now() - since < 30_000 ? maxMs : Math.max(maxMs, longMaxMs);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoffDelay(2 ** Math.min(attempt - 1, 20), { stepMs, maxMs: cap, jitter }));
          this.wakeWait = () => (clearTimeout(timer), resolve());
        });
        this.wakeWait = () => undefined;
        if (this.aborted || this.o.isDisposed()) throw givenUp();
      }
    }
  }
}
