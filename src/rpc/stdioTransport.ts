import type { Readable, Writable } from 'node:stream';
import { LineSplitter } from '../util';
import { BaseTransport, LARGE_TEXT } from './baseTransport';
import { MAX_FRAME_BYTES } from './transport';

/** Newline-delimited JSON over a pair of streams (`--listen stdio`, or a spawned `ssh … serve --listen stdio`). */
export class StdioTransport extends BaseTransport {
  /** One JSON text per line; a line past the limit closes the transport (`messageTooLarge`). */
  private readonly lines: LineSplitter;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    /** The longest line accepted; default the frame limit (a server); our client takes whole-file answers. */
    maxMessageBytes: number = MAX_FRAME_BYTES,
  ) {
    super();
    this.lines = new LineSplitter({
      maxLineBytes: maxMessageBytes,
      overflow: 'stop',
      onLine: (line) => {
        const text = line.toString('utf8').trim();
        if (text.length > 0) this.emitMessage(text);
        if (this.isClosed) this.lines.stop();
      },
      onOverflow: () => this.closeForSize(`frame larger than ${maxMessageBytes} bytes`),
    });
    input.on('data', (data: Buffer) => this.lines.push(data));
    input.on('end', () => this.emitClose('input ended'));
    input.on('error', (e) => this.emitClose(`input error: ${e.message}`));
    output.on('error', (e) => this.close(`output error: ${e.message}`));
  }

  send(text: string): void {
    if (this.isClosed) return;
    if (text.length > LARGE_TEXT) return this.sendFrame(Buffer.from(text, 'utf8'));
    const n = text.length + 1;
    this.queued(n);
    this.output.write(text + '\n', () => this.written(n));
  }

  sendFrame(frame: Buffer, sent?: () => void): void {
    if (this.isClosed) return sent?.();
    const n = frame.length + 1;
    this.queued(n);
    this.output.write(frame);
    this.output.write('\n', () => {
      this.written(n);
      sent?.();
    });
  }

  /** Stops reading input (backpressure for a slow consumer, see `ExecServerClient.setIncomingPaused`). */
  pause(): void {
    this.input.pause();
  }

  resume(): void {
    this.input.resume();
  }

  protected override holdInput(): void {
    this.input.pause();
  }

  protected override releaseInput(): void {
    this.input.resume();
  }

  protected doClose(): void {
    this.input.destroy();
    this.output.end();
  }
}
