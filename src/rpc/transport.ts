import type { Disposable } from '../util';

/**
 * Frames ↔ messages. A transport moves whole JSON texts; it knows nothing of ids or methods.
 * `close` is idempotent and `onClose` fires exactly once, with a reason when the close was not asked for.
 */
export interface Transport {
  send(text: string): void;
  /**
   * Sends one message already encoded as UTF-8 JSON (the hot path for process output). `sent` is
   * called once the transport no longer needs `frame` (written, or dropped on a closed transport),
   * so that its memory can be reused.
   */
  sendFrame(frame: Buffer, sent?: () => void): void;
  onMessage(listener: (text: string) => void): Disposable;
  /**
   * Binary messages that are not JSON (first byte 0x00: binary output frames, src/protocol/binaryOutput.ts).
   * Only transports that carry binary messages have it.
   */
  onBinary?(listener: (frame: Buffer) => void): Disposable;
  /** Sends one such binary message; `sent` as for `sendFrame`. Only where `onBinary` exists. */
  sendBinary?(frame: Buffer, sent?: () => void): void;
  onClose(listener: (reason: string | undefined) => void): Disposable;
  close(reason?: string): void;
  readonly isClosed: boolean;
  /** True once the transport closed because an incoming message was over its size limit. */
  readonly messageTooLarge?: boolean;
  /** Bytes handed to `send` but not yet written to the OS; drives server-side backpressure. */
  readonly bufferedBytes: number;
  /** Fires when `bufferedBytes` falls to `lowWaterMark` after having been above it. */
  onDrain(listener: () => void): Disposable;
  lowWaterMark: number;
  /** Above this many buffered bytes, stop reading input until back at `lowWaterMark` (optional). */
  highWaterMark?: number;
}

/**
 * The largest message our client accepts, on every transport (what a server accepts stays
 * MAX_FRAME_BYTES). Whole-file answers: fs/readFile reads up to 256 MiB on our server (a binary
 * frame, or 342 MiB as base64 JSON); codex's 512 MiB limit is 683 MiB as base64, past this.
 */
export const MAX_ANSWER_BYTES = 384 * 1024 * 1024;

/** Frames above this are refused: the connection is closed (docs/protocol.md §12). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
