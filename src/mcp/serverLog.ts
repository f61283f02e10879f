import { Emitter, type Event } from '../util';

/**
 * `lifecycle`: what the manager did and why (start, pid-free process id, exit code, durations);
 * `stderr`: the server's own stderr, one entry per line (shown as info: servers log there, it is not
 * an error); `message`: the server's MCP log notifications (`notifications/message`); `trace`:
 * JSON-RPC messages, only when tracing is on.
 */
export type LogEntryKind = 'lifecycle' | 'stderr' | 'message' | 'trace';

export interface LogEntry {
  /** Increases by one per entry of this log, so a viewer that fell behind can tell what it missed. */
  seq: number;
  /** Epoch ms. */
  time: number;
  kind: LogEntryKind;
  text: string;
}

export interface ServerLogOptions {
  /** Entries kept (oldest dropped first). Default 2000. */
  maxEntries?: number;
  /** A stderr line longer than this is cut (with a marker). Default 8 KiB. */
  maxLineChars?: number;
  now?: () => number;
}

/**
 * The bounded per-server log (a ring): lifecycle events, stderr lines and the optional trace. It is
 * the source of the output channel and of the "last stderr lines" a final state carries.
 */
export class ServerLog {
  private readonly entries: LogEntry[] = [];
  private nextSeq = 1;
  private partial = '';
  /** The first entry of the current attempt (`beginAttempt`). */
  private attemptFrom = 0;
  private readonly maxEntries: number;
  private readonly maxLineChars: number;
  private readonly now: () => number;
  private readonly decoder = new TextDecoder('utf-8');
  private readonly appended = new Emitter<LogEntry>();
  /** Fires for every new entry, in order. */
  readonly onDidAppend: Event<LogEntry> = this.appended.event;

  constructor(options: ServerLogOptions = {}) {
    this.maxEntries = options.maxEntries ?? 2000;
    this.maxLineChars = options.maxLineChars ?? 8192;
    this.now = options.now ?? Date.now;
  }

  append(kind: LogEntryKind, text: string): void {
    const entry: LogEntry = { seq: this.nextSeq++, time: this.now(), kind, text };
    this.entries.push(entry);
    if (this.entries.length > this.maxEntries) this.entries.splice(0, this.entries.length - this.maxEntries);
    this.appended.fire(entry);
  }

  lifecycle(text: string): void {
    this.append('lifecycle', text);
  }

  /**
   * Raw stderr bytes; split into lines here (a chunk may end mid-line or mid-character). Empty
   * lines are dropped. `intercept` may claim a complete line (return true) so it is not logged.
   */
  stderr(chunk: Uint8Array, intercept?: (line: string) => boolean): void {
    const text = this.partial + this.decoder.decode(chunk, { stream: true });
    const lines = text.split(/\r?\n/);
    this.partial = lines.pop() ?? '';
    if (this.partial.length > this.maxLineChars) {
      // A server that never ends its line must not grow memory without bound.
      lines.push(this.partial);
      this.partial = '';
    }
    for (const line of lines) {
      if (line === '' || intercept?.(line)) continue;
      this.append('stderr', this.cut(line));
    }
  }

  /** Emits a trailing partial stderr line (call when the process closed). */
  flushStderr(intercept?: (line: string) => boolean): void {
    const rest = this.partial + this.decoder.decode();
    this.partial = '';
    if (rest !== '' && !intercept?.(rest)) this.append('stderr', this.cut(rest));
  }

  /**
   * The process is started again within one start (the 2025 handshake after a refused probe): a
   * final state's stderr tail is this attempt's, not the two together. The log keeps both.
   */
  beginAttempt(): void {
    this.partial = '';
    this.attemptFrom = this.nextSeq;
  }

  /** The last `n` stderr lines still in the ring (the partial line included), since `beginAttempt`. */
  stderrTail(n = 20): string[] {
    const out: string[] = [];
    if (this.partial !== '') out.push(this.cut(this.partial));
    for (let i = this.entries.length - 1; i >= 0 && out.length < n; i--) {
      const e = this.entries[i];
      if (e === undefined || e.seq < this.attemptFrom) break;
      if (e.kind === 'stderr') out.push(e.text);
    }
    return out.slice(0, n).reverse();
  }

  /** Snapshot, oldest first (for a viewer opened late). */
  all(): readonly LogEntry[] {
    return [...this.entries];
  }

  dispose(): void {
    this.appended.dispose();
  }

  private cut(line: string): string {
    return line.length > this.maxLineChars
      ? `${line.slice(0, this.maxLineChars)}… (${line.length - this.maxLineChars} more characters)`
      : line;
  }
}
