import { isExecClientError, RemoteError } from '../client';
import { ErrorCode } from '../protocol';
import { errorMessage } from '../util';

/**
 * The `vscode.FileSystemError` factory an fs failure maps to (the names are VS Code's). `Unknown`
 * becomes a plain `FileSystemError(message)`.
 */
export type FsErrorCode =
  'FileNotFound' | 'FileExists' | 'FileNotADirectory' | 'FileIsADirectory' | 'NoPermissions' | 'Unavailable' | 'Unknown';

export interface ClassifiedFsError {
  code: FsErrorCode;
  message: string;
}

/** An error of our own making (e.g. "exists" before a write with `overwrite: false`). */
export class ExecutorFsError extends Error {
  constructor(
    readonly code: FsErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExecutorFsError';
  }
}

/** Linux errno values as both servers print them: `… (os error N)`. */
const ERRNO: Readonly<Record<number, FsErrorCode>> = {
  1: 'NoPermissions', // EPERM
  2: 'FileNotFound', // ENOENT
  13: 'NoPermissions', // EACCES
  17: 'FileExists', // EEXIST
  20: 'FileNotADirectory', // ENOTDIR
  21: 'FileIsADirectory', // EISDIR
  30: 'NoPermissions', // EROFS
};

/**
 * What an fs call's failure means to a file system provider. Server errors are read from their
 * code and the OS error number in the message; a connection that is down (recovering, failed, the
 * outcome unknown) is `Unavailable`, so VS Code says "unavailable" instead of "not found".
 */
export function classifyFsError(e: unknown): ClassifiedFsError {
  if (e instanceof ExecutorFsError) return { code: e.code, message: e.message };
  const message = errorMessage(e);
  if (!isExecClientError(e)) return { code: 'Unknown', message };
  switch (e.kind) {
    case 'disconnected':
    case 'connectFailed':
    case 'outcomeUnknown':
    case 'aborted':
      return { code: 'Unavailable', message };
    case 'rpc': {
      if (!(e instanceof RemoteError)) return { code: 'Unknown', message };
      const os = /\(os error (\d+)\)/.exec(message);
      const fromErrno = os ? ERRNO[Number(os[1])] : undefined;
      if (fromErrno) return { code: fromErrno, message };
      if (e.code === ErrorCode.NotFound) return { code: 'FileNotFound', message };
      if (e.code === ErrorCode.InvalidRequest && /directory/i.test(message)) return { code: 'FileIsADirectory', message };
      return { code: 'Unknown', message };
    }
    default:
      return { code: 'Unknown', message };
  }
}
