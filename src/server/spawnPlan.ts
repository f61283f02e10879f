import type { SandboxType } from '../protocol/process';

/** What the process runner asks the sandbox layer to plan. Paths are local (already decoded). */
export interface SpawnRequest {
  argv: string[];
  arg0?: string | null;
  cwd: string;
  env: Record<string, string>;
  tty: boolean;
  /** The wire `sandbox` value; absent or null means no sandbox. */
  sandbox: unknown;
}

/** How to actually start it: the program and args (possibly a sandbox launcher around argv). */
export interface SpawnPlan {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  sandboxType: SandboxType;
  /** The command really runs restricted (only then can a failure be a sandbox denial). */
  restricted: boolean;
  /** Decides `sandboxDenied` once, after exit, over the retained output. */
  isDenial(exitCode: number, output: Buffer[]): boolean;
  /** Releases what the plan created (temp files). Called once after the process is closed. */
  dispose(): void;
}

export type SpawnPlanner = (req: SpawnRequest) => Promise<SpawnPlan>;

/** The plan for a start without a sandbox: run argv as it is. */
export async function planUnsandboxed(req: SpawnRequest): Promise<SpawnPlan> {
  if (req.sandbox !== undefined && req.sandbox !== null) {
    throw new Error('this exec-server was started without sandbox support; refusing to run the command unsandboxed');
  }
  return passthroughPlan(req);
}

/** Run argv as it is: nothing restricted, so nothing can be a denial. */
export function passthroughPlan(req: SpawnRequest): SpawnPlan {
  return {
    file: req.argv[0]!,
    args: req.argv.slice(1),
    env: req.env,
    cwd: req.cwd,
    sandboxType: 'none',
    restricted: false,
    isDenial: () => false,
    dispose: () => undefined,
  };
}
