/**
 * The wire envelope: JSON-RPC 2.0 without the `"jsonrpc"` member (docs/protocol.md §2).
 * One message per frame; batches are not accepted.
 */
import { errorMessage } from '../util';

export type RequestId = number | string;

export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

export type IncomingMessage =
  | { kind: 'request'; id: RequestId; method: string; params: unknown }
  | { kind: 'notification'; method: string; params: unknown }
  | { kind: 'response'; id: RequestId; result: unknown }
  | { kind: 'error'; id: RequestId | null; error: WireError }
  | { kind: 'malformed'; reason: string };

function isValidId(id: unknown): id is RequestId {
  // i64 or string; floats and null are malformed.
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));
}

/** Classifies one frame. Never throws. */
export function parseMessage(text: string): IncomingMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { kind: 'malformed', reason: errorMessage(e) };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'malformed', reason: 'expected a JSON-RPC object' };
  }
  const msg = value as Record<string, unknown>;
  const hasId = 'id' in msg;
  if (hasId && !isValidId(msg.id)) {
    return { kind: 'malformed', reason: 'id must be an integer or a string' };
  }
  if (typeof msg.method === 'string') {
    return hasId
      ? { kind: 'request', id: msg.id as RequestId, method: msg.method, params: msg.params }
      : { kind: 'notification', method: msg.method, params: msg.params };
  }
  if ('method' in msg) return { kind: 'malformed', reason: 'method must be a string' };
  if ('result' in msg && hasId) return { kind: 'response', id: msg.id as RequestId, result: msg.result };
  if ('error' in msg) {
    const err = msg.error as Partial<WireError> | null;
    if (typeof err === 'object' && err !== null && typeof err.code === 'number' && typeof err.message === 'string') {
      return { kind: 'error', id: hasId ? (msg.id as RequestId) : null, error: err as WireError };
    }
    return { kind: 'malformed', reason: 'invalid error object' };
  }
  return { kind: 'malformed', reason: hasId ? 'missing field `result` or `error`' : 'missing field `id`' };
}

export function encodeRequest(id: RequestId, method: string, params: unknown): string {
  return JSON.stringify(params === undefined ? { id, method } : { id, method, params });
}

export function encodeNotification(method: string, params: unknown): string {
  return JSON.stringify(params === undefined ? { method } : { method, params });
}

export function encodeResult(id: RequestId, result: unknown): string {
  return JSON.stringify({ id, result: result === undefined ? {} : result });
}

export function encodeError(id: RequestId, error: WireError): string {
  return JSON.stringify({ error, id });
}

/** Bytes of input base64-encoded per step (a multiple of 3: no padding inside the text). */
const BASE64_STEP = 3 * 256 * 1024;

/**
 * `encodeResult(id, {dataBase64: base64(data)})`, byte for byte, built straight into one buffer: a
 * 250 MiB file as one base64 string, then as a JSON string holding it, cost three copies of 333 MiB;
 * this is one, and its text never becomes a JS string.
 */
export function encodeBase64Result(id: RequestId, data: Buffer): Buffer {
  const head = Buffer.from(`{"id":${JSON.stringify(id)},"result":{"dataBase64":"`, 'utf8');
  const tail = '"}}';
  const frame = Buffer.allocUnsafeSlow(head.length + 4 * Math.ceil(data.length / 3) + tail.length);
  let at = head.copy(frame, 0);
  for (let i = 0; i < data.length; i += BASE64_STEP) {
    at += frame.write(data.toString('base64', i, Math.min(i + BASE64_STEP, data.length)), at, 'latin1');
  }
  frame.write(tail, at, 'latin1');
  return frame;
}
