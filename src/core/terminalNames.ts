/**
 * Terminal tab names: what runs there, then where (`npm test · devbox`, `bash · bundled`). The tab
 * list is narrow, so the command comes first and no product prefix is spent; the icon marks ours.
 * A language model's run starts with `agent:`, a task reopened after a reload with `task`.
 */
import type { RunSpec } from './terminalRun';

/** Longest command shown in a tab name (the full line is in the terminal and the Executors view). */
const MAX_COMMAND = 40;

export function terminalName(
  spec: Pick<RunSpec, 'kind' | 'commandLine' | 'executor' | 'agent' | 'task'>,
  opts: { unsandboxed?: boolean } = {},
): string {
  const what =
    spec.task !== undefined
      ? `task ${oneLine(spec.task)}`
      : spec.kind === 'shell'
        ? (spec.commandLine.split('/').pop() ?? spec.commandLine)
        : oneLine(spec.commandLine);
  // A model's run says so first (`agent: npm test · devbox`): the user tells it from their own at a glance.
  return `${spec.agent ? 'agent: ' : ''}${what} · ${spec.executor}${opts.unsandboxed ? ' (unsandboxed)' : ''}`;
}

function oneLine(commandLine: string): string {
  const flat = commandLine.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_COMMAND ? `${flat.slice(0, MAX_COMMAND - 1)}…` : flat;
}
