import { z } from 'zod';
import { ProcessId } from './common';

/**
 * Ours (announced as capability `execBridgeTerminalModes`; docs/protocol-extensions.md "Terminal
 * modes"): the terminal modes a tty process's output had set at an output position, so that a
 * terminal replaying only the newest part of the output (a reopened one) can first be put in the
 * state a replay from the first byte would have left it in.
 *
 * A state lists what differs from a new terminal's: a terminal given `set` (DECSET), `reset`
 * (DECRST), `keypad`, `scrollRegion` and `cursorStyle` is in that state.
 */
export const TerminalModeState = z.object({
  /**
   * DEC private modes on that a new terminal has off: 47/1047/1049 (alternate screen, the one that
   * switched), 1 (application cursor keys), 5, 6 (origin), 12, 1004, 1007, 2004 (bracketed paste),
   * 9/1000/1002/1003 (mouse tracking, at most one), 1005/1006/1015/1016 (mouse encoding, at most one).
   */
  set: z.array(z.number().int().nonnegative()),
  /** DEC private modes off that a new terminal has on: 7 (autowrap), 25 (cursor visible). */
  reset: z.array(z.number().int().nonnegative()),
  /** Application keypad (ESC = / ESC >, or DECSET 66). */
  keypad: z.boolean(),
  /** The scroll region (DECSTBM) as set, 1-based; `bottom` 0: the last row. Null: the whole screen. */
  scrollRegion: z.object({ top: z.number().int().positive(), bottom: z.number().int().nonnegative() }).nullable(),
  /** The cursor style (DECSCUSR Ps, 1–6); 0: the terminal's default. */
  cursorStyle: z.number().int().nonnegative(),
});
export type TerminalModeState = z.infer<typeof TerminalModeState>;

/**
 * `execBridge/terminalModes {processId, afterSeq, skipBytes?}`: the state where output after `afterSeq`
 * begins, `skipBytes` into output event `afterSeq + 1` (a reopened terminal's replay start). A process
 * that is not a tty: `-32602`; an unknown id: `-32600`.
 */
export const TerminalModesParams = z.object({
  processId: ProcessId,
  afterSeq: z.number().int().nonnegative(),
  skipBytes: z.number().int().nonnegative().optional(),
});
export type TerminalModesParams = z.input<typeof TerminalModesParams>;

export const TerminalModesResult = z.object({
  /** The state at the position. */
  at: TerminalModeState,
  /** The state after all output so far. */
  now: TerminalModeState,
  /** The seq of the last output event `now` follows (0: none yet). */
  nowSeq: z.number().int().nonnegative(),
  /**
   * Whether `at` is exact. The server keeps a bounded history per mode (the newest transitions):
   * false when a mode changed more often since the position than that history holds. `at` is then
   * that mode's value before its oldest kept change; a replay from the position still ends in `now`,
   * since every mode it misses changes again within the replayed output.
   */
  exact: z.boolean(),
});
export type TerminalModesResult = z.infer<typeof TerminalModesResult>;
