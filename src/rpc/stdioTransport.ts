import type { Readable, Writable } from 'node:stream';
import { BaseTransport } from './baseTransport';
import { MAX_FRAME_BYTES } from './transport';

/** Newline-delimited JSON over a pair of streams (`--listen stdio`, or a spawned `ssh … serve --listen stdio`). */
export class StdioTransport extends BaseTransport {
  private partial: Buffer[] = [];
  private partialBytes = 0;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {
    super();
    input.on('data', (data: Buffer) => this.onData(data));
    input.on('end', () => this.emitClose('input ended'));
    input.on('error', (e) => this.emitClose(`input error: ${e.message}`));
    output.on('error', (e) => this.close(`output error: ${e.message}`));
  }

  private onData(data: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = data.indexOf(10, start);
      if (nl < 0) break;
      let line = data.subarray(start, nl);
      if (this.partial.length > 0) {
        this.partial.push(line);
        line = Buffer.concat(this.partial);
        this.partial = [];
        this.partialBytes = 0;
      }
      start = nl + 1;
      const text = line.toString('utf8').trim();
      if (text.length > 0) this.emitMessage(text);
      if (this.isClosed) return;
    }
    if (start < data.length) {
      const rest = data.subarray(start);
      this.partial.push(rest);
      this.partialBytes += rest.length;
      if (this.partialBytes > MAX_FRAME_BYTES) this.close(`frame larger than ${MAX_FRAME_BYTES} bytes`);
    }
  }

  send(text: string): void {
    if (this.isClosed) return;
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
