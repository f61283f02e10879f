import { z } from 'zod';
import { EnvironmentInfo } from './environment';

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
  /** Ours: `true` asks `process/read` to serve spooled output (docs/protocol-extensions.md "Output spool"). Any other value is ignored. */
  execBridgeOutputSpool: z.unknown().optional(),
});
export type InitializeParams = z.infer<typeof InitializeParams>;

export const InitializeResult = z.object({
  sessionId: z.string(),
  /** Newer servers embed `environment/info` here; absent on older ones. */
  environmentInfo: EnvironmentInfo.optional(),
  /** Ours: true when this connection's output comes as binary frames (the client asked, the transport can). */
  execBridgeBinaryOutput: z.boolean().optional(),
  /** Ours: the client asked and `process/read` serves spooled output, with these caps (bytes per process, per server). */
  execBridgeOutputSpool: z.object({ processBytes: z.number().int().nonnegative(), totalBytes: z.number().int().nonnegative() }).optional(),
});
export type InitializeResult = z.infer<typeof InitializeResult>;

/** Ours: sent to a connection whose session another connection took over (`execBridgeTakeOver`); the connection is closed next. */
export const SESSION_TAKEN_OVER = 'execBridge/sessionTakenOver';
export const SessionTakenOverParams = z.object({ sessionId: z.string() });
