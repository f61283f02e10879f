import type { OutputStream } from '../protocol/common';

export interface RetainedChunk {
  seq: number;
  stream: OutputStream;
  data: Buffer;
}

/**
 * The retained output of one process for `process/read`: the newest `maxBytes` (1 MiB) and at most
 * `maxChunks` chunks. Older chunks are evicted silently; a reader detects the loss by a seq gap
 * (docs/protocol.md §5.3), exactly as with the real server.
 */
export class OutputWindow {
  /** Evicted slots (before `head`) are emptied at once: a 64 KiB chunk must not outlive its eviction. */
  private chunks: Array<RetainedChunk | undefined> = [];
  private head = 0; // index of the oldest retained chunk (amortised O(1) eviction)
  private bytes = 0;

  constructor(
    private readonly maxBytes = 1024 * 1024,
    private readonly maxChunks = 50_000,
  ) {}

  get retainedBytes(): number {
    return this.bytes;
  }

  get retainedChunks(): number {
    return this.chunks.length - this.head;
  }

  /** Oldest retained seq, or undefined when empty. */
  get firstSeq(): number | undefined {
    return this.chunks[this.head]?.seq;
  }

  push(chunk: RetainedChunk): void {
    this.chunks.push(chunk);
    this.bytes += chunk.data.length;
    // Keep at least the newest chunk even if it alone exceeds the budget.
    while (this.retainedChunks > 1 && (this.bytes > this.maxBytes || this.retainedChunks > this.maxChunks)) {
      const old = this.chunks[this.head]!;
      this.chunks[this.head++] = undefined;
      this.bytes -= old.data.length;
    }
    if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      // Only the slots are left to drop; the chunks went at eviction.
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Chunks with seq > afterSeq, in order. With a byte budget, stops before the chunk that would
   * exceed it, but always returns at least one chunk if any is available; chunks are never split.
   */
  after(afterSeq: number, maxBytes?: number): RetainedChunk[] {
    let i = this.lowerBound(afterSeq + 1);
    const out: RetainedChunk[] = [];
    let total = 0;
    for (; i < this.chunks.length; i++) {
      const c = this.chunks[i]!;
      if (maxBytes !== undefined && out.length > 0 && total + c.data.length > maxBytes) break;
      out.push(c);
      total += c.data.length;
    }
    return out;
  }

  /** Every retained chunk's bytes, oldest first (for the sandbox-denial heuristic). */
  allData(): Buffer[] {
    return this.chunks.slice(this.head).map((c) => c!.data);
  }

  private lowerBound(seq: number): number {
    let lo = this.head;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.chunks[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
