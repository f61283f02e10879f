import * as vscode from 'vscode';
import { inheritAllEnv } from '../client';
import {
  sandboxLabel,
  sandboxRequest,
  withManagedNetwork,
  injectShellIntegration,
  terminalName,
  TERMINAL_CREDIT_WINDOW,
  attachNewest,
  executorRun,
  REOPENED_REPLAY_SETTING,
  replayBytesFromSetting,
} from '../core';
import type { ExecutorConnection, RestoredSession, RememberedProcess, RunServices, RunSpec, TerminalRun, TerminalRunDeps } from '../core';
import type { ExecTerminal } from './api';
import type { FeatureContext } from './context';
import { ExecTerminalImpl, RunPseudoterminal, type RunTerminal } from './runPseudoterminal';
import { StandInTerminalWatch } from './standInTerminal';
import { registerFullOutput } from './terminalOutput';
import { currentSandboxSettings } from './listSettings';

// One terminal's pseudoterminal and its API view: runPseudoterminal.ts; VS Code's own shell after a reload: standInTerminal.ts.
export type { RunTerminal } from './runPseudoterminal';

const HISTORY_KEY = 'execBridge.commandHistory';
const HISTORY_LIMIT = 30;
export const SHELL_PROFILE_ID = 'execBridge.shell';
/** Marks our terminals in the tab list (the same icon as executors in our views). */
const TERMINAL_ICON = new vscode.ThemeIcon('vm');

/** The rules, the run list and the log every run on an executor is built with (core/executorRun.ts). */
export function runServices(ext: FeatureContext): RunServices {
  return { approvals: ext.approvals, registry: ext.runs, log: (line) => ext.log.info(line) };
}

/**
 * Run Command, New Executor Shell (their commands are in the table, commands.ts), the
 * "Exec Bridge shell" profile, and the open terminals.
 */
export class TerminalFeature {
  private readonly open: ExecTerminalImpl[] = [];
  /** Shell ptys whose terminal VS Code creates itself (profiles): adopted when it opens. */
  private readonly unadopted = new Set<RunPseudoterminal>();
  private readonly opened = new vscode.EventEmitter<ExecTerminal>();
  readonly onDidOpenTerminal = this.opened.event;
  private readonly reopened = new vscode.EventEmitter<RunTerminal>();
  /** A terminal came back after a window reload (after onDidOpenTerminal), following its process again. */
  readonly onDidReopenTerminal = this.reopened.event;
  private shuttingDown = false;
  private readonly standInWatch: StandInTerminalWatch;

  constructor(private readonly ext: FeatureContext) {
    this.standInWatch = new StandInTerminalWatch(ext, () => this.shuttingDown);
    ext.disposables.add(this.opened);
    ext.disposables.add(this.reopened);
    registerFullOutput(ext, () => this.terminals());
    ext.disposables.add(
      vscode.window.onDidOpenTerminal((t) => {
        this.standInWatch.opened(t);
        const pty = (t.creationOptions as vscode.ExtensionTerminalOptions).pty;
        if (!(pty instanceof RunPseudoterminal) || !this.unadopted.delete(pty)) return;
        this.track(t, pty);
        // A profile's terminal: VS Code activates "the last one" before ours exists, so the
        // previous terminal would stay in front. Bring ours forward, focused, as a bash profile is.
        t.show(false);
      }),
    );
    ext.disposables.add(
      vscode.window.onDidCloseTerminal((t) => {
        this.standInWatch.closed(t);
        const i = this.open.findIndex((x) => x.terminal === t);
        if (i < 0) return;
        if (t.exitStatus?.reason === vscode.TerminalExitReason.Shutdown || this.shuttingDown) {
          // The window goes away: keep the process for the next window.
          const [leaving] = this.open.splice(i, 1);
          leaving?.dispose(true);
          return;
        }
        const [gone] = this.open.splice(i, 1);
        gone?.dispose();
      }),
    );
    ext.disposables.add(
      vscode.window.registerTerminalProfileProvider(SHELL_PROFILE_ID, {
        provideTerminalProfile: async () => {
          if (!vscode.workspace.isTrusted) throw new Error('Exec Bridge runs shells only in a trusted workspace');
          const conn = this.ext.executors.active;
          await this.ext.connectOrExplain(conn);
          const { pty, name } = this.prepareShell(conn);
          return new vscode.TerminalProfile({ name, pty, iconPath: TERMINAL_ICON });
        },
      }),
    );
  }

