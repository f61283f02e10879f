import { ErrorCode } from '../protocol';

/** An error answered by (or to be sent to) the peer, with its JSON-RPC code. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }

  toWire(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }

  static invalidRequest(message: string): RpcError {
    return new RpcError(ErrorCode.InvalidRequest, message);
  }
  static invalidParams(message: string): RpcError {
    return new RpcError(ErrorCode.InvalidParams, message);
  }
  static internal(message: string, data?: unknown): RpcError {
    return new RpcError(ErrorCode.Internal, message, data);
  }
  static notFound(message: string): RpcError {
    return new RpcError(ErrorCode.NotFound, message);
  }
}

/** The transport closed while a call was pending, or a call was made after it closed. */
export class ConnectionClosedError extends Error {
  constructor(
    readonly reason?: string,
    /** The transport closed because an incoming message was over its size limit (`Transport.messageTooLarge`). */
    readonly messageTooLarge = false,
  ) {
    super(reason ? `connection closed: ${reason}` : 'connection closed');
    this.name = 'ConnectionClosedError';
  }
}
