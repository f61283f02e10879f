import { parseExecutors, type ExecutorConfig, type ExecutorConfigProblem, type ParsedExecutors } from './executorConfig';

/*
 * Our list settings read across VS Code's scopes. VS Code merges object settings key by key but
 * replaces an array: `get()` returns the workspace's list alone once the workspace has one, so a
 * host or an executor the user adds to their own settings afterwards stays hidden (issue 24 item 2).
 * For these settings the effective value is the user's, the workspace's and the folder's together.
 */

/** What VS Code's `inspect()` gives for one setting (the scopes we read). */
export interface SettingScopes {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The scopes least specific first; the user's value replaces the default, as in VS Code. */
function layers(s: SettingScopes): { scope: 'user' | 'workspace' | 'folder'; value: unknown }[] {
  return [
    { scope: 'user' as const, value: s.globalValue ?? s.defaultValue },
    { scope: 'workspace' as const, value: s.workspaceValue },
    { scope: 'folder' as const, value: s.workspaceFolderValue },
  ].filter((l) => l.value !== undefined);
}

/**
 * The union of a list setting (`execBridge.sandboxNetworkAllow`): every scope's entries, least
 * specific first, each entry once (its first place). A scope whose value is not a list adds
 * nothing; the entries themselves are checked by whoever reads them.
 */
export function unionOfListScopes(s: SettingScopes): unknown[] {
  const out: unknown[] = [];
  for (const { value } of layers(s)) {
    if (!Array.isArray(value)) continue;
    for (const entry of value) if (!out.includes(entry)) out.push(entry);
  }
  return out;
}

const SCOPE_WORDS = { user: 'user settings', workspace: 'workspace settings', folder: 'folder settings' } as const;

/**
 * `execBridge.executors` across the scopes: each scope's list is read as `parseExecutors` reads one
 * (its problems named with the scope: "workspace settings: entry 2: …"); an executor of a more
 * specific scope replaces the one of the same name in place, new names join at the end.
 */
export function executorsFromScopes(s: SettingScopes, bundledCwd?: string): ParsedExecutors {
  const merged: ExecutorConfig[] = [];
  const problems: ExecutorConfigProblem[] = [];
  let bundled: ExecutorConfig | undefined;
  for (const { scope, value } of layers(s)) {
    const parsed = parseExecutors(value, bundledCwd);
    bundled ??= parsed.executors[0];
    for (const p of parsed.problems) problems.push({ index: p.index, message: `${SCOPE_WORDS[scope]}: ${p.message}` });
    for (const config of parsed.executors.slice(1)) {
      const at = merged.findIndex((c) => c.name === config.name);
      if (at >= 0) merged[at] = config;
      else merged.push(config);
    }
  }
  bundled ??= parseExecutors(undefined, bundledCwd).executors[0]!;
  return { executors: [bundled, ...merged], problems };
}

/** The user's own list of a setting (what a command that adds to the user settings appends to). */
export function userList(s: SettingScopes): unknown[] {
  return Array.isArray(s.globalValue) ? [...(s.globalValue as unknown[])] : [];
}
