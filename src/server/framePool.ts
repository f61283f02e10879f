/**
 * Reused buffers for `process/output` frames. Building every frame in a fresh Buffer made a
 * 256 MiB stream allocate ~340 MiB outside the V8 heap, and the garbage collector ran mostly to
 * reclaim it. A frame's buffer comes back once the transport has written it (`sent`), so the
 * number in use is bounded by what is in flight (the backpressure high-water mark).
 */
export class FramePool {
  private readonly free: Buffer[] = [];
  private takenSinceTrim = 0;
  private trimTimer: NodeJS.Timeout | undefined;

  constructor(
    /** Every pooled buffer has this size; larger frames are not pooled. */
    readonly slabBytes: number,
    /** At most this many idle buffers are kept. */
    private readonly maxIdle = 128,
    /** Once nothing was taken for `trimMs`, idle buffers beyond `keepIdle` are let go (a finished stream leaves no peak behind). */
    private readonly keepIdle = 8,
    private readonly trimMs = 1000,
  ) {}

  get idle(): number {
    return this.free.length;
  }

  /** A buffer of `slabBytes` (at least `bytes`), or undefined when a frame that large is not pooled. */
  take(bytes: number): Buffer | undefined {
    if (bytes > this.slabBytes) return undefined;
    this.takenSinceTrim++;
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabBytes);
  }

  /** Returns a buffer from `take`; the caller must not touch it afterwards. */
  give(buf: Buffer): void {
    if (buf.length !== this.slabBytes || this.free.length >= this.maxIdle) return;
    this.free.push(buf);
    if (this.free.length > this.keepIdle && !this.trimTimer) this.scheduleTrim();
  }

  private scheduleTrim(): void {
    this.takenSinceTrim = 0;
    this.trimTimer = setTimeout(() => {
      this.trimTimer = undefined;
      if (this.takenSinceTrim > 0) {
        if (this.free.length > this.keepIdle) this.scheduleTrim(); // still in use: look again later
        return;
      }
      this.free.length = Math.min(this.free.length, this.keepIdle);
    }, this.trimMs);
    this.trimTimer.unref();
  }
}

/** The largest output frame for chunks of up to `chunkBytes`: JSON head (process id up to 1 KiB), base64, tail. */
export function frameBytes(chunkBytes: number): number {
  return 4 * Math.ceil(chunkBytes / 3) + 1024 + 128;
}
