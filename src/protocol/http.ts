import { z } from 'zod';
import { Base64, U64 } from './common';

export const HttpHeader = z.object({ name: z.string(), value: z.string() });
export const HttpRequestHeader = z.object({
  name: z.string(),
  value: z.string(),
  /** Take the value from this executor-side environment variable instead. */
  valueEnvVar: z.string().nullable().optional(),
});

export const HttpRequestParams = z.object({
  method: z.string(),
  /** http or https only. */
  url: z.string(),
  headers: z.array(HttpRequestHeader).nullable().optional(),
  /** Checked by the server, so that bad base64 gets the reference's decoder message (-32602). */
  bodyBase64: z.string().nullable().optional(),
  /** Absent: no timeout. */
  timeoutMs: U64.nullable().optional(),
  redirectPolicy: z.enum(['follow', 'stop']).nullable().optional(),
  requestId: z.string(),
  /** The body then follows as `http/request/bodyDelta` notifications; the result has an empty body. */
  streamResponse: z.boolean().nullable().optional(),
});
export type HttpRequestParams = z.input<typeof HttpRequestParams>;

export const HttpRequestResult = z.object({
  status: z.number().int(),
  headers: z.array(HttpHeader),
  bodyBase64: Base64,
});
export type HttpRequestResult = z.infer<typeof HttpRequestResult>;

export const HttpBodyDeltaNotification = z.object({
  requestId: z.string(),
  seq: U64,
  deltaBase64: Base64,
  done: z.boolean(),
  error: z.string().nullable(),
});
export type HttpBodyDeltaNotification = z.infer<typeof HttpBodyDeltaNotification>;

/*
 * Ours: ending a streamed `http/request` early (docs/protocol-extensions.md "Ending a streamed HTTP
 * request"). Codex has no way to stop one: its body streams until the far side ends it or the
 * connection closes. Announced by `capabilities.execBridgeHttpCancel`; a client of a server that
 * does not announce it sends nothing and ignores the rest of the body.
 */
export const HTTP_CANCEL = 'execBridge/httpCancel';
export const HttpCancelParams = z.object({
  /** The `requestId` of a request made with `streamResponse: true`, still connecting or streaming. */
  requestId: z.string(),
});
export const HttpCancelResult = z.object({
  /** False when no such request was active on this connection (it had ended, or never was). */
  cancelled: z.boolean(),
});