  terminals(): ExecTerminal[] {
    return [...this.open];
  }

  /** Shows the terminal of a run (tree action). */
  showRun(runId: string): boolean {
    const t = this.open.find((x) => x.runId === runId);
    t?.terminal.show();
    return t !== undefined;
  }

  /** Stops a run's process (tree action). */
  async stopRun(runId: string): Promise<void> {
    const t = this.open.find((x) => x.runId === runId);
    await t?.run.process?.terminate();
  }

  /**
   * Asks for the command line (unless given) before it connects: the prompt does not wait for a
   * connection, and the line is in the history even if connecting fails.
   */
  async runCommand(given: string | undefined, executorName: string | undefined): Promise<ExecTerminal | undefined> {
    const conn = this.ext.connection(executorName);
    const commandLine = (given ?? (await this.askCommand(conn.name)))?.trim();
    if (!commandLine) return undefined;
    await this.rememberCommand(commandLine);
    if (!(await this.ext.connectOrExplain(conn))) return undefined;
    const cwd = conn.defaultCwd();
    const settings = this.sandboxSettings();
    const spec: RunSpec = {
      kind: 'command',
      executor: conn.name,
      commandLine,
      argv: [conn.shellPath(), '-c', commandLine],
      cwd,
      tty: false,
      pipeStdin: true,
      sandbox: sandboxRequest(settings, cwd, this.workspaceRoots(conn)),
      sandboxLabel: sandboxLabel(settings),
      ...withManagedNetwork(settings),
    };
    return this.createTerminal(conn, spec, terminalName(spec));
  }

  /**
   * A language model's run (lmTools.ts) on `conn`, which is connected: a command terminal named
   * `agent: … · executor`, shown without taking the focus from the chat, in the executor's sandbox
   * as the workspace's settings say — the same rules as the user's own commands. Its writable roots
   * are the workspace's (or the executor's default folder), never a folder the model picked as cwd.
   */
  openAgentRun(conn: ExecutorConnection, commandLine: string, cwd: string, agent: NonNullable<RunSpec['agent']>): RunTerminal {
    const settings = this.sandboxSettings();
    const roots = this.workspaceRoots(conn);
    const spec: RunSpec = {
      kind: 'command',
      executor: conn.name,
      commandLine,
      argv: [conn.shellPath(), '-c', commandLine],
      cwd,
      tty: false,
      // A foreground command gets no stdin (it must not wait for input nobody gives); a background one takes the tool's writes.
      pipeStdin: agent.backgroundId !== undefined,
      sandbox: sandboxRequest(settings, cwd, roots.length > 0 ? roots : [conn.defaultCwd()]),
      sandboxLabel: sandboxLabel(settings),
      ...withManagedNetwork(settings),
      agent,
    };
    this.closeOldAgentTerminals();
    const pty = new RunPseudoterminal(this.newRun(conn, spec), () => this.shuttingDown);
    const terminal = vscode.window.createTerminal({ name: terminalName(spec), pty, iconPath: TERMINAL_ICON, isTransient: true });
    terminal.show(true);
    return this.track(terminal, pty);
  }

  /** A model runs many commands: of its finished foreground terminals the newest few stay open. */
  private closeOldAgentTerminals(keep = 4): void {
    const finished = this.open.filter((t) => t.run.spec.agent && t.run.spec.agent.backgroundId === undefined && t.phase === 'finished');
    for (const t of finished.slice(0, Math.max(0, finished.length - keep))) t.terminal.dispose();
  }

