/**
 * Per-process credit (capability `execBridgeProcessCredit`, docs/protocol-extensions.md "Credit
 * window"): the server reads a process's output only while fewer than `window` of the bytes it
 * sent are unacknowledged. The client acknowledges by seq (`process/ack {seq}`: every output event
 * up to that seq was consumed), so an ack is idempotent, may be repeated after a reconnect, and a
 * chunk the client never saw (lost with a connection, or evicted) is acknowledged by any later seq.
 */
export class CreditWindow {
  /** Output events sent and not yet acknowledged: their seqs and the byte total after each, oldest first. */
  private seqs: number[] = [];
  private totals: number[] = [];
  private head = 0;
  private sentBytes = 0;
  private ackedBytes = 0;
  private ackedSeq = 0;

  constructor(private windowBytes: number) {}

  get window(): number {
    return this.windowBytes;
  }
  set window(bytes: number) {
    this.windowBytes = bytes;
  }

  /** Bytes sent and not yet acknowledged. */
  get unacked(): number {
    return this.sentBytes - this.ackedBytes;
  }

  /** The window is full: stop reading. */
  get exhausted(): boolean {
    return this.unacked >= this.windowBytes;
  }

  /**
   * An output event went out (or into the retained window, with no client attached). `coalesce`
   * (output spooled while nobody is attached): joined to the previous such event while the entry
   * stays within an eighth of the window, so a detached night of output takes few entries
   * (spool bytes / (window / 8)); an entry is acknowledged once the client consumed up to its last
   * seq. The bound keeps the client's rule deadlock-free: a client that consumed everything
   * delivered has less than a quarter of the window unacknowledged, so with entries of at most an
   * eighth the server sees less than half the window unacknowledged and reads on. (One entry for
   * all of it held a process for good: the client's last ack fell inside the entry, and it acks
   * again only after another quarter of the window, which the held process never sends.)
   */
  sent(seq: number, bytes: number, coalesce = false): void {
    const before = this.sentBytes;
    this.sentBytes += bytes;
    if (seq <= this.ackedSeq) {
      // Acknowledged before it was sent: cannot happen with an honest client; count it as taken.
      this.ackedBytes = this.sentBytes;
      return;
    }
    if (coalesce && this.coalescing && this.seqs.length > this.head && this.sentBytes - this.entryStart <= this.windowBytes / 8) {
      this.seqs[this.seqs.length - 1] = seq;
      this.totals[this.totals.length - 1] = this.sentBytes;
      return;
    }
    this.coalescing = coalesce;
    this.entryStart = before;
    this.seqs.push(seq);
    this.totals.push(this.sentBytes);
  }

  private coalescing = false;
  /** Bytes sent before the newest entry began (its size is `sentBytes - entryStart`). */
  private entryStart = 0;

  /** Everything up to `seq` was consumed. Returns whether the unacknowledged amount went down. */
  ack(seq: number): boolean {
    if (seq <= this.ackedSeq) return false;
    this.ackedSeq = seq;
    const before = this.ackedBytes;
    while (this.head < this.seqs.length && this.seqs[this.head]! <= seq) this.ackedBytes = this.totals[this.head++]!;
    if (this.head === this.seqs.length) {
      this.seqs = [];
      this.totals = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.totals = this.totals.slice(this.head);
      this.head = 0;
    }
    return this.ackedBytes > before;
  }
}
