import { CreditWindow } from './creditWindow';
import type { OutputSpool } from './outputSpool';
import type { ProcessSink } from './processOutput';

/**
 * Whether one process's output is read now. Four things each hold it: the connection's congestion,
 * the client's `process/pause`, a full credit window (`process/ack`, ./creditWindow.ts) and spool
 * writes that are behind. A held process blocks on its full pipe (or PTY) instead of the server
 * buffering without bound. `setReading` pauses or resumes the child's streams on each change.
 */
export class OutputFlow {
  /** The connection is congested (connection-level backpressure). */
  private congested = false;
  /** The client asked `process/pause` (per-process flow control) and not yet `process/resume`. */
  private held = false;
  /** The client's credit window (`process/ack`); undefined: no credit, read freely. */
  private credit: CreditWindow | undefined;
  /** The spool's writes are behind: the child's output is not read until they catch up. */
  private spoolBusy = false;
  /** Whether the child's output is being read: neither congested nor held nor out of credit. */
  private reading = true;

  constructor(
    private readonly sink: ProcessSink,
    /** Whether the session spools (a client of it asked): then a credit window does not hold the process while detached. */
    private readonly spooling: (() => boolean) | undefined,
    private readonly setReading: (read: boolean) => void,
    creditWindow: number | null | undefined,
  ) {
    if (creditWindow) this.credit = new CreditWindow(creditWindow);
  }

  /** An output event went out: it counts against the credit, and a congested connection holds the process. */
  sent(seq: number, bytes: number): void {
    if (this.credit) {
      // Counted while detached too (as one entry): the client that comes back replays it and acknowledges on.
      this.credit.sent(seq, bytes, this.detachedSpooling());
      if (this.credit.exhausted) this.update();
    }
    if (!this.congested && this.sink.congested()) {
      // Backpressure: stop reading the child's output (it blocks on a full pipe) until the client catches up.
      this.congested = true;
      this.update();
      this.sink.whenUncongested(() => {
        this.congested = false;
        this.update();
      });
    }
  }

  /** After a push that spooled: the spool's backpressure. */
  spooled(spool: OutputSpool): void {
    if (!this.spoolBusy && spool.congested) {
      this.spoolBusy = true;
      this.update();
      void spool.whenDrained().then(() => {
        this.spoolBusy = false;
        this.update();
      });
    }
  }

  /** `process/pause` (true) / `process/resume` (false): the client's own flow control for this process. */
  hold(held: boolean): void {
    this.held = held;
    this.update();
  }

  /**
   * `process/ack`: output up to `seq` was consumed; `window` sets the credit window (null: off).
   * The credit outlives a detach (the child blocks, nothing is evicted); acks are by seq, so a
   * resumed client just acknowledges on.
   */
  ack(seq: number, window: number | null | undefined): void {
    if (window === null) this.credit = undefined;
    else if (window !== undefined) {
      if (this.credit) this.credit.window = window;
      else this.credit = new CreditWindow(window);
    }
    this.credit?.ack(seq);
    this.update();
  }

  /**
   * The sink changed (a client attached or left): a process must not wait on the old one's
   * congestion, and a credit window holds again (or no more, see `creditHolds`). A client's pause
   * stays: nothing is evicted while its client is away, and the session's TTL still ends a process
   * whose client never comes back.
   */
  sinkChanged(): void {
    if (this.congested && !this.sink.congested()) this.congested = false;
    this.update();
  }

  /** Reads the child's output while the connection is not congested, the client does not hold it, and credit is left. */
  private update(): void {
    const read = !this.congested && !this.held && !this.creditHolds() && !this.spoolBusy;
    if (read === this.reading) return;
    this.reading = read;
    this.setReading(read);
  }

  /**
   * A full credit window holds the process, except while nobody is attached to a session that
   * spools: its output then goes to the spool (whose writes hold it back instead), so a detached
   * terminal's command runs on; the client that comes back replays it and acknowledges on by seq.
   */
  private creditHolds(): boolean {
    return !!this.credit?.exhausted && !this.detachedSpooling();
  }

  /** Nobody is attached and the session spools: a full credit window does not hold the process. */
  private detachedSpooling(): boolean {
    return this.sink.attached?.() === false && this.spooling?.() === true;
  }
}
