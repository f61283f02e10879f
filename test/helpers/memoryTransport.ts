import { BaseTransport } from '../../src/rpc/baseTransport';

/** Two in-memory transports wired back to back; delivery is async (a microtask), like a socket. */
export class MemoryTransport extends BaseTransport {
  peer: MemoryTransport | undefined;
  readonly sent: string[] = [];

  static pair(): [MemoryTransport, MemoryTransport] {
    const a = new MemoryTransport();
    const b = new MemoryTransport();
    a.peer = b;
    b.peer = a;
    return [a, b];
  }

  send(text: string): void {
    if (this.isClosed) return;
    this.sent.push(text);
    const peer = this.peer;
    queueMicrotask(() => peer?.deliver(text));
  }

  sendFrame(frame: Buffer): void {
    this.send(frame.toString('utf8'));
  }

  deliver(text: string): void {
    this.emitMessage(text);
  }

  protected doClose(): void {
    const peer = this.peer;
    queueMicrotask(() => peer?.close('peer closed'));
  }
}
