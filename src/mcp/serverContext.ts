import type { Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { Clock } from '../util';
import type { McpAuthHooks } from './authSession';
import type { McpClientFeatures } from './clientFeatures';
import type { McpInputDefinition } from './config';
import type { McpExecutorHost } from './executorHost';

/** Knobs with defaults that tests shorten. */
export interface McpTimings {
  /** Interrupt → terminate grace on stop. Default 1000 ms. */
  graceMs: number;
  /** After terminate, how long to wait for the executor to confirm the end. Default 5000 ms. */
  closeConfirmMs: number;
  /** `restart: onCrash` delays; the length is the number of tries. Default [1000, 2000, 4000]. */
  restartDelaysMs: readonly number[];
  /** Ready for this long ⇒ the restart counter resets. Default 60 000 ms. */
  stableMs: number;
  /** list_changed debounce. Default 300 ms. */
  listChangedDebounceMs: number;
}

export const DEFAULT_TIMINGS: McpTimings = {
  graceMs: 1000,
  closeConfirmMs: 5000,
  restartDelaysMs: [1000, 2000, 4000],
  stableMs: 60_000,
  listChangedDebounceMs: 300,
};

/** What a server needs from its manager. */
export interface McpServerContext {
  host: McpExecutorHost;
  clock: Clock;
  timings: McpTimings;
  clientInfo: Implementation;
  /** Declared inputs of the whole configuration (a server may use any). */
  inputs(): readonly McpInputDefinition[];
  /** Asks the user (or secret storage) for an input; undefined = cancelled. */
  resolveInput(input: McpInputDefinition): Promise<string | undefined>;
  /** `${env:X}`: the extension host's environment. */
  env: Record<string, string | undefined>;
  /** Whether the JSON-RPC trace is on (read per message, so toggling applies at once). */
  trace(): boolean;
  /** Run servers under the orphan reaper on POSIX executors (orphanReaper.ts). */
  reapOrphans: boolean;
  /** Roots, elicitation, sampling (absent parts are not announced). */
  client: McpClientFeatures | undefined;
  /** Sign-in to remote servers: where sign-ins are kept, how the browser opens. */
  auth: McpAuthHooks;
  /**
   * Stdio servers found to be of 2025 (by their launch on an executor): their next start skips the
   * `server/discover` probe. Kept for the manager's life; absent, every start probes.
   */
  legacyServers?: Set<string>;
}

export type McpServerChange = 'state' | 'lists' | 'meta';
