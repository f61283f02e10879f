import { HTTP_CANCEL, HttpBodyDeltaNotification } from '../protocol';
import type { ParamsOf, RequestMethod, ResultOf } from '../protocol';
import type { CallOptions } from './types';

/** An HTTP request the executor makes, its response body streamed back (`http/request` with `streamResponse`). */
export interface HttpStreamRequest {
  method: string;
  /** http or https. */
  url: string;
  /** In order; repeated names are kept. */
  headers: Array<{ name: string; value: string }>;
  body?: Uint8Array;
  /** `follow` (the default): the executor follows redirects; `stop`: a redirect is the answer. */
  redirect?: 'follow' | 'stop';
  /** Aborts the request, connecting or streaming: the body then errors with the signal's reason. */
  signal?: AbortSignal;
}

export interface HttpStreamResponse {
  status: number;
  /** As received (names lowercased, order and repeats kept). */
  headers: Array<{ name: string; value: string }>;
  /** The body as it arrives; cancelling it ends the download on the executor (where it can, below). */
  body: ReadableStream<Uint8Array>;
}

/**
 * Unread body bytes one response may hold in this process. Bodies are pushed by the executor (no
 * credit): a reader that stops reading without cancelling would otherwise grow without bound.
 */
export const MAX_UNREAD_HTTP_BYTES = 64 * 1024 * 1024;

/** What a stream needs of the client (./execServerClient.ts). */
export interface HttpStreamHost {
  invoke<M extends RequestMethod>(
    method: M,
    params: ParamsOf<M>,
    options: CallOptions,
    hooks: { onSent?(gen: number): void },
  ): Promise<ResultOf<M>>;
  nextId(kind: string): string;
  capabilities(): Readonly<Record<string, boolean>>;
  /** The current connection's generation (undefined while there is none). */
  currentGen(): number | undefined;
}

/** One streamed body: its deltas in seq order into a ReadableStream. */
class BodySink {
  gen: number | undefined;
  private next = 1;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private ended = false;
  readonly body: ReadableStream<Uint8Array>;

  constructor(
    readonly requestId: string,
    private readonly onEnd: (sink: BodySink, cancelOnExecutor: boolean) => void,
  ) {
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.controller = c;
        },
        cancel: () => this.end(true),
      },
      { highWaterMark: MAX_UNREAD_HTTP_BYTES, size: (chunk) => chunk.byteLength },
    );
  }

  delta(d: HttpBodyDeltaNotification): void {
    if (this.ended) return;
    if (d.seq !== this.next) return this.fail(new Error(`part of the response body was lost (part ${this.next} missing)`), true);
    this.next++;
    const bytes = Buffer.from(d.deltaBase64, 'base64');
    if (bytes.length > 0) this.controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
    if (d.error !== null) return this.fail(new Error(`the response body broke off on the executor: ${d.error}`), false);
    if (d.done) {
      this.controller.close();
      this.end(false);
      return;
    }
    if ((this.controller.desiredSize ?? 0) < 0)
      this.fail(new Error(`more than ${MAX_UNREAD_HTTP_BYTES} bytes of the response body were left unread`), true);
  }

  /** Ends the body with `error`; `cancelOnExecutor`: the executor may still be sending it. */
  fail(error: unknown, cancelOnExecutor: boolean): void {
    if (this.ended) return;
    this.controller.error(error);
    this.end(cancelOnExecutor);
  }

  private end(cancelOnExecutor: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this, cancelOnExecutor);
  }
}

/**
 * The streamed `http/request`s of one client: each body's `http/request/bodyDelta`s to its stream,
 * ended when the connection that carries it is lost (the executor ends it then too), and, on an
 * executor that announces `execBridgeHttpCancel` (ours), ended there when the reader cancels or the
 * caller aborts (`execBridge/httpCancel`). On one that does not (codex) the rest of such a body is
 * ignored as it arrives, until the far side ends it or the connection closes.
 */
export class HttpStreams {
  private readonly sinks = new Map<string, BodySink>();

  constructor(private readonly host: HttpStreamHost) {}

  /** `http/request/bodyDelta` from the current connection. */
  dispatch(params: unknown): void {
    const d = HttpBodyDeltaNotification.safeParse(params);
    if (d.success) this.sinks.get(d.data.requestId)?.delta(d.data);
  }

  /** The connection of generation `gen` closed: its bodies are cut off (the executor stopped them). */
  connectionLost(gen: number): void {
    for (const s of [...this.sinks.values()]) {
      if (s.gen === gen) s.fail(new Error('the connection to the executor was lost while the response body was streaming'), false);
    }
  }

  failAll(error: Error): void {
    for (const s of [...this.sinks.values()]) s.fail(error, false);
  }

  async request(r: HttpStreamRequest): Promise<HttpStreamResponse> {
    const requestId = this.host.nextId('h');
    const sink = new BodySink(requestId, (s, cancelOnExecutor) => {
      this.sinks.delete(s.requestId);
      r.signal?.removeEventListener('abort', onAbort);
      if (cancelOnExecutor) this.cancel(s);
    });
    const onAbort = (): void => sink.fail(r.signal?.reason, true);
    this.sinks.set(requestId, sink);
    r.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      r.signal?.throwIfAborted();
      const head = await this.host.invoke(
        'http/request',
        {
          method: r.method,
          url: r.url,
          headers: r.headers,
          ...(r.body && r.body.length > 0 ? { bodyBase64: Buffer.from(r.body).toString('base64') } : {}),
          redirectPolicy: r.redirect ?? 'follow',
          requestId,
          streamResponse: true,
        },
        r.signal ? { signal: r.signal } : {},
        { onSent: (gen) => (sink.gen = gen) },
      );
      return { status: head.status, headers: head.headers, body: sink.body };
    } catch (e) {
      // Aborted while connecting: the executor may still be at it (onAbort asked it to stop).
      sink.fail(e, false);
      throw e;
    }
  }

  /** Asks the executor to stop a body it may still be sending (only on the connection that carries it). */
  private cancel(sink: BodySink): void {
    if (this.host.capabilities()['execBridgeHttpCancel'] !== true) return;
    if (sink.gen === undefined || sink.gen !== this.host.currentGen()) return;
    this.host.invoke(HTTP_CANCEL, { requestId: sink.requestId }, {}, {}).catch(() => undefined);
  }
}
