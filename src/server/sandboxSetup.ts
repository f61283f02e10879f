import type { ExecServerOptions } from './execServer';
import { SandboxPlanner } from './sandbox';

/**
 * The spawn planner the CLI server uses: commands without a `sandbox` run as they are; sandboxed
 * ones go through bubblewrap (Linux) or Seatbelt (macOS), and fail closed when that is impossible.
 * It checks once at start-up that the sandbox works here, so that `execBridgeSandbox` in
 * `environment/info` tells the truth and the operator hears at once what to fix (`problem`). The
 * capability follows later checks: installing bwrap while the server runs turns it on.
 */
export async function sandboxPlanner(opts: {
  bwrapPath?: string;
  /** The managed network's refusals and over-limit connections. */
  log?: (line: string) => void;
}): Promise<Pick<ExecServerOptions, 'planner' | 'sandboxAvailable'> & { problem?: string }> {
  const planner = new SandboxPlanner({ bwrapPath: opts.bwrapPath, log: opts.log });
  const problem = await planner.check();
  return { planner: (req) => planner.plan(req), sandboxAvailable: () => planner.available, problem };
}
