import * as vscode from 'vscode';
import { findPathLinks, lastMarkedCwd } from '../core';
import type { ExecTerminal } from './api';
import { executorFolderUri } from './executorWorkspace';

/** Paths printed in our terminals (`/abs/file:12:3`) open through the provider, on that terminal's executor. */
type PathTerminalLink = vscode.TerminalLink & { target: vscode.Uri; line?: number; column?: number };

export class ExecutorPathLinkProvider implements vscode.TerminalLinkProvider<PathTerminalLink> {
  constructor(private readonly terminals: () => ExecTerminal[]) {}

  async provideTerminalLinks(context: vscode.TerminalLinkContext): Promise<PathTerminalLink[]> {
    const t = this.terminals().find((x) => x.terminal === context.terminal);
    if (!t) return [];
    // Relative paths (`src/a.ts(3,7)`) resolve against the cwd our shell integration last marked,
    // and are offered only if they name a file on the executor.
    const found = findPathLinks(context.line, lastMarkedCwd(t.text()));
    const links = await Promise.all(
      found.map(async (l) => {
        const target = executorFolderUri(t.executor, l.path);
        if (l.relative) {
          const stat = await vscode.workspace.fs.stat(target).then(
            (st) => st,
            () => undefined,
          );
          if (!stat || !(stat.type & vscode.FileType.File)) return undefined;
        }
        const link: PathTerminalLink = {
          startIndex: l.start,
          length: l.length,
          tooltip: `Open on ${t.executor}`,
          target,
          ...(l.line !== undefined ? { line: l.line } : {}),
          ...(l.column !== undefined ? { column: l.column } : {}),
        };
        return link;
      }),
    );
    return links.filter((l): l is PathTerminalLink => l !== undefined);
  }

  async handleTerminalLink(link: PathTerminalLink): Promise<void> {
    const pos = link.line !== undefined ? new vscode.Position(Math.max(0, link.line - 1), Math.max(0, (link.column ?? 1) - 1)) : undefined;
    const stat = await vscode.workspace.fs.stat(link.target).then(
      (s) => s,
      () => undefined,
    );
    if (stat && stat.type & vscode.FileType.Directory) {
      await vscode.commands.executeCommand('revealInExplorer', link.target);
      return;
    }
    await vscode.window.showTextDocument(link.target, pos ? { selection: new vscode.Range(pos, pos) } : {});
  }
}
