// No imports on purpose: test/unit/vscode/commands.test.ts reads this list without VS Code and
// checks it against package.json `contributes.commands`.

/** Command ids are `execBridge.<name>`. */
export const COMMAND_PREFIX = 'execBridge.';

/** Every command the extension registers; commands.ts has one table entry per name. */
export const COMMAND_NAMES = [
  'runCommand',
  'newShell',
  'selectExecutor',
  'connect',
  'reconnect',
  'setExecutorToken',
  'addSshExecutor',
  'showLog',
  'forgetAlwaysAllowed',
  'statusMenu',
  'openExecutorFolder',
  'findInExecutorFiles',
  'openWalkthrough',
  'executor.use',
  'executor.connect',
  'executor.reconnect',
  'executor.setToken',
  'executor.openFolder',
  'run.stop',
  'run.showTerminal',
  'run.copyCommand',
  'executors.snapshot',
  'openFullOutput',
  'mcp.start',
  'mcp.stop',
  'mcp.restart',
  'mcp.restartAll',
  'mcp.showOutput',
  'mcp.showConfiguration',
  'mcp.callTool',
  'mcp.readResource',
  'mcp.reloadConfiguration',
  'mcp.clearInputs',
  'mcp.snapshot',
  'mcp.signIn',
  'mcp.signOut',
  'mcp.allowBlocked',
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

/** The full id of one of our commands (`execBridge.<name>`), checked against the list. */
export function commandId(name: CommandName): string {
  return COMMAND_PREFIX + name;
}
