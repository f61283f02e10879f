/** What happens to a line that grows past `maxLineBytes` before its newline arrives. */
export type LineOverflow =
  /** Drop it through its newline, say so once (`onOverflow`) and go on with the next line. */
  | 'discard'
  /** Say so and stop: nothing more is split (the owner closes the stream). */
  | 'stop';

export interface LineSplitterOptions {
  maxLineBytes: number;
  overflow: LineOverflow;
  /** One line, without its `\n` (a `\r` before it is kept). */
  onLine(line: Buffer): void;
  onOverflow(): void;
}

/** Splits a byte stream into `\n`-terminated lines, holding a partial line across chunks. */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Skipping the rest of an oversized line (`discard`). */
  private discarding = false;
  private stopped = false;

  constructor(private readonly options: LineSplitterOptions) {}

  push(data: Buffer): void {
    let start = 0;
    while (!this.stopped) {
      const nl = data.indexOf(10, start);
      if (nl < 0) break;
      const piece = data.subarray(start, nl);
      start = nl + 1;
      if (this.discarding) {
        this.discarding = false;
        continue;
      }
      const line = this.pendingBytes > 0 ? Buffer.concat([...this.pending, piece]) : piece;
      this.pending = [];
      this.pendingBytes = 0;
      this.options.onLine(line);
    }
    if (this.stopped || this.discarding || start >= data.length) return;
    const rest = data.subarray(start);
    this.pending.push(rest);
    this.pendingBytes += rest.length;
    if (this.pendingBytes <= this.options.maxLineBytes) return;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.options.overflow === 'discard') this.discarding = true;
    else this.stopped = true;
    this.options.onOverflow();
  }

  /** The unterminated last line, if any (not one being discarded); the splitter forgets it. */
  takeRest(): Buffer | undefined {
    const rest = this.pendingBytes > 0 && !this.discarding ? Buffer.concat(this.pending) : undefined;
    this.pending = [];
    this.pendingBytes = 0;
    return rest;
  }

  /** Ignore everything from now on (the stream's owner closed it). */
  stop(): void {
    this.stopped = true;
    this.pending = [];
    this.pendingBytes = 0;
  }
}
