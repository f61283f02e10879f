import * as vscode from 'vscode';
import { inheritAllEnv } from '../client';
import {
  outputRewriter,
  readSandboxSettings,
  sandboxLabel,
  sandboxRequest,
  withManagedNetwork,
  EXEC_TASK_TYPE,
  parseTaskDefinition,
  resolveTask,
  executorRun,
} from '../core';
import type { StreamReplacer, SandboxSettings, RunSpec, TerminalRun } from '../core';
import { errorMessage } from '../util';
import type { FeatureContext } from './context';
import { currentSandboxSettings } from './listSettings';
import { runServices } from './terminals';

/**
 * After the last output, this long before the task is reported finished: VS Code feeds problem
 * matchers from the rendered terminal and drops lines that arrive after the exit
 * (microsoft/vscode#92868). Measured in the harness; see test/vscode/suite/tasks.test.ts.
 */
export const TASK_EXIT_SETTLE_MS = 300;

/** How long a closed task terminal waits before it ends its process (a window reload must not end it). */
const CLOSE_GRACE_MS = 300;

const RED = '\x1b[31m';
const RESET = '\x1b[0m';

/**
 * A task's terminal: resolves the definition, connects, runs the command through a TerminalRun
 * (so a sandbox denial asks the same approval as a terminal command), and closes with the exit
 * code — the task's success — without the "press any key" line of our own terminals.
 */
class TaskPseudoterminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number>();
  readonly onDidWrite = this.writeEmitter.event;
  readonly onDidClose = this.closeEmitter.event;
  private run: TerminalRun | undefined;
  private dims: { cols: number; rows: number } | undefined;
  private closed = false;
  private lastChar = '\n';

  constructor(
    private readonly ext: FeatureContext,
    private readonly definition: vscode.TaskDefinition,
    private readonly folder: vscode.WorkspaceFolder | undefined,
    private readonly label: string,
    private readonly lifetime: TaskLifetime,
  ) {
    lifetime.live.add(this);
  }

  open(d: vscode.TerminalDimensions | undefined): void {
    if (d) this.dims = { cols: d.columns, rows: d.rows };
    this.start().catch((e: unknown) => this.fail(`internal error: ${errorMessage(e)}`));
  }

  private write(text: string): void {
    if (!text || this.closed) return;
    this.lastChar = text[text.length - 1]!;
    this.writeEmitter.fire(text);
  }

  private fail(message: string): void {
    this.write(`${this.lastChar === '\n' ? '' : '\r\n'}${RED}${message}${RESET}\r\n`);
    this.finish(1);
  }

  private finish(code: number): void {
    if (this.closed) return;
    if (this.lastChar !== '\n') this.write('\r\n');
    // Let the last lines reach the problem matchers before the exit does (see TASK_EXIT_SETTLE_MS).
    setTimeout(() => {
      if (this.closed) return;
      this.closed = true;
      this.lifetime.live.delete(this);
      this.closeEmitter.fire(code);
    }, TASK_EXIT_SETTLE_MS);
  }

  private async start(): Promise<void> {
    if (!vscode.workspace.isTrusted) return this.fail('Exec Bridge runs tasks only in a trusted workspace.');
    const parsed = parseTaskDefinition(this.definition);
    if (!parsed.ok) return this.fail(`Exec Bridge task: ${parsed.error}`);
    const def = parsed.value;
    let conn;
    try {
      conn = this.ext.connection(def.executor);
    } catch (e) {
      return this.fail(`Exec Bridge task: ${errorMessage(e)}`);
    }
    try {
      await conn.connect();
    } catch (e) {
      return this.fail(`Exec Bridge: not connected to ${conn.name} — ${errorMessage(e)}`);
    }
    if (this.closed) return;
    const editor = vscode.window.activeTextEditor?.document.uri;
    const resolved = resolveTask(def, {
      shell: conn.shellPath(),
      defaultCwd: conn.defaultCwd(),
      local: conn.config.kind === 'bundled',
      ...(conn.config.cwd ? { executorCwd: conn.config.cwd } : {}),
      ...(this.folder?.uri.scheme === 'file' ? { workspaceFolder: this.folder.uri.fsPath } : {}),
      ...(editor?.scheme === 'file' ? { file: editor.fsPath } : {}),
      ...(process.env['HOME'] ? { userHome: process.env['HOME'] } : {}),
      env: process.env,
    });
    if (!resolved.ok) return this.fail(`Exec Bridge task: ${resolved.error}`);
    const t = resolved.value;
    const settings = this.sandboxSettings(t.sandbox);
    const roots =
      conn.config.kind === 'bundled' && this.folder?.uri.scheme === 'file'
        ? [this.folder.uri.fsPath]
        : t.mapping
          ? [t.mapping.executor]
          : [];
    const spec: RunSpec = {
      kind: 'command',
      executor: conn.name,
      commandLine: t.commandLine,
      argv: t.argv,
      cwd: t.cwd,
      env: t.env,
      envPolicy: inheritAllEnv(),
      tty: false,
      pipeStdin: true,
      sandbox: t.sandbox === 'none' ? undefined : sandboxRequest(settings, t.cwd, roots),
      sandboxLabel: t.sandbox === 'none' ? 'none' : sandboxLabel(settings),
      ...(t.sandbox === 'none' ? {} : withManagedNetwork(settings)),
      task: this.label,
    };
    const rewriter: StreamReplacer | undefined = t.mapping ? outputRewriter(t.mapping) : undefined;
    // The same rules as a terminal's command: asked first under askBeforeRun, an always-allowed task starts once unsandboxed.
    const run = executorRun(conn, spec, runServices(this.ext), { resizable: false, logPrefix: 'task: ' });
    this.run = run;
    run.model.onWrite((text) => {
      // Our terminals end with "press any key to close"; a task terminal closes by itself. Only that
      // line is left out: output still queued when the process ended comes after `finish` too.
      if (run.model.writingFinished) return;
      this.write(rewriter ? rewriter.push(text) : text);
    });
    run.model.open(this.dims);
    run.start();
    await run.done;
    if (rewriter) this.write(rewriter.end());
    const code = run.model.exitCode;
    this.finish(code ?? 1);
  }

  private sandboxSettings(override: string | undefined): SandboxSettings {
    const base = currentSandboxSettings();
    return override && override !== 'none' ? readSandboxSettings(override, base.network, base.networkAllow) : base;
  }

  handleInput(data: string): void {
    this.run?.model.handleInput(data);
  }

  setDimensions(d: vscode.TerminalDimensions): void {
    this.dims = { cols: d.columns, rows: d.rows };
    this.run?.model.setDimensions(d.columns, d.rows);
  }

  /**
   * The task was stopped (Terminate Task) or its terminal closed — or the window goes away (reload,
   * close), which closes every terminal too: after a moment to tell them apart, a window that goes
   * away leaves the process running (the next window reopens it as a terminal), anything else ends it.
   */
  close(): void {
    setTimeout(() => {
      if (this.lifetime.shuttingDown) this.detach();
      else this.end();
    }, CLOSE_GRACE_MS);
  }

  private end(): void {
    this.lifetime.live.delete(this);
    this.run?.close();
    if (!this.closed) {
      this.closed = true;
      this.closeEmitter.fire(130);
    }
    this.run?.dispose();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
  }

  /** The window goes away: the process keeps running in the detached session (remembered as a terminal). */
  detach(): void {
    this.lifetime.live.delete(this);
    this.closed = true;
    this.run?.detach();
  }
}

