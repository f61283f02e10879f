/*
 * What `exec-bridge mcp` gives a model of a command's output: at most `limit` bytes, a quarter from
 * the start and the rest from the end (where the errors are), with one line between that says how
 * many bytes were left out. Held that way as the output arrives, so a 50 MiB flood costs `limit`
 * bytes of memory, not 50 MiB.
 */

/** Bytes of output one tool answer carries by default (the same as the extension's language-model tools). */
export const DEFAULT_OUTPUT_LIMIT = 16 * 1024;

/** The line that stands for the middle of the output. */
export function leftOutMarker(bytes: number): string {
  return `[… ${bytes.toLocaleString('en-US')} bytes left out …]`;
}

export class BoundedOutput {
  private readonly headLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  /** The tail is a ring of `tailLimit` bytes: `ring[ringStart…]` then `ring[…ringStart]` once full. */
  private readonly ring: Buffer;
  private ringStart = 0;
  private ringBytes = 0;
  private total = 0;

  constructor(limit = DEFAULT_OUTPUT_LIMIT) {
    this.headLimit = Math.floor(limit / 4);
    this.ring = Buffer.alloc(limit - this.headLimit);
  }

  /** Bytes pushed since the start or the last `take`. */
  get totalBytes(): number {
    return this.total;
  }

  /** Bytes the text leaves out (before cutting at character boundaries). */
  get leftOutBytes(): number {
    return this.total - this.headBytes - this.ringBytes;
  }

  push(data: Buffer): void {
    if (data.length === 0) return;
    this.total += data.length;
    let rest = data;
    if (this.headBytes < this.headLimit) {
      const n = Math.min(this.headLimit - this.headBytes, rest.length);
      // A copy: `data` may be a view of a large pooled read.
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

  /** The kept output as text: head, the marker when something was left out, tail. */
  text(): string {
    const head = Buffer.concat(this.head);
    const cap = this.ring.length;
    const tail =
      this.ringStart + this.ringBytes <= cap
        ? this.ring.subarray(this.ringStart, this.ringStart + this.ringBytes)
        : Buffer.concat([this.ring.subarray(this.ringStart), this.ring.subarray(0, (this.ringStart + this.ringBytes) % cap)]);
    const leftOut = this.leftOutBytes;
    if (leftOut === 0) return Buffer.concat([head, tail]).toString('utf8');
    // The cut may split a UTF-8 sequence at either end: those bytes count as left out too.
    const h = head.subarray(0, utf8End(head));
    const t = tail.subarray(utf8Start(tail));
    const headText = h.toString('utf8');
    const sep = headText === '' || headText.endsWith('\n') ? '' : '\n';
    return `${headText}${sep}${leftOutMarker(leftOut + head.length - h.length + tail.length - t.length)}\n${t.toString('utf8')}`;
  }

  /** The text and the counts, then empty again (what a background process wrote since the last read). */
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
