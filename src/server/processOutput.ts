import { encodeBinaryOutput, type OutputStream } from '../protocol';
import { FramePool, frameBytes } from './framePool';

/** Where a process delivers its notifications: the session's attached connection, if any. */
export interface ProcessSink {
  notify(method: string, params: unknown): void;
  /** The same, for a notification already encoded (process output: the hot path); `sent` once its memory is free. */
  notifyFrame(frame: Buffer, sent?: () => void): void;
  /** True when output goes as binary frames (`notifyBinary`) to the attached client. */
  binaryOutput?(): boolean;
  notifyBinary?(frame: Buffer, sent?: () => void): void;
  /** True while the attached client's socket buffer is above the high-water mark. */
  congested(): boolean;
  /** Calls `cb` once the congestion clears, or the client detaches. */
  whenUncongested(cb: () => void): void;
  /** Whether a client is attached (undefined: unknown; a credit window then holds as always). */
  attached?(): boolean;
}

export const MAX_CHUNK = 64 * 1024;
/** Output frames are built in reused buffers: a stream allocates (and collects) almost nothing per frame. */
const FRAMES = new FramePool(frameBytes(MAX_CHUNK));

/**
 * `{"method":"process/output","params":{…,"chunk":"<base64>"}}` written straight into one Buffer:
 * output is most of what a server sends, and building it this way skips JSON.stringify over the
 * base64 text and the UTF-8 re-encoding of the whole frame on the way to the socket.
 */
export function encodeOutputNotification(
  idJson: string,
  seq: number,
  stream: OutputStream,
  data: Buffer,
  into?: (bytes: number) => Buffer | undefined,
): Buffer {
  const head = `{"method":"process/output","params":{"processId":${idJson},"seq":${seq},"stream":"${stream}","chunk":"`;
  const headBytes = Buffer.byteLength(head);
  const b64Len = 4 * Math.ceil(data.length / 3);
  const size = headBytes + b64Len + 3;
  const frame = into?.(size)?.subarray(0, size) ?? Buffer.allocUnsafe(size);
  frame.write(head, 0, 'utf8');
  frame.write(data.toString('base64'), headBytes, 'latin1');
  frame.write('"}}', headBytes + b64Len, 'latin1');
  return frame;
}

/** Sends one output event to the sink: a binary frame when the client takes them, else encoded JSON, in a pooled buffer. */
export function sendOutput(sink: ProcessSink, idJson: string, idBytes: Buffer, seq: number, stream: OutputStream, data: Buffer): void {
  let slab: Buffer | undefined;
  const take = (bytes: number) => (slab = FRAMES.take(bytes));
  if (sink.binaryOutput?.() && sink.notifyBinary) {
    const frame = encodeBinaryOutput(idBytes, seq, stream, data, take);
    sink.notifyBinary(frame, slab && (() => FRAMES.give(slab!)));
  } else {
    const frame = encodeOutputNotification(idJson, seq, stream, data, take);
    sink.notifyFrame(frame, slab && (() => FRAMES.give(slab!)));
  }
}

/** The coalescers' pending buffers, by size: a buffer is in use only from a read until the next turn of the loop. */
const PENDING = new Map<number, FramePool>();

/**
 * Coalesces a stream's reads into output events: a lone small read goes out on the next turn of
 * the loop, reads in the same turn join it, and no event carries more than `maxChunk` bytes.
 *
 * Nothing is kept of the caller's buffer (the server reads every pipe into one reused buffer,
 * src/server/fifoPool.ts): whole chunks go out from it at once, the rest is copied into a pooled
 * buffer. Likewise `emit` gets bytes that are valid only during the call: it copies what it keeps.
 */
export class OutputCoalescer {
  private pending: { stream: OutputStream; buf: Buffer; bytes: number } | undefined;
  private flushScheduled = false;
  private readonly pool: FramePool;

  constructor(
    private readonly maxChunk: number,
    private readonly emit: (stream: OutputStream, data: Buffer) => void,
  ) {
    let pool = PENDING.get(maxChunk);
    if (!pool) PENDING.set(maxChunk, (pool = new FramePool(maxChunk, 64, 4)));
    this.pool = pool;
  }

  push(stream: OutputStream, data: Buffer): void {
    if (this.pending && this.pending.stream !== stream) this.flush();
    let off = 0;
    if (!this.pending) {
      // Nothing waits: whole chunks go out straight from the caller's buffer.
      for (; data.length - off >= this.maxChunk; off += this.maxChunk) this.emit(stream, data.subarray(off, off + this.maxChunk));
      if (off === data.length) return;
    }
    while (off < data.length) {
      const p = (this.pending ??= { stream, buf: this.pool.take(this.maxChunk)!, bytes: 0 });
      const n = Math.min(this.maxChunk - p.bytes, data.length - off);
      data.copy(p.buf, p.bytes, off, off + n);
      p.bytes += n;
      off += n;
      if (p.bytes === this.maxChunk) this.flush();
    }
    if (this.pending && !this.flushScheduled) {
      // A lone small write goes out on the next turn of the loop; reads that arrive in the same
      // turn (fast output) join it, up to maxChunk bytes per notification.
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  flush(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    try {
      this.emit(p.stream, p.buf.subarray(0, p.bytes));
    } finally {
      this.pool.give(p.buf);
    }
  }
}
