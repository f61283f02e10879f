/**
 * Errors are values with a kind (docs/style.md §10): callers branch on `kind`, users read `message`,
 * a sentence that says what happened and what to do.
 */
export type ClientErrorKind =
  /** The client is failed (recovery deadline passed, session lost, disposed): nothing more will work. */
  | 'disconnected'
  /** The first connection (or its `initialize`) could not be made. */
  | 'connectFailed'
  /** A mutating call was on the wire when the connection died; the server may or may not have done it. */
  | 'outcomeUnknown'
  /** The server no longer holds output this client had not seen yet (evicted while disconnected). */
  | 'outputLost'
  /** A `process/start` whose answer was lost turned out not to exist on the server after resume. */
  | 'notStarted'
  /** A write the server refused: the process has no stdin, has exited, or is unknown. */
  | 'writeRejected'
  /** The server does not implement what was asked (e.g. `resize` without capability `processResize`). */
  | 'unsupported'
  /** The caller's AbortSignal fired before the call completed. */
  | 'aborted'
  /** The answer was larger than this client accepts in one message (a whole-file read of a huge file). */
  | 'answerTooLarge'
  /** The server answered with a JSON-RPC error; see `code`. */
  | 'rpc';

export abstract class ExecClientError extends Error {
  abstract readonly kind: ClientErrorKind;
}

/** Why the client went (or started) `failed`. */
export type DisconnectReason =
  | 'recoveryDeadline'
  | 'sessionLost'
  | 'disposed'
  /** A cleanup call could not get even the reserved permit; the connection was judged wedged. */
  | 'wedged'
  /** Another client resumed this session with `takeOverSession` (e.g. the same workspace's window after a reload). */
  | 'takenOver';

/**
 * The one stable error of a failed client: every pending call, waiting call, process handle and
 * later call rejects with this same instance.
 */
export class DisconnectedError extends ExecClientError {
  readonly kind = 'disconnected' as const;
  constructor(
    readonly reason: DisconnectReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DisconnectedError';
  }
}

export class ConnectFailedError extends ExecClientError {
  readonly kind = 'connectFailed' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectFailedError';
  }
}

export class OutcomeUnknownError extends ExecClientError {
  readonly kind = 'outcomeUnknown' as const;
  constructor(readonly method: string) {
    super(
      `the connection dropped while \`${method}\` was in flight; it may or may not have taken effect on the executor — check before retrying`,
    );
    this.name = 'OutcomeUnknownError';
  }
}

/**
 * An answer was larger than the client accepts in one message, so the connection was reset (the
 * session resumes on a new one). Calls whose answers can be that large fail with this instead of
 * being sent again, which would only repeat it.
 */
export class AnswerTooLargeError extends ExecClientError {
  readonly kind = 'answerTooLarge' as const;
  constructor(
    readonly method: string,
    readonly limitBytes: number,
  ) {
    super(
      `the answer to \`${method}\` was larger than this client accepts in one message (${formatMiB(limitBytes)}); read the file in blocks (fs/open and fs/readBlock) instead`,
    );
    this.name = 'AnswerTooLargeError';
  }
}

function formatMiB(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}

export class OutputLostError extends ExecClientError {
  readonly kind = 'outputLost' as const;
  constructor(
    readonly processId: string,
    /** First and last missing seq, inclusive. */
    readonly fromSeq: number,
    /** Undefined when the server no longer knows the process at all. */
    readonly toSeq: number | undefined,
  ) {
    super(
      toSeq === undefined
        ? `output lost: seq ${fromSeq} onward of process ${processId}: the executor no longer knows the process (its record expired while disconnected)`
        : `output lost: seq ${fromSeq}–${toSeq} of process ${processId} was dropped by the executor while disconnected (it keeps only the last 1 MiB); the process may still be running`,
    );
    this.name = 'OutputLostError';
  }
}

export class NotStartedError extends ExecClientError {
  readonly kind = 'notStarted' as const;
  constructor(readonly processId: string) {
    super(
      `process ${processId} was not started: the connection dropped before the executor received the request; it is safe to start it again`,
    );
    this.name = 'NotStartedError';
  }
}

export type WriteRejection = 'stdinClosed' | 'unknownProcess' | 'processExited';

export class WriteRejectedError extends ExecClientError {
  readonly kind = 'writeRejected' as const;
  constructor(
    readonly processId: string,
    readonly status: WriteRejection,
  ) {
    const why =
      status === 'stdinClosed'
        ? 'it was started without a stdin pipe (use pipeStdin or tty)'
        : status === 'unknownProcess'
          ? 'the executor does not know it'
          : 'it has exited';
    super(`cannot write to process ${processId}: ${why}`);
    this.name = 'WriteRejectedError';
  }
}

export class UnsupportedError extends ExecClientError {
  readonly kind = 'unsupported' as const;
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedError';
  }
}

export class AbortedError extends ExecClientError {
  readonly kind = 'aborted' as const;
  constructor(
    readonly method: string,
    options?: { cause?: unknown },
  ) {
    super(`\`${method}\` was cancelled by the caller`, options);
    this.name = 'AbortedError';
  }
}

/**
 * A JSON-RPC error answered by the server (codes in src/protocol/common.ts `ErrorCode`). `message`
 * is for people; code branches on `code` and `data`, never on the text.
 */
export class RemoteError extends ExecClientError {
  readonly kind = 'rpc' as const;
  constructor(
    readonly method: string,
    readonly code: number,
    /** The server's message as it sent it. */
    readonly serverMessage: string,
    /** The error's `data` as the server sent it; ours is `{ kind, … }` (codex sends none). */
    readonly data?: unknown,
  ) {
    super(`${method} failed: ${serverMessage} (code ${code})`);
    this.name = 'RemoteError';
  }
}

export function isExecClientError(e: unknown): e is ExecClientError {
  return e instanceof ExecClientError;
}
