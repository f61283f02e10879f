import * as vscode from 'vscode';
import { isStandIn } from '../core';
import type { FeatureContext } from './context';

/** Whether this workspace's window has a local terminal of its own (one VS Code revives after a reload). */
const LOCAL_TERMINALS_KEY = 'execBridge.windowHasLocalTerminal';

/** A terminal an extension drives (a Pseudoterminal): no process of its own for VS Code to revive. */
function isCustom(options: vscode.Terminal['creationOptions']): boolean {
  return 'pty' in options && options.pty !== undefined;
}

/**
 * VS Code's own shell opened for want of ours after a reload (core/standInTerminal.ts): noted when
 * it opens, closed once a terminal of ours is back. For the next window it remembers, in the
 * workspace's state, whether this one has a local terminal of its own.
 */
export class StandInTerminalWatch {
  /** The stand-in, until closed. */
  private standIn: vscode.Terminal | undefined;
  private standInFound = false;
  private reopenedAny = false;
  private readonly closedStandIns = new WeakSet<vscode.Terminal>();
  /** The last write of LOCAL_TERMINALS_KEY: writes go in the order they were asked for. */
  private recording: Promise<void> = Promise.resolve();
  private readonly activatedAt = Date.now();
  private readonly lastWindowHadLocal: boolean | undefined;

  constructor(
    private readonly ext: FeatureContext,
    private readonly isShuttingDown: () => boolean,
  ) {
    this.lastWindowHadLocal = ext.context.workspaceState.get<boolean>(LOCAL_TERMINALS_KEY);
    for (const t of vscode.window.terminals) this.watchStandIn(t, 0);
  }

  /** VS Code opened a terminal (any: ours, its own, another extension's). */
  opened(t: vscode.Terminal): void {
    this.watchStandIn(t, Date.now() - this.activatedAt);
    void this.recordLocalTerminals();
  }

  /** A terminal closed; one that closes because the window goes away changes nothing for the next window. */
  closed(t: vscode.Terminal): void {
    if (t === this.standIn) this.standIn = undefined;
    if (!this.isShuttingDown() && t.exitStatus?.reason !== vscode.TerminalExitReason.Shutdown) void this.recordLocalTerminals();
  }

  /** A terminal of ours came back after the reload: the stand-in is not needed any more. */
  oursReopened(): void {
    this.reopenedAny = true;
    this.closeStandIn();
  }

  /** Notes VS Code's own startup shell (core/standInTerminal.ts), closed once ours are back. */
  private watchStandIn(t: vscode.Terminal, sinceActivation: number): void {
    const seen = { custom: isCustom(t.creationOptions), named: Boolean(t.creationOptions.name), sinceActivation };
    if (!isStandIn(seen, this.lastWindowHadLocal, this.standInFound)) return;
    this.standInFound = true;
    this.standIn = t;
    this.closeStandIn();
  }

  /**
   * Closes VS Code's stand-in shell once a terminal of ours is back, unless someone typed in it
   * (then it is theirs) or it has no process of its own. Said in the log.
   */
  private closeStandIn(): void {
    const t = this.standIn;
    if (!t || !this.reopenedAny) return;
    this.standIn = undefined;
    void Promise.resolve(t.processId).then((pid) => {
      if (t.state.isInteractedWith || t.exitStatus !== undefined || !pid || pid <= 0) return;
      this.ext.log.info(
        `closed the local shell "${t.name}" (pid ${pid}) VS Code opened at startup while ours were coming back: the last window had no local terminal`,
      );
      this.closedStandIns.add(t);
      t.dispose();
    });
  }

  /** Remembers whether a local terminal of this window's own (one with a process) is open, for the next window. */
  private recordLocalTerminals(): Promise<void> {
    const state = this.ext.context.workspaceState;
    this.recording = this.recording.then(async () => {
      // Pseudoterminals (ours, tasks', other extensions') are never revived by VS Code: only shells count.
      const live = vscode.window.terminals.filter(
        (t) => t.exitStatus === undefined && !this.closedStandIns.has(t) && !isCustom(t.creationOptions),
      );
      // A process that has not started within 5 s counts as one (the next window then closes nothing).
      const pidOf = (t: vscode.Terminal) =>
        new Promise<number | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(Number.MAX_SAFE_INTEGER), 5_000);
          Promise.resolve(t.processId).then(
            (pid) => (clearTimeout(timer), resolve(pid)),
            () => (clearTimeout(timer), resolve(undefined)),
          );
        });
      const pids = await Promise.all(live.map(pidOf));
      const hasLocal = pids.some((pid) => pid !== undefined && pid > 0);
      if (!this.isShuttingDown() && state.get<boolean>(LOCAL_TERMINALS_KEY) !== hasLocal) await state.update(LOCAL_TERMINALS_KEY, hasLocal);
    });
    return this.recording;
  }
}
