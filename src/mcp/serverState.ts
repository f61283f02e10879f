/**
 * The per-server state machine (docs/style.md §3: explicit states, time injected):
 *
 *   stopped ─▶ starting ─▶ ready(n tools)
 *      ▲          │  │         │
 *      │          │  ▼         ▼
 *      │          │ stopping ◀─┘ (stop, drain, timeout, failed start)
 *      │          ▼   │
 *      └── stopped | timedOut | crashed  (final states)
 *
 * A final state is entered only once the process is gone (or its end could not be confirmed, which
 * the reason then says), and always carries the reason and the last stderr lines.
 */
export type McpServerState =
  | { kind: 'stopped'; since: number; reason?: string; stderrTail: string[] }
  | { kind: 'starting'; since: number; attempt: number }
  | { kind: 'ready'; since: number; tools: number }
  | { kind: 'stopping'; since: number; reason: string }
  | { kind: 'timedOut'; since: number; reason: string; stderrTail: string[]; timeoutMs: number }
  | {
      kind: 'crashed';
      since: number;
      reason: string;
      stderrTail: string[];
      /** From `process/exited`; undefined when the process end was not observed (connection lost, spawn failure). */
      exitCode?: number;
      /** When an automatic restart is scheduled (epoch ms of the clock). */
      restartAt?: number;
      /** The restart waits for the executor to come back. */
      waitingForExecutor?: boolean;
    };

export type McpServerStateKind = McpServerState['kind'];

export const FINAL_STATES: readonly McpServerStateKind[] = ['stopped', 'timedOut', 'crashed'];

export function isFinal(kind: McpServerStateKind): boolean {
  return FINAL_STATES.includes(kind);
}

const TRANSITIONS: Record<McpServerStateKind, readonly McpServerStateKind[]> = {
  stopped: ['starting'],
  // starting → stopped: abandoned before any process existed (input prompt cancelled, stopped while connecting).
  starting: ['ready', 'stopping', 'crashed', 'stopped'],
  ready: ['stopping', 'crashed'],
  stopping: ['stopped', 'timedOut', 'crashed'],
  timedOut: ['starting'],
  // crashed → crashed: a scheduled restart is cancelled or re-planned (e.g. now waiting for the executor).
  crashed: ['starting', 'crashed'],
};

export function canTransition(from: McpServerStateKind, to: McpServerStateKind): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Short text for the tree's description and the status line. */
export function describeState(state: McpServerState, now: number): string {
  switch (state.kind) {
    case 'stopped':
      return 'Stopped';
    case 'starting':
      return state.attempt > 1 ? `Starting (attempt ${state.attempt})…` : 'Starting…';
    case 'ready':
      return `Ready (${state.tools} tool${state.tools === 1 ? '' : 's'})`;
    case 'stopping':
      return 'Stopping…';
    case 'timedOut':
      return `Timed out after ${formatMs(state.timeoutMs)}`;
    case 'crashed': {
      const code = state.exitCode !== undefined ? ` (exit ${state.exitCode})` : '';
      if (state.waitingForExecutor) return `Crashed${code} — restarts when the executor is back`;
      if (state.restartAt !== undefined) return `Crashed${code} — restarting in ${formatMs(Math.max(0, state.restartAt - now))}`;
      return `Crashed${code}`;
    }
  }
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  return s < 60 ? `${Number.isInteger(s) ? s : s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}
