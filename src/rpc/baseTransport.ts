import { Emitter, type Disposable } from '../util';
import type { Transport } from './transport';
import { noteTransientBytes } from './youngGc';

/**
 * Texts longer than this are sent as UTF-8 bytes. Node writes a socket's queued chunks in one
 * `writev`, and a string there reserves three bytes per character: two 350 MB answers queued
 * together passed its 2 GiB bound, the write failed with ENOBUFS and the connection was lost (1006).
 * A string is copied once on its way to the socket either way.
 */
export const LARGE_TEXT = 1024 * 1024;

/** Shared event plumbing of our transports. Subclasses call `emitMessage`, `emitClose`, `emitDrain`. */
export abstract class BaseTransport implements Transport {
  private readonly messages = new Emitter<string>();
  private readonly closes = new Emitter<string | undefined>();
  private readonly drains = new Emitter<void>();
  private readonly binaries = new Emitter<Buffer>();
  private closed = false;
  private tooLarge = false;
  protected pending = 0;
  /** `onDrain` fires when `bufferedBytes` falls to this level (0 = fully flushed). */
  lowWaterMark = 0;
  /**
   * Above this many buffered bytes the transport stops reading input (a peer that does not read
   * may not keep sending requests whose answers pile up) until `bufferedBytes` is back at
   * `lowWaterMark`. Default: never.
   */
  highWaterMark = Infinity;
  private inputHeld = false;

  abstract send(text: string): void;
  abstract sendFrame(frame: Buffer, sent?: () => void): void;
  protected abstract doClose(): void;
  /** Stops and restarts reading input (backpressure); transports that cannot do it ignore it. */
  protected holdInput(): void {}
  protected releaseInput(): void {}

  get isClosed(): boolean {
    return this.closed;
  }

  get messageTooLarge(): boolean {
    return this.tooLarge;
  }

  /** Closes the transport because an incoming message was over its limit (`messageTooLarge`). */
  protected closeForSize(reason: string): void {
    this.tooLarge = true;
    this.close(reason);
  }

  get bufferedBytes(): number {
    return this.pending;
  }

  onMessage(listener: (text: string) => void): Disposable {
    return this.messages.event(listener);
  }

  /** Subclasses that carry binary messages expose this as `onBinary` (see WebSocketTransport). */
  protected onBinaryMessage(listener: (frame: Buffer) => void): Disposable {
    return this.binaries.event(listener);
  }

  onClose(listener: (reason: string | undefined) => void): Disposable {
    return this.closes.event(listener);
  }

  onDrain(listener: () => void): Disposable {
    return this.drains.event(listener);
  }

  close(reason?: string): void {
    if (this.closed) return;
    this.doClose();
    this.emitClose(reason);
  }

  protected emitMessage(text: string): void {
    if (!this.closed) this.messages.fire(text);
  }

  protected emitBinary(frame: Buffer): void {
    if (!this.closed) this.binaries.fire(frame);
  }

  protected emitClose(reason: string | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.closes.fire(reason);
    this.messages.dispose();
    this.closes.dispose();
    this.drains.dispose();
    this.binaries.dispose();
  }

  /** Counts bytes handed to the OS layer; every outgoing frame goes through here. */
  protected queued(bytes: number): void {
    this.pending += bytes;
    noteTransientBytes(bytes);
    if (!this.inputHeld && this.pending > this.highWaterMark && !this.closed) {
      this.inputHeld = true;
      this.holdInput();
    }
  }

  /** True while input is held back because too much output is queued. */
  get inputHeldBack(): boolean {
    return this.inputHeld;
  }

  protected written(bytes: number): void {
    const before = this.pending;
    this.pending = Math.max(0, this.pending - bytes);
    if (before > this.lowWaterMark && this.pending <= this.lowWaterMark) {
      if (this.inputHeld) {
        this.inputHeld = false;
        if (!this.closed) this.releaseInput();
      }
      this.drains.fire();
    }
  }
}
