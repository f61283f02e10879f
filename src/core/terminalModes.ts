import type { ExecServerClient, ProcessEvent, ProcessHandle } from '../client';
import type { TerminalModeState } from '../protocol';
import type { ReplayStart } from './terminalReplayRange';

/**
 * A reopened terminal whose replay skips output (docs/architecture.md "Output spool"): the modes
 * that output had set are restored before the replay (`execBridge/terminalModes`), so it ends in the
 * state a replay from the first byte would have left it in; and a full-screen program (on the
 * alternate screen) is made to redraw, since the replay holds only its last partial redraws.
 */
export interface ReplayModes {
  /** Written to the terminal before the replay: escape sequences only, nothing shown. Empty: nothing to restore. */
  restore: string;
  /**
   * The process is on the alternate screen: nudge its size so that it draws a whole screen after the
   * replay, which holds only its last partial redraws; `afterSeq`: the output the replay holds at most.
   */
  redraw: { afterSeq: number } | undefined;
  /** The server's answer was exact (docs/protocol-extensions.md "Terminal modes"). */
  exact: boolean;
}

const CSI = '\x1b[';
const ALT_SCREENS = new Set([47, 1047, 1049]);

/**
 * The escape sequences that take a new terminal to `s`. The scroll region goes first, between a
 * cursor save and restore (DECSTBM homes the cursor), then the alternate screen, then the other
 * modes; origin mode (6) last, as it homes the cursor to the region.
 */
export function modeRestoreText(s: TerminalModeState): string {
  let out = '';
  if (s.scrollRegion) {
    const { top, bottom } = s.scrollRegion;
    out += `\x1b7${CSI}${top}${bottom > 0 ? `;${bottom}` : ''}r\x1b8`;
  }
  const alt = s.set.filter((m) => ALT_SCREENS.has(m));
  const rest = s.set.filter((m) => !ALT_SCREENS.has(m) && m !== 6);
  for (const m of [...alt, ...rest]) out += `${CSI}?${m}h`;
  for (const m of s.reset) out += `${CSI}?${m}l`;
  if (s.keypad) out += '\x1b=';
  if (s.cursorStyle > 0) out += `${CSI}${s.cursorStyle} q`;
  if (s.set.includes(6)) out += `${CSI}?6h`;
  return out;
}

/** Whether the replay shows output from the first byte the process printed (nothing to restore). */
function fromFirstByte(r: Pick<ReplayStart, 'afterSeq' | 'skipBytes'>): boolean {
  return r.afterSeq === 0 && r.skipBytes === 0;
}

/**
 * What a reopened tty terminal needs besides its replay: undefined when the replay starts at the
 * first byte, the executor does not follow modes (codex), or the question failed (then the terminal
 * is reopened as before, without restored modes).
 */
export async function replayModes(
  client: Pick<ExecServerClient, 'call' | 'capabilities'>,
  processId: string,
  replay: Pick<ReplayStart, 'afterSeq' | 'skipBytes'>,
): Promise<ReplayModes | undefined> {
  if (fromFirstByte(replay) || client.capabilities.execBridgeTerminalModes !== true) return undefined;
  try {
    const r = await client.call('execBridge/terminalModes', { processId, afterSeq: replay.afterSeq, skipBytes: replay.skipBytes });
    const onAltScreen = r.now.set.some((m) => ALT_SCREENS.has(m));
    return { restore: modeRestoreText(r.at), redraw: onAltScreen ? { afterSeq: r.nowSeq } : undefined, exact: r.exact };
  } catch {
    return undefined;
  }
}

/** What `resizeReopened` needs of its `TerminalRun`. */
export interface ReopenedRun {
  readonly model: { readonly dimensions: { cols: number; rows: number } | undefined };
  onProcessEvent(listener: (e: { event: ProcessEvent }) => void): { dispose(): void };
}

/** How long a nudged process keeps the smaller size at most, waiting for it to draw (as tmux holds its own nudge). */
export const NUDGE_HOLD_MS = 3000;

/**
 * A reopened tty terminal's size given to its process. With `redraw` (./ReplayModes), first one row
 * less (one more for a one-row terminal), held until the process prints something after `afterSeq`
 * (its redraw: it has seen the smaller size) or `holdMs`, then the terminal's: the process gets
 * SIGWINCH even when the size did not change, and a program that redraws only when the size it reads
 * changed (Node's `resize` event) does too; its whole screen comes after the replay (later output).
 * `run`: the terminal's size (read again after the hold) and the process's events as it gets them.
 */
export async function resizeReopened(
  handle: Pick<ProcessHandle, 'resize'>,
  run: ReopenedRun,
  redraw: { afterSeq: number } | undefined,
  holdMs = NUDGE_HOLD_MS,
): Promise<void> {
  const size = run.model.dimensions;
  if (!size) return;
  if (redraw) {
    const { cols, rows } = size;
    let dispose = () => {};
    const drawn = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, holdMs);
      const sub = run.onProcessEvent(({ event: e }) => {
        if (e.type !== 'output' || e.seq > redraw.afterSeq) resolve();
      });
      dispose = () => {
        clearTimeout(timer);
        sub.dispose();
      };
    });
    try {
      await handle.resize(cols, rows > 1 ? rows - 1 : rows + 1);
      await drawn;
    } finally {
      dispose();
    }
  }
  // The size now: the terminal may have been resized while the nudge was held.
  const { cols, rows } = run.model.dimensions ?? size;
  await handle.resize(cols, rows);
}
