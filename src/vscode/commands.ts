import * as vscode from 'vscode';
import type { Extension } from './extension';

/** Command ids are `execBridge.<name>`; every one of them is declared in package.json. */
export const COMMAND_PREFIX = 'execBridge.';

export interface CommandOptions {
  /** Refuse to run in an untrusted workspace (anything that connects or runs). Default true. */
  needsTrust?: boolean;
}

/**
 * Registers `execBridge.<name>` and ties it to the extension's lifetime (docs/style.md §6). Errors are
 * shown as one readable message with "Show Log" instead of surfacing as an unhandled rejection.
 */
export function registerCommand<A extends unknown[], R>(
  ext: Extension,
  name: string,
  handler: (...args: A) => R | Promise<R>,
  options: CommandOptions = {},
): void {
  const id = COMMAND_PREFIX + name;
  ext.disposables.add(
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      if ((options.needsTrust ?? true) && !vscode.workspace.isTrusted) {
        void showUntrusted();
        return undefined;
      }
      try {
        return await handler(...(args as A));
      } catch (e) {
        const message = (e as Error)?.message ?? String(e);
        ext.log.error(`${id}: ${message}`);
        void vscode.window.showErrorMessage(`Exec Bridge: ${message}`, 'Show Log').then((choice) => {
          if (choice === 'Show Log') ext.log.show(true);
        });
        return undefined;
      }
    }),
  );
}

async function showUntrusted(): Promise<void> {
  const choice = await vscode.window.showWarningMessage(
    'Exec Bridge runs commands only in a trusted workspace.',
    'Manage Workspace Trust',
  );
  if (choice === 'Manage Workspace Trust') await vscode.commands.executeCommand('workbench.trust.manage');
}
