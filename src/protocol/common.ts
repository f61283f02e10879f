import { z } from 'zod';

/** JSON-RPC error codes used on the wire (docs/protocol.md §3). */
export const ErrorCode = {
  /** Malformed frame (answered with id -1), call before initialize, duplicate ids, unknown process/session. */
  InvalidRequest: -32600,
  /** Unknown method. */
  MethodNotFound: -32601,
  /** Params failed to parse (missing field, wrong type, bad URI, bad base64, empty argv/writeId). */
  InvalidParams: -32602,
  /** Spawn failure (with `data.kind`), OS errors in fs ops, write to a dead pipe, HTTP transport failure. */
  Internal: -32603,
  /**
   * Ours: a large request refused because the connection's (or the server's) unfinished requests
   * already hold their budget; the connection stays up. Codex's app-server uses it for "overloaded".
   */
  Overloaded: -32001,
  /** fs op on a missing path, unknown file handle. */
  NotFound: -32004,
  /** `initialize` with `resumeSessionId` of a session that still has a live connection. */
  SessionAttached: -32010,
} as const;

/** A non-negative integer as serde's u64/usize expects it. */
export const U64 = z.number().int().nonnegative();

/** Standard base64 with padding (RFC 4648 §4). The empty string is zero bytes. */
export const Base64 = z.string().refine((s) => s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s), { message: 'invalid base64' });

/**
 * Every path on the wire is a `file://` URI (never a plain path). The server checks that it is
 * absolute on its host; the schema only requires a string so that the server can answer with the
 * reference's exact messages.
 */
export const PathUri = z.string();

/** Client-chosen process id, scoped to the session. The empty string is valid. */
export const ProcessId = z.string();

export const OutputStream = z.enum(['stdout', 'stderr', 'pty']);
export type OutputStream = z.infer<typeof OutputStream>;

export const Empty = z.object({});
export type Empty = z.infer<typeof Empty>;
