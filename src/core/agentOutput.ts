/*
 * What a language model is given of a command's output: bounded, as its head and its tail with one
 * line between them that says how much was left out. Held that way as the output arrives, so a
 * 50 MiB flood costs the bound in memory, not 50 MiB. No `vscode` here: the extension's LM tools
 * (whose marker adds that the full output is in the terminal) and `exec-bridge mcp` share it.
 */

/** Bytes of output a tool result carries at most by default (head + tail; the marker line and notes come on top). */
export const AGENT_OUTPUT_LIMIT = 16 * 1024;

export interface OutputBound {
  /** Bytes kept from the start. */
  head: number;
  /** Bytes kept from the end. */
  tail: number;
}

/** A quarter from the start (what the command set out to do), the rest from the end (where errors are). */
export function outputBound(limit = AGENT_OUTPUT_LIMIT): OutputBound {
  const head = Math.floor(limit / 4);
  return { head, tail: limit - head };
}

/** The extension's marker note: its runs are in a terminal, which has all of the output. */
export const FULL_OUTPUT_IN_TERMINAL = 'the full output is in the terminal';

/** The line that stands for the middle: `[… 52,428,800 bytes left out …]`, or `[… 52,428,800 bytes left out; NOTE …]`. */
export function leftOutMarker(bytes: number, note?: string): string {
  return `[… ${bytes.toLocaleString('en-US')} bytes left out${note ? `; ${note}` : ''} …]`;
}

/**
 * Output as it arrives, kept as at most `bound.head` bytes from its start and `bound.tail` from its
 * end (a ring). `take()` gives the text and starts over (what a background process wrote since the
 * last read). `note` goes into the marker line (where the rest can be found).
 */
export class BoundedOutput {
  private head: Buffer[] = [];
  private headBytes = 0;
  /** The tail is a ring of `bound.tail` bytes: `ring[ringStart…]` then `ring[…ringStart]` once full. */
  private readonly ring: Buffer;
  private ringStart = 0;
  private ringBytes = 0;
  private total = 0;

  constructor(
    private readonly bound: OutputBound = outputBound(),
    private readonly note?: string,
  ) {
    this.ring = Buffer.alloc(bound.tail);
  }

  /** Bytes pushed since the start (or the last `take`). */
  get totalBytes(): number {
    return this.total;
  }
  /** Bytes that `text()` leaves out (before cutting at character boundaries). */
  get leftOutBytes(): number {
    return this.total - this.headBytes - this.ringBytes;
  }

  push(data: Buffer): void {
    if (data.length === 0) return;
    this.total += data.length;
    let rest = data;
    if (this.headBytes < this.bound.head) {
      const n = Math.min(this.bound.head - this.headBytes, rest.length);
      // A copy: the caller's buffer may be a view of a pooled frame.
      this.head.push(Buffer.from(rest.subarray(0, n)));
      this.headBytes += n;
      rest = rest.subarray(n);
    }
    const cap = this.ring.length;
    if (rest.length === 0 || cap === 0) return;
    if (rest.length >= cap) {
      rest.copy(this.ring, 0, rest.length - cap);
      this.ringStart = 0;
      this.ringBytes = cap;
      return;
    }
    // Write after the newest byte, wrapping; once full the oldest bytes are overwritten.
    const end = (this.ringStart + this.ringBytes) % cap;
    const first = Math.min(rest.length, cap - end);
    rest.copy(this.ring, end, 0, first);
    rest.copy(this.ring, 0, first);
    const overflow = Math.max(0, this.ringBytes + rest.length - cap);
    this.ringBytes = Math.min(cap, this.ringBytes + rest.length);
    this.ringStart = (this.ringStart + overflow) % cap;
  }

  /** The kept output as text for a model: head, the marker (if anything was left out), tail. */
  text(): string {
    const head = Buffer.concat(this.head);
    const cap = this.ring.length;
    const tail =
      this.ringStart + this.ringBytes <= cap
        ? this.ring.subarray(this.ringStart, this.ringStart + this.ringBytes)
        : Buffer.concat([this.ring.subarray(this.ringStart), this.ring.subarray(0, (this.ringStart + this.ringBytes) % cap)]);
    const leftOut = this.leftOutBytes;
    if (leftOut === 0) return forModel(Buffer.concat([head, tail]).toString('utf8'));
    // Cut at character boundaries: the head's end and the tail's start may split a UTF-8 sequence
    // (those bytes count as left out too).
    const h = head.subarray(0, utf8End(head));
    const t = tail.subarray(utf8Start(tail));
    const skipped = leftOut + (head.length - h.length) + (tail.length - t.length);
    const headText = forModel(h.toString('utf8'));
    const sep = headText === '' || headText.endsWith('\n') ? '' : '\n';
    return `${headText}${sep}${leftOutMarker(skipped, this.note)}\n${forModel(t.toString('utf8'))}`;
  }

  /** The text and the counts, then empty again. */
  take(): { text: string; bytes: number; leftOut: number } {
    const out = { text: this.text(), bytes: this.total, leftOut: this.leftOutBytes };
    this.head = [];
    this.headBytes = 0;
    this.ringStart = 0;
    this.ringBytes = 0;
    this.total = 0;
    return out;
  }
}

/** The length of `buf` without a UTF-8 sequence cut off at its end. */
export function utf8End(buf: Buffer): number {
  // Step back over continuation bytes (at most 3) to the last sequence's lead byte.
  let i = buf.length;
  while (i > 0 && buf.length - i < 3 && (buf[i - 1]! & 0xc0) === 0x80) i--;
  if (i === 0) return buf.length;
  const lead = buf[i - 1]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - (i - 1) >= need ? buf.length : i - 1;
}

/** The first index of `buf` that begins a character (past a cut-off sequence's continuation bytes). */
export function utf8Start(buf: Buffer): number {
  let i = 0;
  while (i < buf.length && i < 3 && (buf[i]! & 0xc0) === 0x80) i++;
  return i;
}

// Colours, cursor moves and titles mean nothing to a model; carriage-return progress bars keep their last state.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** Terminal text as plain text: escape sequences out, `\r\n` → `\n`, a line redrawn with `\r` as its last state. */
export function forModel(text: string): string {
  return text
    .replace(ESCAPES, '')
    .replace(/\r+\n/g, '\n')
    .split('\n')
    .map((line) => {
      if (!line.includes('\r')) return line;
      const drawn = line.replace(/\r+$/, '');
      return drawn.slice(drawn.lastIndexOf('\r') + 1);
    })
    .join('\n');
}
