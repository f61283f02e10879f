/*
 * The local shell VS Code opens in place of ours after a window reload (issue 24 item 8). Its
 * terminal view, when the panel was open, creates a terminal from the default profile at startup
 * if it has none to show yet (terminalView.ts `_initializeTerminal`, `hideOnStartup` "never"), and
 * ours come back through the extension a moment later. VS Code offers no way to tell it they are
 * coming, so the extension closes that one shell, and only when it is plainly the stand-in.
 */

/** How long after activation VS Code's own shell may still open (it waits for the shell profiles). */
export const STAND_IN_WINDOW_MS = 20_000;

export interface OpenedTerminal {
  /** Ours (an executor terminal), or another extension's pseudoterminal: never the stand-in. */
  custom: boolean;
  /** Opened with a name (a profile, a task, an extension): VS Code's own startup shell has none. */
  named: boolean;
  /** Milliseconds since the extension activated (0 for one already open then). */
  sinceActivation: number;
}

/**
 * Whether a terminal that just opened is the one VS Code opened for want of ours: the last window
 * of this workspace had no local terminal of its own (`lastWindowHadLocal` false: undefined is not
 * known, and nothing is closed), it is the first such terminal, a default-profile shell, opened
 * during startup. The caller closes it only once ours are back and only if no one used it.
 */
export function isStandIn(t: OpenedTerminal, lastWindowHadLocal: boolean | undefined, alreadyFound: boolean): boolean {
  return lastWindowHadLocal === false && !alreadyFound && !t.custom && !t.named && t.sinceActivation < STAND_IN_WINDOW_MS;
}
