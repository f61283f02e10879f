/*
 * What a language model is given of a command's output: bounded, as its head and its tail with one
 * line between them that says how much was left out (the full output stays in the terminal). No
 * `vscode` here: the extension's LM tools and `exec-bridge mcp` share it.
 */

/** Bytes of output a tool result carries at most (head + tail; the marker line and notes come on top). */
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

/** The line that stands for the middle: `[… 52,428,800 bytes left out …]`. */
export function leftOutMarker(bytes: number): string {
  return `[… ${bytes.toLocaleString('en-US')} bytes left out; the full output is in the terminal …]`;
}

/**
 * Output as it arrives, kept as at most `head` bytes from its start and `tail` from its end (a ring
 * of chunks), so a 50 MiB flood holds 16 KiB here. `take()` gives the text and starts over (what a
 * background process wrote since the last read).
 */
export class BoundedOutput {
  private headParts: Buffer[] = [];
  private headBytes = 0;
  private tailParts: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(private readonly bound: OutputBound = outputBound()) {}

  /** Bytes pushed since the start (or the last `take`). */
  get totalBytes(): number {
    return this.total;
  }
  /** Bytes that `text()` leaves out. */
  get leftOutBytes(): number {
    return this.total - this.headBytes - this.tailBytes;
  }

  push(data: Buffer): void {
    if (data.length === 0) return;
    this.total += data.length;
    let rest = data;
    if (this.headBytes < this.bound.head) {
      const take = Math.min(this.bound.head - this.headBytes, rest.length);
      // A copy: the caller's buffer may be a view of a pooled frame.
      this.headParts.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.bound.tail === 0) return;
    if (rest.length >= this.bound.tail) {
      this.tailParts = [Buffer.from(rest.subarray(rest.length - this.bound.tail))];
      this.tailBytes = this.bound.tail;
      return;
    }
    this.tailParts.push(Buffer.from(rest));
    this.tailBytes += rest.length;
    // Drop whole chunks that lie entirely before the tail; the first one kept is cut in `text()`.
    while (this.tailParts.length > 1 && this.tailBytes - this.tailParts[0]!.length >= this.bound.tail)
      this.tailBytes -= this.tailParts.shift()!.length;
    if (this.tailBytes > this.bound.tail) {
      const first = this.tailParts[0]!;
      this.tailParts[0] = first.subarray(this.tailBytes - this.bound.tail);
      this.tailBytes = this.bound.tail;
    }
  }

  /** The kept output as text for a model: head, the marker (if anything was left out), tail. */
  text(): string {
    const head = Buffer.concat(this.headParts);
    const tail = Buffer.concat(this.tailParts);
    const leftOut = this.leftOutBytes;
    if (leftOut === 0) return forModel(Buffer.concat([head, tail]).toString('utf8'));
    // Cut at character boundaries: the head's end and the tail's start may split a UTF-8 sequence.
    const h = head.subarray(0, utf8Boundary(head, head.length));
    const t = tail.subarray(utf8Start(tail));
    const skipped = leftOut + (head.length - h.length) + (tail.length - t.length);
    const headText = forModel(h.toString('utf8'));
    const tailText = forModel(t.toString('utf8'));
    return `${headText}${headText.endsWith('\n') || headText === '' ? '' : '\n'}${leftOutMarker(skipped)}\n${tailText}`;
  }

  /** The text, then empty again. */
  take(): { text: string; bytes: number; leftOut: number } {
    const out = { text: this.text(), bytes: this.total, leftOut: this.leftOutBytes };
    this.headParts = [];
    this.headBytes = 0;
    this.tailParts = [];
    this.tailBytes = 0;
    this.total = 0;
    return out;
  }
}

/** The largest `end` ≤ `at` that does not cut a UTF-8 sequence of `buf` in two. */
function utf8Boundary(buf: Buffer, at: number): number {
  // Step back over at most 3 continuation bytes to the sequence's lead byte.
  let i = at;
  while (i > 0 && at - i < 4 && (buf[i - 1]! & 0xc0) === 0x80) i--;
  if (i === 0) return at;
  const lead = buf[i - 1]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return at - (i - 1) >= need ? at : i - 1;
}

/** The first index of `buf` that starts a character (skips a cut-off sequence's continuation bytes). */
function utf8Start(buf: Buffer): number {
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
