import type { OutputStream } from '../protocol';
import { FramePool } from './framePool';

export interface RetainedChunk {
  seq: number;
  stream: OutputStream;
  data: Buffer;
}

/** A retained chunk's bytes live in a slab shared with its neighbours (or in a copy of their own). */
interface Slab {
  buf: Buffer;
  used: number;
  /** Retained chunks whose bytes are in this slab. */
  live: number;
}

interface Stored extends RetainedChunk {
  slab: Slab | undefined;
}

/** Chunks of at least this size are copied into slabs; smaller ones into Node's shared small-buffer pool. */
const SLAB_MIN_CHUNK = 4 * 1024;
export const SLAB_BYTES = 256 * 1024;
/** Slabs no window uses any more, shared by all processes (a finished stream leaves at most a few behind). */
const SLABS = new FramePool(SLAB_BYTES, 16, 4);

/**
 * The retained output of one process for `process/read`: the newest `maxBytes` (1 MiB) and at most
 * `maxChunks` chunks. Older chunks are evicted silently; a reader detects the loss by a seq gap
 * (docs/protocol.md §5.3), exactly as with the real server.
 *
 * `push` copies the bytes: the caller's buffer may be reused at once (the server reads every pipe
 * into one reused buffer, src/server/fifoPool.ts). Once a process printed more than 256 KiB, its
 * chunks of 4 KiB and more are copied into 256 KiB slabs that go back to a shared pool once every chunk in them was evicted, so a stream retains
 * its last MiB in ~5 slabs it keeps reusing instead of one fresh buffer per read. The `data` of a
 * chunk returned by `after` or `allData` is valid until that chunk is evicted (the next `push`):
 * use it before giving the event loop a turn.
 */
export class OutputWindow {
  /** Evicted slots (before `head`) are emptied at once: a chunk must not outlive its eviction. */
  private chunks: Array<Stored | undefined> = [];
  private head = 0; // index of the oldest retained chunk (amortised O(1) eviction)
  private bytes = 0;
  /** The slab new chunks are copied into. */
  private slab: Slab | undefined;
  /** Bytes ever pushed: a process that printed less than a slab's worth gets no slab. */
  private pushed = 0;

  constructor(
    private readonly maxBytes = 1024 * 1024,
    private readonly maxChunks = 50_000,
    /** Gets each chunk as it is evicted (the output spool, ./outputSpool.ts): its `data` is valid during the call only. */
    private readonly onEvict?: (chunk: RetainedChunk) => void,
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

  /** Retains a copy of `chunk.data` (the caller may reuse its buffer afterwards). */
  push(chunk: RetainedChunk): void {
    const n = chunk.data.length;
    // Evict first, so that a slab whose chunks are all gone is reused for this one.
    while (this.retainedChunks > 0 && (this.bytes + n > this.maxBytes || this.retainedChunks + 1 > this.maxChunks)) {
      this.evictOldest();
    }
    let data: Buffer;
    let slab: Slab | undefined;
    this.pushed += n;
    if (n < SLAB_MIN_CHUNK || n > SLAB_BYTES || this.pushed <= SLAB_BYTES) {
      // Small: Node's shared 8 KiB pool; the first 256 KiB of a process and a huge chunk: a copy of its own.
      data = Buffer.from(chunk.data);
    } else {
      slab = this.slabFor(n);
      data = slab.buf.subarray(slab.used, slab.used + n);
      chunk.data.copy(data);
      slab.used += n;
      slab.live++;
    }
    this.chunks.push({ seq: chunk.seq, stream: chunk.stream, data, slab });
    this.bytes += n;
    if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      // Only the slots are left to drop; the chunks went at eviction.
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** A slab with room for `n` bytes: the current one, or a fresh one from the pool. */
  private slabFor(n: number): Slab {
    const cur = this.slab;
    if (cur && cur.buf.length - cur.used >= n) return cur;
    if (cur && cur.live === 0) {
      cur.used = 0; // nothing of it is retained any more
      return cur;
    }
    // The current slab stays alive through its chunks and goes back to the pool with the last of them.
    const next: Slab = { buf: SLABS.take(SLAB_BYTES)!, used: 0, live: 0 };
    this.slab = next;
    return next;
  }

  private evictOldest(): void {
    const old = this.chunks[this.head]!;
    this.chunks[this.head++] = undefined;
    this.onEvict?.(old);
    this.bytes -= old.data.length;
    const slab = old.slab;
    if (slab && --slab.live === 0 && slab !== this.slab) SLABS.give(slab.buf);
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
