/**
 * Codicon, words and tooltip for an executor state, shared by the status bar, its menu and the
 * Executors view. A recovery is a calm state: no attempt counter ticking, no spinner; when and why
 * are in the tooltip.
 */
import type { ExecutorState } from './executorConnection';

export interface StateText {
  icon: string;
  label: string;
  /** More than the label says (when, why); undefined when the label is all there is. */
  detail?: string;
}

/** `10:42` (the user's locale): when an outage began or ends. */
function clockTime(ms: number): string {
  return new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

/** `name`: the executor's, for "processes keep running on devbox". */
export function stateText(state: ExecutorState, name = 'the executor'): StateText {
  switch (state.kind) {
    case 'idle':
      return { icon: 'debug-disconnect', label: 'not connected' };
    case 'connecting':
      return { icon: 'sync~spin', label: 'connecting…' };
    case 'connected':
      return { icon: 'vm-active', label: 'connected' };
    case 'recovering': {
      const until =
        state.until !== undefined
          ? `${name} keeps them, and Exec Bridge keeps retrying, until ${clockTime(state.until)}`
          : `Exec Bridge keeps retrying for as long as ${name} keeps them`;
      return {
        icon: 'sync',
        label: `offline since ${clockTime(state.since)}, retrying`,
        detail:
          `The connection was lost at ${clockTime(state.since)} (${state.cause}). Processes keep running on ${name} and their output is kept; ` +
          `${until}. It retries at once when this window gets focus or you use ${name}.`,
      };
    }
    case 'failed':
      return { icon: 'error', label: `failed: ${state.message}` };
  }
}

/**
 * The status bar's text: the active executor with its state icon, then any other executor that is
 * reconnecting (something runs on it, or it would have stopped trying), so an outage is visible
 * wherever it is.
 */
export function statusBarText(
  active: { name: string; state: ExecutorState },
  others: readonly { name: string; state: ExecutorState }[],
): string {
  const recovering = others.filter((o) => o.state.kind === 'recovering').map((o) => o.name);
  const main = `$(${stateText(active.state).icon}) ${active.name}`;
  return recovering.length === 0 ? main : `${main}  $(sync) ${recovering.join(', ')} reconnecting…`;
}

/**
 * The executor's version as the Executors view shows it: ours says "exec-bridge 0.1.0" (its name
 * and version), another server may give a bare "0.171.0", which gets its "v".
 */
export function executorVersionLabel(version: string | undefined): string | undefined {
  const v = version?.trim();
  if (!v) return undefined;
  return /^\d/.test(v) ? `v${v}` : v;
}
