import * as vscode from 'vscode';
import type { ExecutorState } from '../core/executorConnection';
import { describeExecutor } from '../core/executorConfig';
import { commandId } from './commandIds';
import type { FeatureContext } from './context';

/** Codicon + words for an executor state, shared by the status bar and the Executors view. */
export function stateText(state: ExecutorState): { icon: string; label: string } {
  switch (state.kind) {
    case 'idle':
      return { icon: 'debug-disconnect', label: 'not connected' };
    case 'connecting':
      return { icon: 'sync~spin', label: 'connecting…' };
    case 'connected':
      return { icon: 'vm-active', label: 'connected' };
    case 'recovering':
      return { icon: 'sync~spin', label: `recovering${state.attempt > 0 ? ` (attempt ${state.attempt})` : ''}…` };
    case 'failed':
      return { icon: 'error', label: `failed: ${state.message}` };
  }
}

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
    const { icon, label } = stateText(conn.state);
    item.text = `$(${icon}) ${conn.name}`;
    item.tooltip = new vscode.MarkdownString(
      `**Exec Bridge** — executor \`${conn.name}\`: ${label}\n\n${describeExecutor(conn.config)}\n\nClick to switch, reconnect or show the log.`,
    );
    item.backgroundColor = conn.state.kind === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    item.show();
  };
  ext.disposables.add(ext.executors.onDidChange(render));
  ext.disposables.add(ext.executors.onDidChangeState(({ executor }) => executor === ext.executors.active.name && render()));
  ext.disposables.add(vscode.workspace.onDidGrantWorkspaceTrust(render));
  render();
}

/** The status bar item's menu: every executor with its state, Reconnect, Show Log. */
export async function showStatusMenu(ext: FeatureContext): Promise<void> {
  type Item = vscode.QuickPickItem & { action: () => unknown };
  const active = ext.executors.active.name;
  const items: Item[] = ext.executors.all().map((c) => {
    const { icon, label } = stateText(c.state);
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
