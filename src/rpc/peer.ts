import { ErrorCode, BINARY_RESULT_KIND, BinaryResult, decodeBinaryResult, encodeBinaryResult } from '../protocol';
import { DisposableStore, Emitter, errorMessage, type Disposable, type Event } from '../util';
import { ConnectionClosedError, RpcError } from './errors';
import { encodeBase64Result, encodeError, encodeNotification, encodeRequest, encodeResult, parseMessage, type RequestId } from './message';
import type { Transport } from './transport';

export interface PeerHandlers {
  /**
   * Answer a request: return the result, or throw an `RpcError`. Requests run concurrently.
   * `bytes`: the length of the request's JSON text (what its params hold, for budgets).
   */
  onRequest?(method: string, params: unknown, id: RequestId, bytes: number): unknown;
  onNotification?(method: string, params: unknown): void;
  /** A binary output frame (only on transports with `onBinary`; src/protocol/binaryOutput.ts). */
  onBinary?(frame: Buffer): void;
  /** Binary results answer our requests (a client that asked for binary frames). Default false. */
  acceptBinaryResults?: boolean;
  /**
   * A response or error for an id we are not waiting for. The exec-server closes the connection
   * on any unsolicited response (as the real one does); a client just ignores it.
   */
  onUnexpectedResponse?(id: RequestId | null): void;
  /**
   * Answer unparseable frames with an id -1 error (the server's duty, docs/protocol.md §8).
   * A client must stay silent instead: the real server drops a connection that sends it an
   * unrequested error. Default true.
   */
  replyToMalformed?: boolean;
}

export interface CallOptions {
  signal?: AbortSignal;
}

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  cleanup(): void;
}

/**
 * The JSON-RPC peer used by both sides: ids, the pending map, concurrent request handling.
 * It fails every pending call the moment the transport closes and refuses calls once closed.
 * It never sends anything unprompted but what its owner asks for (no `$/cancelRequest`: the
 * real server drops a connection on any notification but `initialized`).
 */
export class RpcPeer implements Disposable {
  private nextId = 1;
  private readonly pending = new Map<RequestId, Pending>();
  private readonly store = new DisposableStore();
  private readonly closeEmitter = new Emitter<string | undefined>();
  private closeReason: string | undefined;
  private closedFlag = false;
  /** Answer `BinaryResult`s as binary frames (the client asked for binary frames); else as JSON. */
  binaryResults = false;

  readonly onClose: Event<string | undefined> = this.closeEmitter.event;

  constructor(
    readonly transport: Transport,
    private readonly handlers: PeerHandlers = {},
  ) {
    this.store.add(transport.onMessage((text) => this.receive(text)));
    if (transport.onBinary) this.store.add(transport.onBinary((frame) => this.receiveBinary(frame)));
    this.store.add(transport.onClose((reason) => this.handleClose(reason)));
    if (transport.isClosed) this.handleClose('transport already closed');
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Sends a request and waits for its answer. Rejects with `RpcError` or `ConnectionClosedError`. */
  request(method: string, params: unknown, options: CallOptions = {}): Promise<unknown> {
    if (this.closedFlag) return Promise.reject(new ConnectionClosedError(this.closeReason));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => {
        // The server still answers; we just stop waiting. Its answer is ignored on arrival.
        this.pending.delete(id);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        method,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      });
      this.transport.send(encodeRequest(id, method, params));
    });
  }

  notify(method: string, params: unknown): void {
    if (!this.closedFlag) this.transport.send(encodeNotification(method, params));
  }

  /** Sends a notification its owner encoded itself (see `encodeOutputNotification`). */
  notifyFrame(frame: Buffer, sent?: () => void): void {
    if (this.closedFlag) sent?.();
    else this.transport.sendFrame(frame, sent);
  }

  /** Sends a binary output frame; false (and nothing sent) when the transport has no binary messages. */
  sendBinary(frame: Buffer, sent?: () => void): boolean {
    if (!this.transport.sendBinary) return false;
    if (this.closedFlag) sent?.();
    else this.transport.sendBinary(frame, sent);
    return true;
  }

  close(reason?: string): void {
    this.transport.close(reason);
    this.handleClose(reason);
  }

  dispose(): void {
    this.close('disposed');
  }

  private receive(text: string): void {
    const msg = parseMessage(text);
    switch (msg.kind) {
      case 'malformed':
        if (this.handlers.replyToMalformed === false) return;
        this.transport.send(
          encodeError(-1, { code: ErrorCode.InvalidRequest, message: `failed to parse JSON-RPC message: ${msg.reason}` }),
        );
        return;
      case 'request':
        void this.answer(msg.id, msg.method, msg.params, text.length);
        return;
      case 'notification':
        this.handlers.onNotification?.(msg.method, msg.params);
        return;
      case 'response': {
        const p = this.take(msg.id);
        if (p) p.resolve(msg.result);
        else this.handlers.onUnexpectedResponse?.(msg.id);
        return;
      }
      case 'error': {
        const p = msg.id === null ? undefined : this.take(msg.id);
        if (p) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
        else this.handlers.onUnexpectedResponse?.(msg.id);
        return;
      }
    }
  }

  /**
   * A binary result answers a pending request (as a `BinaryResult`), a binary output frame goes to
   * the owner; where neither is expected (a server) the bytes are read as JSON text, as before.
   */
  private receiveBinary(frame: Buffer): void {
    const { onBinary, acceptBinaryResults } = this.handlers;
    if (frame[0] !== BINARY_RESULT_KIND || !acceptBinaryResults) {
      if (frame[0] !== BINARY_RESULT_KIND && onBinary) onBinary(frame);
      else this.receive(frame.toString('utf8'));
      return;
    }
    const r = decodeBinaryResult(frame);
    if (!r) return;
    const p = this.take(r.id);
    if (p) p.resolve(new BinaryResult(r.data));
    else this.handlers.onUnexpectedResponse?.(r.id);
  }

  private take(id: RequestId): Pending | undefined {
    const p = this.pending.get(id);
    if (p) {
      this.pending.delete(id);
      p.cleanup();
    }
    return p;
  }

  private async answer(id: RequestId, method: string, params: unknown, bytes: number): Promise<void> {
    const handler = this.handlers.onRequest;
    let frame: string;
    try {
      if (!handler) throw new RpcError(ErrorCode.MethodNotFound, `method \`${method}\` is not handled here`);
      const result = await handler(method, params, id, bytes);
      if (result instanceof BinaryResult) {
        if (this.closedFlag) return;
        if (this.binaryResults && this.transport.sendBinary) this.transport.sendBinary(encodeBinaryResult(id, result));
        else this.transport.sendFrame(encodeBase64Result(id, result.data));
        return;
      }
      frame = encodeResult(id, result);
    } catch (e) {
      const err = e instanceof RpcError ? e : RpcError.internal(errorMessage(e));
      frame = encodeError(id, err.toWire());
    }
    if (!this.closedFlag) this.transport.send(frame);
  }

  private handleClose(reason: string | undefined): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.closeReason = reason;
    const error = new ConnectionClosedError(reason, this.transport.messageTooLarge === true);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      p.cleanup();
      p.reject(error);
    }
    this.closeEmitter.fire(reason);
    this.closeEmitter.dispose();
    this.store.dispose();
  }
}