  /** An interactive shell on `conn`, which is connected (the command table connects it first). */
  newShell(conn: ExecutorConnection): ExecTerminal {
    const { pty, name } = this.prepareShell(conn);
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: TERMINAL_ICON, isTransient: true });
    terminal.show();
    return this.track(terminal, pty);
  }

  private prepareShell(conn: ExecutorConnection): { pty: RunPseudoterminal; name: string } {
    const shell = conn.shellPath();
    const cwd = conn.defaultCwd();
    const settings = this.sandboxSettings();
    const spec: RunSpec = {
      kind: 'shell',
      executor: conn.name,
      commandLine: shell,
      argv: [shell, '-i'],
      cwd,
      // The executor's environment, plus what a terminal emulator announces about itself.
      envPolicy: inheritAllEnv(),
      env: { TERM: 'xterm-256color', COLORTERM: 'truecolor' },
      tty: true,
      pipeStdin: false,
      sandbox: sandboxRequest(settings, cwd, this.workspaceRoots(conn)),
      sandboxLabel: sandboxLabel(settings),
      ...withManagedNetwork(settings),
    };
    const pty = new RunPseudoterminal(this.newRun(conn, spec), () => this.shuttingDown);
    this.unadopted.add(pty);
    return { pty, name: terminalName(spec) };
  }

  private createTerminal(conn: ExecutorConnection, spec: RunSpec, name: string): ExecTerminal {
    const pty = new RunPseudoterminal(this.newRun(conn, spec), () => this.shuttingDown);
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: TERMINAL_ICON, isTransient: true });
    terminal.show();
    return this.track(terminal, pty);
  }

  /**
   * After a window reload: a terminal for every process of the resumed session that had one, with
   * the same title, its retained output replayed, then live. An expired session is said once.
   */
  restore(conn: ExecutorConnection, restored: RestoredSession): void {
    if (restored.expired) {
      const n = restored.lostTerminals ?? 0;
      if (n > 0) {
        void vscode.window.showWarningMessage(
          `Exec Bridge: ${n} terminal(s) on ${conn.name} could not be reopened: ${restored.expired}. ` +
            'Processes of a closed window live for the session TTL (setting execBridge.sessionTtlSeconds).',
        );
      }
      return;
    }
    let last: ExecTerminal | undefined;
    const maxBytes = this.replayMaxBytes();
    for (const p of restored.terminals) last = this.reopen(conn, restored, p, maxBytes) ?? last;
    last?.terminal.show(true);
    if (last) this.standInWatch.oursReopened();
    this.ext.log.info(`${conn.name}: reopened ${restored.terminals.length} terminal(s) of session ${restored.client.sessionId}`);
  }

  /** execBridge.reopenedTerminalReplayMiB as `attachNewest`'s `maxBytes` (Infinity: everything held); a bad value: the log says so, the default. */
  private replayMaxBytes(): number {
    const { maxBytes, problem } = replayBytesFromSetting(vscode.workspace.getConfiguration('execBridge').get(REOPENED_REPLAY_SETTING));
    if (problem) this.ext.log.warn(problem);
    return maxBytes;
  }

  private reopen(conn: ExecutorConnection, restored: RestoredSession, p: RememberedProcess, maxBytes: number): ExecTerminal | undefined {
    const info = p.terminal;
    if (!info) return undefined;
    const spec: RunSpec = {
      kind: info.kind,
      executor: conn.name,
      commandLine: info.commandLine,
      argv: [],
      cwd: info.cwd,
      tty: p.tty,
      pipeStdin: !p.tty && p.stdinWritable,
      sandboxLabel: info.sandboxLabel,
      wasSandboxed: info.sandboxed,
      ...(info.task !== undefined ? { task: info.task } : {}),
      ...(info.agent ? { agent: { ...info.agent } } : {}),
    };
    // The newest part the terminal can hold (its scrollback and rows, at most `maxBytes`: the setting), then live; the rest: Open Full Output.
    const run = this.newRun(conn, spec, ({ rows }) =>
      attachNewest(restored.client, p.processId, {
        tty: p.tty,
        stdinWritable: p.stdinWritable,
        // The same window as a terminal's own start: a flood stays bounded after the reload too.
        creditWindow: TERMINAL_CREDIT_WINDOW,
        scrollback: vscode.workspace.getConfiguration('terminal.integrated').get('scrollback'),
        rows,
        maxBytes,
        ...(info.agent?.backgroundId !== undefined ? { agentReadSeq: info.agent.readSeq ?? 0 } : {}),
      }),
    );
    const pty = new RunPseudoterminal(run, () => this.shuttingDown);
    const terminal = vscode.window.createTerminal({ name: info.title, pty, iconPath: TERMINAL_ICON, isTransient: true });
    const t = this.track(terminal, pty);
    this.reopened.fire(t);
    return t;
  }

  private newRun(conn: ExecutorConnection, spec: RunSpec, attach?: TerminalRunDeps['attach']): TerminalRun {
    const { ext } = this;
    return executorRun(conn, spec, runServices(ext), {
      ...(attach ? { attach } : {}),
      ...(spec.kind === 'shell'
        ? { prepareStart: (client, options) => injectShellIntegration(client, options, (line) => ext.log.info(`${conn.name}: ${line}`)) }
        : {}),
    });
  }

  private track(terminal: vscode.Terminal, pty: RunPseudoterminal): ExecTerminalImpl {
    this.unadopted.delete(pty);
    const existing = this.open.find((x) => x.terminal === terminal);
    if (existing) return existing;
    const t = new ExecTerminalImpl(terminal, pty);
    this.open.push(t);
    this.opened.fire(t);
    return t;
  }

  private sandboxSettings() {
    return currentSandboxSettings();
  }

  /** The workspace folders are writable roots only where they exist: on the bundled (local) executor. */
  private workspaceRoots(conn: ExecutorConnection): string[] {
    if (conn.config.kind !== 'bundled') return [];
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  }

  /** A quick pick that takes a new command line or one from history (most recent first). */
  private askCommand(executor: string): Promise<string | undefined> {
    const history = this.ext.context.workspaceState.get<string[]>(HISTORY_KEY) ?? [];
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem>();
    pick.title = `Run Command on Executor (${executor})`;
    pick.placeholder = 'Command line, run with the executor\u2019s shell (e.g. npm test)';
    const historyItems = history.map((h) => ({ label: h, description: 'recent' }));
    pick.items = historyItems;
    pick.onDidChangeValue((value) => {
      const typed = value.trim();
      const rest = historyItems.filter((i) => i.label !== typed);
      // Always shown: VS Code reads `$(name)` in a label as an icon, so a command like
      // `echo $(hostname)` no longer matches its own text and was filtered out of the list.
      pick.items = typed ? [{ label: typed, description: 'run', alwaysShow: true }, ...rest] : historyItems;
    });
    return new Promise((resolve) => {
      let result: string | undefined;
      pick.onDidAccept(() => {
        result = pick.selectedItems[0]?.label ?? (pick.value.trim() || undefined);
        pick.hide();
      });
      pick.onDidHide(() => {
        pick.dispose();
        resolve(result);
      });
      pick.show();
    });
  }

  private async rememberCommand(commandLine: string): Promise<void> {
    const state = this.ext.context.workspaceState;
    const history = (state.get<string[]>(HISTORY_KEY) ?? []).filter((h) => h !== commandLine);
    await state.update(HISTORY_KEY, [commandLine, ...history].slice(0, HISTORY_LIMIT));
  }

  /**
   * Shutdown (window reload or close): every terminal closes, its process keeps running in the
   * detached session (the next window of this workspace reopens it; the executor's TTL ends it).
   */
  dispose(): void {
    this.shuttingDown = true;
    for (const t of this.open.splice(0)) t.dispose(true);
  }
}
