import * as vscode from 'vscode';
import { readSandboxSettings, executorsFromScopes, unionOfListScopes, userList, type ParsedExecutors, type SandboxSettings } from '../core';

/*
 * The one place our list settings are read: across the user, workspace and folder scopes
 * (core/settingScopes.ts), since VS Code's `get()` would return the most specific list alone.
 */

const section = () => vscode.workspace.getConfiguration('execBridge');

/** `execBridge.sandbox`, `sandboxNetwork`, and `sandboxNetworkAllow` of every scope together. */
export function currentSandboxSettings(): SandboxSettings {
  const c = section();
  return readSandboxSettings(c.get('sandbox'), c.get('sandboxNetwork'), unionOfListScopes(c.inspect('sandboxNetworkAllow') ?? {}));
}

/** `execBridge.executors` of every scope together (a more specific scope's executor wins by name). */
export function currentExecutors(bundledCwd?: string): ParsedExecutors {
  return executorsFromScopes(section().inspect('executors') ?? {}, bundledCwd);
}

/** The user settings' own `execBridge.executors` (what Add SSH Executor appends to). */
export function userExecutorEntries(): unknown[] {
  return userList(section().inspect('executors') ?? {});
}
