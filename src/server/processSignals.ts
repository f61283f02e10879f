import { constants as osConstants } from 'node:os';
import { reapedGroupIsOurs } from './processTree';

/*
 * What a process of ours is sent and how its death is told: ^C to its group, SIGKILL to the group a
 * reaped leader left behind, and the exit code of a death by signal. Killing a live tree is
 * ./processTree.ts's `killTree`.
 */

/** The exit code to report: death by signal N is 128+N, as a shell would say (SIGINT 130, SIGKILL 137). */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | number | null): number {
  if (typeof signal === 'string') return 128 + (osConstants.signals[signal] ?? 0);
  if (typeof signal === 'number' && signal > 0) return 128 + signal;
  return code ?? -1;
}

/** SIGINT to the process group of `pid` (a PTY's line discipline does the same for ^C), else to `pid` alone. */
export function interruptGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGINT');
  } catch {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      // gone
    }
  }
}

/**
 * SIGKILL to what may be left of a reaped leader's group (nohup children): the kernel keeps the
 * group's id reserved while a member lives. Once a process has that pid again, it is someone else's
 * group, never signalled.
 */
export function killLeftoverGroup(pid: number): void {
  if (!reapedGroupIsOurs(pid)) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // no member left
  }
}
