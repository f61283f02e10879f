import * as vscode from 'vscode';
import { describeExecutor, stateText, statusBarText } from '../core';
import { commandId } from './commandIds';
import type { FeatureContext } from './context';

/**
 * The active executor and its state; click → `execBridge.statusMenu` (showStatusMenu) to switch
 * executor, reconnect, or show the log.
 */
export function registerStatusBar(ext: FeatureContext): void {
  const item = ext.disposables.add(vscode.window.createStatusBarItem('execBridge.status', vscode.StatusBarAlignment.Left, 100));
  item.name = 'Exec Bridge';
  item.command = commandId('statusMenu');
  const render = () => {
    if (!vscode.workspace.isTrusted) {
      item.text = '$(shield) Exec Bridge: restricted';
      item.tooltip = 'Exec Bridge connects and runs nothing until this workspace is trusted.';
      item.backgroundColor = undefined;
      item.show();
      return;
    }
    const conn = ext.executors.active;
    const { label, detail } = stateText(conn.state, conn.name);
    const others = ext.executors.all().filter((c) => c !== conn);
    item.text = statusBarText(conn, others);
    const elsewhere = others
      .filter((c) => c.state.kind === 'recovering')
      .map((c) => `\`${c.name}\`: ${stateText(c.state, c.name).detail ?? ''}`)
      .join('\n\n');
    item.tooltip = new vscode.MarkdownString(
      `**Exec Bridge** — executor \`${conn.name}\`: ${label}${detail ? `\n\n${detail}` : ''}\n\n${describeExecutor(conn.config)}` +
        `${elsewhere ? `\n\nAlso reconnecting: ${elsewhere}` : ''}\n\nClick to switch, reconnect or show the log.`,
    );
    item.backgroundColor = conn.state.kind === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    item.show();
  };
  ext.disposables.add(ext.executors.onDidChange(render));
  // Every executor's state: another one reconnecting shows too.
  ext.disposables.add(ext.executors.onDidChangeState(() => render()));
  ext.disposables.add(vscode.workspace.onDidGrantWorkspaceTrust(render));
  render();
}

/** The status bar item's menu: every executor with its state, Reconnect, Show Log. */
export async function showStatusMenu(ext: FeatureContext): Promise<void> {
  type Item = vscode.QuickPickItem & { action: () => unknown };
  const active = ext.executors.active.name;
  const items: Item[] = ext.executors.all().map((c) => {
    const { icon, label } = stateText(c.state, c.name);
    return {
      label: `$(${icon}) ${c.name}`,
      description: c.name === active ? `active · ${label}` : label,
      detail: describeExecutor(c.config),
      action: () => ext.useExecutor(c.name),
    };
  });
  items.push(
    { label: '', kind: vscode.QuickPickItemKind.Separator, action: () => undefined },
    { label: '$(refresh) Reconnect', description: active, action: () => vscode.commands.executeCommand(commandId('reconnect')) },
    { label: '$(output) Show Log', action: () => ext.log.show(true) },
  );
  const pick = await vscode.window.showQuickPick(items, {
    title: 'Exec Bridge',
    placeHolder: 'Switch executor, reconnect, or show the log',
  });
  await pick?.action();
}
