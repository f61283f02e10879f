import { z } from 'zod';
import { PathUri } from './common';

export const ShellInfo = z.object({ name: z.string(), path: z.string() });

/**
 * Capabilities are booleans keyed by name. The real server's keys are kept as they come; ours add:
 *  - `processResize`: the server implements `process/resize` for PTY processes.
 *  - `concurrentRequests`: requests on one connection are handled concurrently (long polls do not
 *    block other calls).
 */
export const Capabilities = z.record(z.string(), z.boolean());

/**
 * `environment/info` result, also embedded in the `initialize` result. Every field but `shell` is
 * optional for older servers; unknown fields are kept (loose) so a client can inspect them.
 */
export const EnvironmentInfo = z.looseObject({
  shell: ShellInfo,
  executorVersion: z.string().optional(),
  providerId: z.string().nullable().optional(),
  cwd: PathUri.optional(),
  userHomeDir: PathUri.optional(),
  platformOs: z.string().optional(),
  prependPathDirs: z.array(PathUri).optional(),
  temporaryDirectories: z.array(PathUri).optional(),
  tempDir: PathUri.optional(),
  capabilities: Capabilities.optional(),
});
export type EnvironmentInfo = z.infer<typeof EnvironmentInfo>;

export const EnvironmentInfoParams = z.object({});
export const EnvironmentStatusParams = z.object({});
export const EnvironmentStatusResult = z.object({ status: z.string() });
export type EnvironmentStatusResult = z.infer<typeof EnvironmentStatusResult>;
