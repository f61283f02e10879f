import * as vscode from 'vscode';
import type { ExecutorConnection } from '../core';
import { errorMessage } from '../util';
import { commandId, type CommandName } from './commandIds';
import type { FeatureContext } from './context';
import { selectExecutor, setExecutorToken } from './executorCommands';
import { openExecutorFolder } from './executorFileSystem';
import { findInExecutorFiles } from './executorSearch';
import { addSshExecutor } from './sshExecutors';
import { executorOfNode, executorsViewSnapshot, runOfNode } from './executorsView';
import * as mcp from './mcpCommands';
import { allowBlockedNode } from './mcpSandbox';
import type { McpFeature } from './mcpFeature';
import { showStatusMenu } from './statusBar';
import { openFullOutput } from './terminalOutput';
import type { TerminalFeature } from './terminals';

/** What the command handlers reach: the features' context plus the features themselves. */
export interface CommandContext extends FeatureContext {
  readonly terminals: TerminalFeature;
  readonly mcp: McpFeature;
}

type Args = readonly unknown[];

/**
 * One command. `needsTrust`: refused in an untrusted workspace (anything that connects or runs).
 * `needsConnection`: the first argument names the executor (default: the active one); it is
 * connected before the handler runs, or the failure is shown and the command ends.
 */
type Command =
  | { readonly needsTrust: boolean; readonly needsConnection: false; readonly run: (ext: CommandContext, ...args: Args) => unknown }
  | {
      readonly needsTrust: true;
      readonly needsConnection: true;
      readonly run: (ext: CommandContext, conn: ExecutorConnection, ...rest: Args) => unknown;
    };

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/** An executor name argument: a non-empty string, else the active executor. */
const executorName = (v: unknown): string | undefined => str(v) || undefined;
const nodeConnection = (ext: CommandContext, node: unknown) => ext.executors.get(executorOfNode(node) ?? ext.executors.active.name);

/** `<publisher>.<name>#<walkthrough id>` of package.json's walkthrough, as `workbench.action.openWalkthrough` takes it. */
export const WALKTHROUGH_ID = 'exec-bridge.exec-bridge#execBridge.gettingStarted';

