import { z } from 'zod';
import { EnvironmentInfo } from './environment';

export const InitializeParams = z.object({
  clientName: z.string(),
  /** Reattach a detached session (it keeps its processes and retained output). */
  resumeSessionId: z.string().nullable().optional(),
});
export type InitializeParams = z.infer<typeof InitializeParams>;

export const InitializeResult = z.object({
  sessionId: z.string(),
  /** Newer servers embed `environment/info` here; absent on older ones. */
  environmentInfo: EnvironmentInfo.optional(),
});
export type InitializeResult = z.infer<typeof InitializeResult>;
