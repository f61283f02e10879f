import * as vscode from 'vscode';
import { describeExecutor, type ExecutorConfig } from '../core';
import type { FeatureContext } from './context';

// The handlers of the executor commands that ask something (registered by the table in commands.ts).

/**
 * `execBridge.selectExecutor`: the executor named by the argument, or the one picked. Each item's
 * pin button also makes it the default (`execBridge.defaultExecutor`, this workspace).
 */
export async function selectExecutor(ext: FeatureContext, name: unknown): Promise<void> {
  if (typeof name === 'string') return ext.useExecutor(name);
  const active = ext.executors.active.name;
  const configured = vscode.workspace.getConfiguration('execBridge').get<string>('defaultExecutor') || 'bundled';
  const pinButton = {
    iconPath: new vscode.ThemeIcon('pin'),
    tooltip: 'Use it and make it the default executor (execBridge.defaultExecutor)',
  };
  const pick = vscode.window.createQuickPick<vscode.QuickPickItem>();
  pick.title = 'Exec Bridge: Select Executor';
  pick.placeholder = 'Where commands and shells run (the pin also makes it the default)';
  pick.items = ext.executors.all().map((c) => ({
    label: c.name,
    description: [c.name === active ? 'active' : '', c.name === configured ? 'default' : ''].filter(Boolean).join(' · ') || undefined,
    detail: describeExecutor(c.config),
    buttons: [pinButton],
  }));
  const chosen = await new Promise<{ name: string; makeDefault: boolean } | undefined>((resolve) => {
    let result: { name: string; makeDefault: boolean } | undefined;
    pick.onDidAccept(() => {
      const item = pick.selectedItems[0];
      if (item) result = { name: item.label, makeDefault: false };
      pick.hide();
    });
    pick.onDidTriggerItemButton((e) => {
      result = { name: e.item.label, makeDefault: true };
      pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve(result);
    });
    pick.show();
  });
  if (!chosen) return;
  if (chosen.makeDefault)
    await vscode.workspace.getConfiguration('execBridge').update('defaultExecutor', chosen.name, vscode.ConfigurationTarget.Workspace);
  await ext.useExecutor(chosen.name);
}

type WebSocketConfig = Extract<ExecutorConfig, { kind: 'websocket' }>;

/** The WebSocket executor named `name`, the only one, or the one picked; undefined if there is none. */
async function pickRemote(ext: FeatureContext, name: unknown): Promise<WebSocketConfig | undefined> {
  const remotes = ext.executors.all().flatMap((c) => (c.config.kind === 'websocket' ? [c.config] : []));
  if (remotes.length === 0) {
    void vscode.window.showInformationMessage('Exec Bridge: no WebSocket executor is configured (setting execBridge.executors).');
    return undefined;
  }
  const named = remotes.find((c) => c.name === name);
  if (named) return named;
  if (remotes.length === 1) return remotes[0];
  const pick = await vscode.window.showQuickPick(
    remotes.map((c) => ({ label: c.name, description: describeExecutor(c), config: c })),
    { title: 'Set Executor Token' },
  );
  return pick?.config;
}

/**
 * `execBridge.setExecutorToken`: stores (empty: removes) a WebSocket executor's token and
 * reconnects it if it was in use. Arguments (for automation): the executor name, and the token
 * itself to skip the input box.
 */
export async function setExecutorToken(ext: FeatureContext, name: unknown, given: unknown): Promise<void> {
  const config = await pickRemote(ext, name);
  if (!config) return;
  const token =
    typeof given === 'string'
      ? given
      : await vscode.window.showInputBox({
          title: `Token for ${config.name}`,
          prompt: 'Sent as "Authorization: Bearer …" when connecting. Stored in VS Code\u2019s secret storage. Leave empty to remove it.',
          password: true,
          ignoreFocusOut: true,
        });
  if (token === undefined) return;
  await ext.executors.setToken(config, token.trim());
  const conn = ext.executors.get(config.name);
  if (conn && conn.state.kind !== 'idle') await ext.reconnect(conn);
}
