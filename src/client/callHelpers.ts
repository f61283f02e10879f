import { fileURLToPath, pathToFileURL } from 'node:url';
import { ErrorCode, requests, type RequestMethod, type ResultOf } from '../protocol';
import { AbortedError, RemoteError } from './errors';

/* The client's small helpers: result parsing, plain path <-> file URI, an abortable wait. */

export function parseResult<M extends RequestMethod>(method: M, raw: unknown): ResultOf<M> {
  const parsed = requests[method].result.safeParse(raw);
  if (!parsed.success) throw new RemoteError(method, ErrorCode.Internal, 'the server answered with an unexpected result');
  return parsed.data as ResultOf<M>;
}

export function toUri(path: string): string {
  return path.startsWith('file:') ? path : pathToFileURL(path).href;
}

export function fromUri(uri: string): string {
  try {
    return fileURLToPath(uri);
  } catch {
    return uri;
  }
}

export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, method: string): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new AbortedError(method, { cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError(method, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