/** The task terminals of this window, and whether it is going away (then they detach, not end). */
interface TaskLifetime {
  readonly live: Set<TaskPseudoterminal>;
  shuttingDown: boolean;
}

function folderOf(scope: vscode.Task['scope']): vscode.WorkspaceFolder | undefined {
  if (scope && typeof scope === 'object') return scope;
  return vscode.workspace.workspaceFolders?.[0];
}

/** A tasks.json entry as a runnable task: our execution, the user's matchers and settings kept. */
export function execTask(ext: FeatureContext, task: vscode.Task, lifetime: TaskLifetime): vscode.Task {
  const scope = task.scope ?? vscode.TaskScope.Workspace;
  const folder = folderOf(scope);
  const execution = new vscode.CustomExecution(async (resolved) => new TaskPseudoterminal(ext, resolved, folder, task.name, lifetime));
  const t = new vscode.Task(task.definition, scope, task.name, task.source || 'Exec Bridge', execution, task.problemMatchers);
  t.isBackground = task.isBackground;
  t.group = task.group;
  t.presentationOptions = task.presentationOptions;
  t.runOptions = task.runOptions;
  if (task.detail !== undefined) t.detail = task.detail;
  return t;
}

/** The `execBridge` task type: tasks.json entries run on an executor (README "Tasks"). */
export function registerTasks(ext: FeatureContext): void {
  const lifetime: TaskLifetime = { live: new Set(), shuttingDown: false };
  ext.disposables.add(
    vscode.tasks.registerTaskProvider(EXEC_TASK_TYPE, {
      provideTasks: () => [],
      resolveTask: (task) => (task.definition.type === EXEC_TASK_TYPE ? execTask(ext, task, lifetime) : undefined),
    }),
  );
  // Shutdown (window reload or close): a running task's process stays for the next window, which
  // reopens it as one of our terminals (issue 24: a reload used to end it without a word).
  ext.disposables.add({
    dispose: () => {
      lifetime.shuttingDown = true;
      for (const t of [...lifetime.live]) t.detach();
    },
  });
}
