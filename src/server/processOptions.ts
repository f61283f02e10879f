import type { FifoPool } from './fifoPool';
import type { OutputSpool } from './outputSpool';
import type { SandboxPrewarmer } from './prewarm';
import type { SpawnPlanner } from './spawnPlan';

/** What a session gives each of its processes (./managedProcess.ts). */
export interface ProcessOptions {
  planner: SpawnPlanner;
  /** Output above this size is coalesced no further: one notification carries at most this. */
  maxChunkBytes?: number;
  retainedBytes?: number;
  /** Real pipes for stdio (else Node's socket pairs). */
  fifos?: FifoPool;
  /** Sandboxes built ahead of time for starts whose plan allows it. */
  prewarm?: SandboxPrewarmer;
  /**
   * The output spool for what the window evicts (./outputSpool.ts), asked for at each eviction until
   * it gives one: undefined while the session's clients did not ask for spooled output.
   */
  spool?: () => OutputSpool | undefined;
  /** Whether the session spools (a client of it asked): then a credit window does not hold the process while detached. */
  spooling?: () => boolean;
  /** Called once after `closed` is published (the session starts the retention timer). */
  onClosed?: () => void;
}