/** Every `execBridge.<name>` command: commandIds.ts lists the names, package.json declares them. */
const COMMANDS: { readonly [name in CommandName]: Command } = {
  // Asks for the command line first and connects after (TerminalFeature.runCommand).
  runCommand: {
    needsTrust: true,
    needsConnection: false,
    run: (ext, line, executor) => ext.terminals.runCommand(str(line), executorName(executor)),
  },
  newShell: { needsTrust: true, needsConnection: true, run: (ext, conn) => ext.terminals.newShell(conn) },
  selectExecutor: { needsTrust: true, needsConnection: false, run: (ext, name) => selectExecutor(ext, name) },
  connect: {
    needsTrust: true,
    needsConnection: false,
    run: async (ext) => {
      await ext.connectOrExplain(ext.executors.active);
    },
  },
  reconnect: { needsTrust: true, needsConnection: false, run: (ext) => ext.reconnect(ext.executors.active) },
  setExecutorToken: { needsTrust: true, needsConnection: false, run: (ext, name, token) => setExecutorToken(ext, name, token) },
  showLog: { needsTrust: false, needsConnection: false, run: (ext) => ext.log.show(true) },
  addSshExecutor: {
    needsTrust: true,
    needsConnection: false,
    run: async (ext) => {
      const name = await addSshExecutor(ext.executors.all().map((c) => c.name));
      if (!name) return;
      await vscode.commands.executeCommand(commandId('selectExecutor'), name);
      // Connected now, with its progress; an unknown host key is asked about now, not at the first run.
      const conn = ext.executors.get(name);
      if (conn) await ext.connectOrExplain(conn, { askHostKey: true });
    },
  },
  forgetAlwaysAllowed: {
    needsTrust: false,
    needsConnection: false,
    run: async (ext) => {
      const n = await ext.approvals.forgetAlwaysAllowed();
      void vscode.window.showInformationMessage(
        `Exec Bridge: forgot ${n} always-allowed command${n === 1 ? '' : 's'}; the sandbox asks again for them.`,
      );
      return n;
    },
  },
  statusMenu: { needsTrust: true, needsConnection: false, run: (ext) => showStatusMenu(ext) },
  // The executor's folder as an `execbridge:` workspace folder (executorFileSystem.ts).
  openExecutorFolder: { needsTrust: true, needsConnection: true, run: (ext, conn, path) => openExecutorFolder(ext, conn, str(path)) },
  // rg (or grep) on the executors of the window's executor folders, in a Quick Pick (executorSearch.ts).
  findInExecutorFiles: { needsTrust: true, needsConnection: false, run: (ext, arg) => findInExecutorFiles(ext, arg) },
  // Our walkthrough itself ("Help: Welcome" opens the Welcome page; on 1.100.3 VS Code's featured web walkthrough first).
  openWalkthrough: {
    needsTrust: false,
    needsConnection: false,
    run: () => vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH_ID, false),
  },

  // The Executors view's items; the argument is the tree node.
  'executor.use': {
    needsTrust: true,
    needsConnection: false,
    run: (ext, node) => {
      const name = executorOfNode(node);
      return name ? ext.useExecutor(name) : undefined;
    },
  },
  'executor.connect': {
    needsTrust: true,
    needsConnection: false,
    run: async (ext, node) => {
      const conn = nodeConnection(ext, node);
      if (conn) await ext.connectOrExplain(conn);
    },
  },
  'executor.reconnect': {
    needsTrust: true,
    needsConnection: false,
    run: async (ext, node) => {
      const conn = nodeConnection(ext, node);
      if (conn) await ext.reconnect(conn);
    },
  },
  'executor.setToken': {
    needsTrust: true,
    needsConnection: false,
    run: (_ext, node) => vscode.commands.executeCommand(commandId('setExecutorToken'), executorOfNode(node)),
  },
  'executor.openFolder': {
    needsTrust: true,
    needsConnection: false,
    run: (_ext, node) => vscode.commands.executeCommand(commandId('openExecutorFolder'), executorOfNode(node)),
  },
  'run.stop': {
    needsTrust: true,
    needsConnection: false,
    run: async (ext, node) => {
      const run = runOfNode(ext.runs, node);
      if (run) await ext.terminals.stopRun(run.id);
    },
  },
  'run.showTerminal': {
    needsTrust: true,
    needsConnection: false,
    run: (ext, node) => {
      const run = runOfNode(ext.runs, node);
      if (run && !ext.terminals.showRun(run.id))
        void vscode.window.showInformationMessage(`The terminal of "${run.commandLine}" was closed.`);
    },
  },
  // The active Exec Bridge terminal's (or the one of its context menu, or of the notice's link).
  openFullOutput: {
    needsTrust: true,
    needsConnection: false,
    run: (ext, target) => openFullOutput(ext, () => ext.terminals.terminals(), target),
  },
  'executors.snapshot': { needsTrust: false, needsConnection: false, run: (ext) => executorsViewSnapshot(ext) },
  'run.copyCommand': {
    needsTrust: false,
    needsConnection: false,
    run: async (ext, node) => {
      const run = runOfNode(ext.runs, node);
      if (run) await vscode.env.clipboard.writeText(run.commandLine);
    },
  },

  // The MCP server manager (mcpCommands.ts); the argument is a server name or a tree node.
  'mcp.start': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.startServer(ext.mcp, arg) },
  'mcp.allowBlocked': { needsTrust: true, needsConnection: false, run: (ext, arg) => allowBlockedNode(ext.mcp, arg) },
  'mcp.stop': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.stopServer(ext.mcp, arg) },
  'mcp.restart': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.restartServer(ext.mcp, arg) },
  'mcp.restartAll': { needsTrust: true, needsConnection: false, run: (ext) => ext.mcp.manager.restartAll() },
  'mcp.showOutput': { needsTrust: false, needsConnection: false, run: (ext, arg) => mcp.showServerOutput(ext.mcp, arg) },
  'mcp.showConfiguration': { needsTrust: false, needsConnection: false, run: (ext, arg) => mcp.showServerConfiguration(ext.mcp, arg) },
  'mcp.callTool': { needsTrust: true, needsConnection: false, run: (ext, arg, toolArgs) => mcp.callTool(ext.mcp, arg, toolArgs) },
  'mcp.readResource': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.readResource(ext.mcp, arg) },
  'mcp.reloadConfiguration': { needsTrust: true, needsConnection: false, run: (ext) => ext.mcp.reload() },
  'mcp.clearInputs': { needsTrust: true, needsConnection: false, run: (ext) => mcp.clearInputs(ext.mcp) },
  'mcp.snapshot': { needsTrust: false, needsConnection: false, run: (ext) => mcp.snapshot(ext.mcp) },
  'mcp.signIn': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.signIn(ext.mcp, arg) },
  'mcp.signOut': { needsTrust: true, needsConnection: false, run: (ext, arg) => mcp.signOut(ext.mcp, arg) },
};

/** Runs one command: the trust gate, the connection it needs, then the handler. */
async function invoke(ext: CommandContext, command: Command, args: Args): Promise<unknown> {
  if (command.needsTrust && !vscode.workspace.isTrusted) {
    void showUntrusted();
    return undefined;
  }
  if (!command.needsConnection) return command.run(ext, ...args);
  const [executor, ...rest] = args;
  const conn = ext.connection(executorName(executor));
  if (!(await ext.connectOrExplain(conn))) return undefined;
  return command.run(ext, conn, ...rest);
}

/**
 * Registers every command of the table for the extension's lifetime (docs/style.md §6). Errors are
 * shown as one readable message with "Show Log" instead of surfacing as an unhandled rejection.
 */
export function registerCommands(ext: CommandContext): void {
  for (const [name, command] of Object.entries(COMMANDS) as [CommandName, Command][]) {
    const id = commandId(name);
    ext.disposables.add(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await invoke(ext, command, args);
        } catch (e) {
          const message = errorMessage(e);
          ext.log.error(`${id}: ${message}`);
          void vscode.window.showErrorMessage(`Exec Bridge: ${message}`, 'Show Log').then((choice) => {
            if (choice === 'Show Log') ext.log.show(true);
          });
          return undefined;
        }
      }),
    );
  }
}

async function showUntrusted(): Promise<void> {
  const choice = await vscode.window.showWarningMessage('Exec Bridge runs commands only in a trusted workspace.', 'Manage Workspace Trust');
  if (choice === 'Manage Workspace Trust') await vscode.commands.executeCommand('workbench.trust.manage');
}
