/**
 * Reused buffers for `process/output` frames. Building every frame in a fresh Buffer made a
 * 256 MiB stream allocate ~340 MiB outside the V8 heap, and the garbage collector ran mostly to
 * reclaim it. A frame's buffer comes back once the transport has written it (`sent`), so the
 * number in use is bounded by what is in flight (the backpressure high-water mark).
 */
export class FramePool {
  private readonly free: Buffer[] = [];

  constructor(
    /** Every pooled buffer has this size; larger frames are not pooled. */
    readonly slabBytes: number,
    /** At most this many idle buffers are kept. */
    private readonly maxIdle = 128,
  ) {}

  /** A buffer of `slabBytes` (at least `bytes`), or undefined when a frame that large is not pooled. */
  take(bytes: number): Buffer | undefined {
    if (bytes > this.slabBytes) return undefined;
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabBytes);
  }

  /** Returns a buffer from `take`; the caller must not touch it afterwards. */
  give(buf: Buffer): void {
    if (buf.length === this.slabBytes && this.free.length < this.maxIdle) this.free.push(buf);
  }
}

/** The largest output frame for chunks of up to `chunkBytes`: JSON head (process id up to 1 KiB), base64, tail. */
export function frameBytes(chunkBytes: number): number {
  return 4 * Math.ceil(chunkBytes / 3) + 1024 + 128;
}
