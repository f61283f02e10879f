import type { ExecServerOptions } from './execServer';
import { SandboxPlanner } from './sandbox';

/**
 * The spawn planner the CLI server uses: commands without a `sandbox` run as they are; sandboxed
 * ones go through bubblewrap (Linux) or Seatbelt (macOS), and fail closed when that is impossible.
 */
export function sandboxPlanner(opts: { bwrapPath?: string }): Pick<ExecServerOptions, 'planner' | 'sandboxAvailable'> {
  const planner = new SandboxPlanner({ bwrapPath: opts.bwrapPath });
  return { planner: (req) => planner.plan(req), sandboxAvailable: process.platform === 'linux' || process.platform === 'darwin' };
}
