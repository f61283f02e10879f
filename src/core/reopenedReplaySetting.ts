import { mib, REPLAY_MAX_BYTES } from './terminalReplayRange';

/** The setting (in `execBridge`): the most of its earlier output a reopened terminal is given, in MiB. */
export const REOPENED_REPLAY_SETTING = 'reopenedTerminalReplayMiB';
/** Its largest value: execBridge.outputSpoolMiB's, the most a spool holds of one process. */
export const MAX_REOPENED_REPLAY_MIB = 1024;

/**
 * execBridge.reopenedTerminalReplayMiB → `attachNewest`'s `maxBytes` (docs/architecture.md "Output
 * spool"). Unset: the default, `REPLAY_MAX_BYTES` (2 MiB, about a second of the window's parsing).
 * A number of MiB above 0 up to 1024: that many bytes at most (the terminal's scrollback + rows
 * lines still bound it). 0: Infinity, everything the executor holds, from its oldest byte. Anything
 * else: the default, and `problem` says why for the log.
 */
export function replayBytesFromSetting(value: unknown): { maxBytes: number; problem?: string } {
  if (value === undefined || value === null) return { maxBytes: REPLAY_MAX_BYTES };
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_REOPENED_REPLAY_MIB) {
    const shown = typeof value === 'number' ? String(value) : JSON.stringify(value);
    return {
      maxBytes: REPLAY_MAX_BYTES,
      problem:
        `execBridge.${REOPENED_REPLAY_SETTING} is ${shown}, not a number of MiB from 0 (everything the executor holds) ` +
        `to ${MAX_REOPENED_REPLAY_MIB}: reopened terminals are given the default, at most the newest ${mib(REPLAY_MAX_BYTES)}`,
    };
  }
  if (value === 0) return { maxBytes: Number.POSITIVE_INFINITY };
  // At least a byte: 0.0000001 MiB is a (tiny) cap, not "everything".
  return { maxBytes: Math.max(1, Math.round(value * 1024 * 1024)) };
}
