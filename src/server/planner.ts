import type { ExecServerOptions } from './execServer';
import { planUnsandboxed } from './spawnPlan';

/**
 * The spawn planner the CLI server uses. Until the sandbox layer is wired, a start that asks for a
 * sandbox fails closed (never runs unsandboxed).
 */
export function sandboxPlanner(_opts: { bwrapPath?: string }): Pick<ExecServerOptions, 'planner' | 'sandboxAvailable'> {
  return { planner: planUnsandboxed, sandboxAvailable: false };
}
