import type { Connection } from '../../src/client';
import type { Disposable } from '../../src/util/disposable';

/**
 * A real connection passed through with a look at its traffic: `sent` sees each text before it goes
 * out (frames as text), `received` each text the peer sent. Only the transport is passed on (no
 * ping, pause or binary frames), so the client uses none of them on it. Subclasses keep their counts.
 */
export abstract class ObservedConnection implements Connection {
  constructor(private readonly inner: Connection) {
    inner.onMessage((text) => this.received(text));
  }
  protected abstract sent(text: string): void;
  protected abstract received(text: string): void;
  get isClosed(): boolean {
    return this.inner.isClosed;
  }
  get bufferedBytes(): number {
    return this.inner.bufferedBytes;
  }
  get lowWaterMark(): number {
    return this.inner.lowWaterMark;
  }
  set lowWaterMark(v: number) {
    this.inner.lowWaterMark = v;
  }
  send(text: string): void {
    this.sent(text);
    this.inner.send(text);
  }
  sendFrame(frame: Buffer): void {
    this.send(frame.toString('utf8'));
  }
  onMessage(l: (text: string) => void): Disposable {
    return this.inner.onMessage(l);
  }
  onClose(l: (reason: string | undefined) => void): Disposable {
    return this.inner.onClose(l);
  }
  onDrain(l: () => void): Disposable {
    return this.inner.onDrain(l);
  }
  close(reason?: string): void {
    this.inner.close(reason);
  }
}
