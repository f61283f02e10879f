import * as vscode from 'vscode';
import { clientProcesses, ExecutorSearch, EXECUTOR_FS_SCHEME } from '../core';
import type { FeatureContext } from './context';
import { registerSearchProviders } from './executorSearchProviders';
import { FindInExecutorFilesPick, type SearchRoot } from './findInExecutorFilesPick';

/*
 * Search in executor folders (core/executorSearch.ts: rg, or grep, run on the executor):
 * - VS Code's Find in Files and Quick Open, where VS Code lets an extension answer them for its own
 *   file system (a proposed API: executorSearchProviders.ts).
 * - "Exec Bridge: Find in Executor Files…" everywhere: a Quick Pick of the matches, each opening at
 *   its line and column (findInExecutorFilesPick.ts); its button is in the Search view's title while
 *   executor folders are open.
 * - Where Find in Files cannot search them, the window says so once (not VS Code's "No results
 *   found. Review your settings for configured exclusions…", which would be wrong).
 */

const HINT_KEY = 'execBridge.searchHintShown';

function searchOn(ext: FeatureContext, executor: string): ExecutorSearch {
  return new ExecutorSearch(
    clientProcesses(
      async () => {
        if (!vscode.workspace.isTrusted) throw new Error('Exec Bridge reaches executors only in a trusted workspace');
        return ext.connection(executor).connect();
      },
      (line) => ext.log.info(`${executor}: ${line}`),
    ),
    { rg: 'rg', grep: 'grep' },
    (line) => ext.log.info(`${executor}: ${line}`),
  );
}

export function executorFolders(): readonly vscode.WorkspaceFolder[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === EXECUTOR_FS_SCHEME);
}

/** Registers the search providers (where VS Code allows them), the Search view context key and the one-time hint. */
export function registerExecutorSearch(ext: FeatureContext): void {
  const searches = new Map<string, ExecutorSearch>();
  const findInFiles = registerSearchProviders(ext, (executor) => {
    let s = searches.get(executor);
    if (!s) searches.set(executor, (s = searchOn(ext, executor)));
    return s;
  });
  const update = () => {
    const any = executorFolders().length > 0;
    void vscode.commands.executeCommand('setContext', 'execBridge.hasExecutorFolders', any);
    if (any && !findInFiles) void hintOnce(ext);
  };
  ext.disposables.add(vscode.workspace.onDidChangeWorkspaceFolders(update));
  update();
}

async function hintOnce(ext: FeatureContext): Promise<void> {
  if (ext.context.workspaceState.get<boolean>(HINT_KEY)) return;
  await ext.context.workspaceState.update(HINT_KEY, true);
  const choice = await vscode.window.showInformationMessage(
    'Find in Files does not search executor folders in this VS Code (it lets extensions search their own file systems only through a proposed API): an empty result there says nothing about them. Use "Exec Bridge: Find in Executor Files…" (also the search button in the Search view\'s title).',
    'Find in Executor Files…',
  );
  if (choice) await vscode.commands.executeCommand('execBridge.findInExecutorFiles');
}

export interface FindArgs {
  query?: string;
  isRegExp?: boolean;
  isCaseSensitive?: boolean;
  isWordMatch?: boolean;
  /** An executor folder (`execbridge:` URI) to search; default: every executor folder of the window. */
  folder?: string;
}

function findArgs(arg: unknown): FindArgs {
  if (typeof arg === 'string') return { query: arg };
  if (typeof arg !== 'object' || arg === null) return {};
  const a = arg as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const b = (v: unknown) => (typeof v === 'boolean' ? v : undefined);
  const out: FindArgs = {};
  if (s(a.query) !== undefined) out.query = s(a.query);
  if (s(a.folder) !== undefined) out.folder = s(a.folder);
  if (b(a.isRegExp) !== undefined) out.isRegExp = b(a.isRegExp);
  if (b(a.isCaseSensitive) !== undefined) out.isCaseSensitive = b(a.isCaseSensitive);
  if (b(a.isWordMatch) !== undefined) out.isWordMatch = b(a.isWordMatch);
  return out;
}

/**
 * "Exec Bridge: Find in Executor Files…": a Quick Pick that searches the window's executor folders
 * on their executors as you type (rg, or grep); a match opens at its line and column. Resolves with
 * the opened file, or undefined when the pick was closed.
 */
export async function findInExecutorFiles(ext: FeatureContext, arg?: unknown): Promise<vscode.Uri | undefined> {
  const args = findArgs(arg);
  const roots: SearchRoot[] = args.folder
    ? [{ uri: vscode.Uri.parse(args.folder), name: args.folder }]
    : executorFolders().map((f) => ({ uri: f.uri, name: f.name }));
  if (roots.length === 0) {
    const choice = await vscode.window.showInformationMessage(
      'Exec Bridge: this window has no executor folder to search. Open one first.',
      'Open Executor Folder…',
    );
    if (choice) await vscode.commands.executeCommand('execBridge.openExecutorFolder');
    return undefined;
  }
  const flags = {
    isRegExp: args.isRegExp ?? false,
    isCaseSensitive: args.isCaseSensitive ?? false,
    isWordMatch: args.isWordMatch ?? false,
  };
  return new FindInExecutorFilesPick(roots, flags, (executor) => searchOn(ext, executor)).show(args.query);
}
