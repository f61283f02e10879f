import type { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import { isBinaryFrameKind } from '../protocol';
import type { Disposable } from '../util';
import { BaseTransport, LARGE_TEXT } from './baseTransport';

/**
 * One JSON-RPC message per WebSocket message. Binary messages holding UTF-8 JSON are accepted too;
 * a binary message whose first byte is 0x00 or 0x01 is a binary frame (`onBinary`, src/protocol/binaryOutput.ts).
 */
export class WebSocketTransport extends BaseTransport {
  /** Set while the socket is corked for this turn: the immediate that uncorks it. */
  private batched: NodeJS.Immediate | undefined;

  /**
   * `socket`: the connection under `ws`, when the caller has it (a server's upgraded request). Then
   * what is sent in one turn of the event loop leaves in one write: ws writes each message on its
   * own (a syscall each), and a burst of process starts sends four or five small messages per
   * process (answer, output, exited, closed).
   */
  constructor(
    private readonly ws: WebSocket,
    private readonly underlying?: Pick<Duplex, 'cork' | 'uncork'>,
  ) {
    super();
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        const buf = rawToBuffer(data);
        if (isBinaryFrameKind(buf[0])) this.emitBinary(buf);
        else this.emitMessage(buf.toString('utf8'));
      } else {
        this.emitMessage(rawToBuffer(data).toString('utf8'));
      }
    });
    ws.on('close', (code, reason) => this.emitClose(`websocket closed (${code}${reason.length ? `: ${reason.toString()}` : ''})`));
    ws.on('error', (err) => {
      // ws refuses a message over its maxPayload before reading it (close code 1009).
      if ((err as NodeJS.ErrnoException).code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.closeForSize(`websocket error: ${err.message}`);
      else this.emitClose(`websocket error: ${err.message}`);
      ws.terminate();
    });
  }

  get socket(): WebSocket {
    return this.ws;
  }

  send(text: string): void {
    if (this.isClosed || this.ws.readyState !== this.ws.OPEN) return;
    if (text.length > LARGE_TEXT) return this.sendFrame(Buffer.from(text, 'utf8'));
    // Our messages are JSON of base64 and ASCII mostly: length is a close enough byte count for
    // the backpressure high-water mark.
    const n = text.length;
    this.queued(n);
    this.batch();
    this.ws.send(text, (err) => {
      this.written(n);
      if (err) this.close(`send failed: ${err.message}`);
    });
  }

  sendFrame(frame: Buffer, sent?: () => void): void {
    if (this.isClosed || this.ws.readyState !== this.ws.OPEN) return sent?.();
    const n = frame.length;
    this.queued(n);
    this.batch();
    // A text frame from bytes: no string → UTF-8 re-encoding on the way to the socket.
    this.ws.send(frame, { binary: false }, (err) => {
      this.written(n);
      sent?.(); // the socket has the bytes (or failed for good): the frame's memory is free
      if (err) this.close(`send failed: ${err.message}`);
    });
  }

  onBinary(listener: (frame: Buffer) => void): Disposable {
    return this.onBinaryMessage(listener);
  }

  sendBinary(frame: Buffer, sent?: () => void): void {
    if (this.isClosed || this.ws.readyState !== this.ws.OPEN) return sent?.();
    const n = frame.length;
    this.queued(n);
    this.batch();
    this.ws.send(frame, { binary: true }, (err) => {
      this.written(n);
      sent?.();
      if (err) this.close(`send failed: ${err.message}`);
    });
  }

  /** Holds the socket's writes until this turn of the event loop has done its I/O callbacks, then writes them at once. */
  private batch(): void {
    if (this.batched || !this.underlying) return;
    this.underlying.cork();
    this.batched = setImmediate(() => this.flushBatch());
  }

  private flushBatch(): void {
    if (!this.batched) return;
    clearImmediate(this.batched);
    this.batched = undefined;
    this.underlying?.uncork();
  }

  protected override holdInput(): void {
    this.ws.pause();
  }

  protected override releaseInput(): void {
    this.ws.resume();
  }

  protected doClose(): void {
    // What this turn sent goes to the socket first: written before the socket is destroyed, it still
    // reaches the peer (an error answer or a notification right before the close).
    this.flushBatch();
    // terminate (not close): the peer may be gone; waiting for a close handshake only delays teardown.
    this.ws.terminate();
  }
}

function rawToBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
