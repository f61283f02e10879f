import { z } from 'zod';
import { EnvironmentInfo } from './environment';
import { FS_WATCH_FIELD, FsWatchLimits } from './fsWatch';

/** `initialize`'s field (params and result) for a session's detached lifetime, ours (docs/protocol-extensions.md). */
export const SESSION_TTL_FIELD = 'execBridgeSessionTtlMs';

export const InitializeParams = z.object({
  clientName: z.string(),
  /** Reattach a detached session (it keeps its processes and retained output). */
  resumeSessionId: z.string().nullable().optional(),
  /** Ours: `true` asks for binary output frames (./binaryOutput.ts). Any other value is ignored, as codex ignores the field. */
  execBridgeBinaryOutput: z.unknown().optional(),
  /**
   * Ours: `true` with `resumeSessionId` takes the session over from a connection that still holds
   * it (that connection is told `execBridge/sessionTakenOver` and closed) instead of failing with
   * -32010. Any other value is ignored, as codex ignores the field.
   */
  execBridgeTakeOver: z.unknown().optional(),
  /**
   * Ours: `true` asks `process/read` to serve spooled output (docs/protocol-extensions.md "Output
   * spool"), `{ processBytes }` the same with at most that much kept per process (within the
   * server's cap). Any other value is ignored (`OutputSpoolAsk`), as codex ignores the field.
   */
  execBridgeOutputSpool: z.unknown().optional(),
  /**
   * Ours: how long (ms) the client wants this session kept once its connection drops. A positive
   * integer is honoured up to the server's maximum (the answer says what applies); anything else,
   * or no field, keeps the server's default (codex's 30 s on `serve`). Sent again on a resume, it
   * replaces the session's TTL. Any other value is ignored, as codex ignores the field.
   */
  [SESSION_TTL_FIELD]: z.unknown().optional(),
  /** Ours: `true` asks for file watches on this connection (./fsWatch.ts). Any other value is ignored, as codex ignores the field. */
  [FS_WATCH_FIELD]: z.unknown().optional(),
});
export type InitializeParams = z.infer<typeof InitializeParams>;

/** What `execBridgeOutputSpool` may ask: everything the server keeps, or at most `processBytes` per process. */
export const OutputSpoolAsk = z.union([z.literal(true), z.object({ processBytes: z.number().int().nonnegative().optional() })]);
export type OutputSpoolAsk = z.infer<typeof OutputSpoolAsk>;

export const InitializeResult = z.object({
  sessionId: z.string(),
  /** Newer servers embed `environment/info` here; absent on older ones. */
  environmentInfo: EnvironmentInfo.optional(),
  /** Ours: true when this connection's output comes as binary frames (the client asked, the transport can). */
  execBridgeBinaryOutput: z.boolean().optional(),
  /** Ours: the client asked and `process/read` serves spooled output, with these caps (bytes per process, per server). */
  execBridgeOutputSpool: z.object({ processBytes: z.number().int().nonnegative(), totalBytes: z.number().int().nonnegative() }).optional(),
  /** Ours: how long (ms) this server keeps the session once detached (what the client asked, capped; or the default). */
  [SESSION_TTL_FIELD]: z.number().int().nonnegative().optional(),
  /** Ours: the client asked and this connection may watch files (`execBridge/fsWatch`), within these bounds. */
  [FS_WATCH_FIELD]: FsWatchLimits.optional(),
});
export type InitializeResult = z.infer<typeof InitializeResult>;

/** Ours: sent to a connection whose session another connection took over (`execBridgeTakeOver`); the connection is closed next. */
export const SESSION_TAKEN_OVER = 'execBridge/sessionTakenOver';
export const SessionTakenOverParams = z.object({ sessionId: z.string() });

/** Ours: `execBridge/sessions` lists the server's sessions (`exec-bridge daemon status`). */
export const SessionsParams = z.object({}).passthrough();
export const SessionSummary = z.object({
  sessionId: z.string(),
  clientName: z.string(),
  attached: z.boolean(),
  /** How long the session is kept once detached. */
  ttlMs: z.number(),
  /** While detached: when it detached and when it ends unless resumed (ms since the epoch, the server's clock). */
  detachedAt: z.number().nullable(),
  expiresAt: z.number().nullable(),
  /** Processes it holds, running or retained. */
  processes: z.number(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;
export const SessionsResult = z.object({ now: z.number(), sessions: z.array(SessionSummary) });
export type SessionsResult = z.infer<typeof SessionsResult>;
