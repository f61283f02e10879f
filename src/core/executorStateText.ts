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

export function stateText(state: ExecutorState): StateText {
  switch (state.kind) {
    case 'idle':
      return { icon: 'debug-disconnect', label: 'not connected' };
    case 'connecting':
      return { icon: 'sync~spin', label: 'connecting…' };
    case 'connected':
      return { icon: 'vm-active', label: 'connected' };
    case 'recovering':
      return {
        icon: 'sync',
        label: 'reconnecting…',
        detail: `The connection was lost at ${new Date(state.since).toLocaleTimeString()} (${state.cause}) and is being resumed; running commands continue and their output is kept.`,
      };
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
