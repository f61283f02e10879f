import * as vscode from 'vscode';

export function activate(context: vscode.ExtensionContext): { ok: boolean } {
  context.subscriptions.push(vscode.commands.registerCommand('execBridge.showLog', () => undefined));
  return { ok: true };
}

export function deactivate(): void {}
