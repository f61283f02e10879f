/**
 * The last `limit` characters of a growing text, kept as chunks: appending is O(1) amortised (no
 * copy of the whole tail per append, which made a chatty terminal quadratic), reading joins once.
 */
export class TextTail {
  private chunks: string[] = [];
  private length = 0;

  constructor(private readonly limit: number) {}

  append(text: string): void {
    if (text.length === 0) return;
    this.chunks.push(text);
    this.length += text.length;
    // Drop whole chunks that lie entirely before the tail; `text()` cuts the first one kept.
    while (this.chunks.length > 1 && this.length - this.chunks[0]!.length >= this.limit) this.length -= this.chunks.shift()!.length;
  }

  text(): string {
    const all = this.chunks.length === 1 ? this.chunks[0]! : this.chunks.join('');
    this.chunks = all.length > 0 ? [all] : [];
    return all.length > this.limit ? all.slice(-this.limit) : all;
  }
}
