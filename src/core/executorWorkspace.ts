import { createHash } from 'node:crypto';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';

/** A workspace folder as the workspace file needs it (no `vscode` import here). */
export interface WorkspaceFolderRef {
  /** The folder's URI, as `Uri.toString()`. */
  uri: string;
  /** Its scheme and path, to write `file:` folders as paths. */
  scheme: string;
  path: string;
  name?: string;
}

export type WorkspaceFileEntry = { path: string; name?: string } | { uri: string; name?: string };

/**
 * The `.code-workspace` file that "Open Executor Folder…" opens when the window is a single-folder
 * window: the window's folders first, then the executor folder. Local (`file:`) folders are written
 * as absolute paths: VS Code resolves a path against the workspace file's own location, which in a
 * remote window (code-server, Remote-SSH) is the remote machine, where a `file:` URI would point
 * at the client. The file name (VS Code titles the window with it) is `<local folder> + <label>`
 * and a hash of the folders, so opening the same pair again reuses the file.
 */
export function executorWorkspaceFile(
  current: WorkspaceFolderRef[],
  add: { uri: string; name: string; label: string },
): { fileName: string; text: string } {
  const folders: WorkspaceFileEntry[] = current.map((f) => {
    const named = f.name !== undefined ? { name: f.name } : {};
    return f.scheme === 'file' ? { path: f.path, ...named } : { uri: f.uri, ...named };
  });
  if (!current.some((f) => f.uri === add.uri)) folders.push({ uri: add.uri, name: add.name });
  const text = JSON.stringify({ folders }, null, 2) + '\n';
  const first = current[0]?.path.split('/').filter(Boolean).pop() ?? 'workspace';
  const label = `${first} + ${add.label}`
    .replace(/[^A-Za-z0-9._+@ -]+/g, '-')
    .replace(/-+/g, '-')
    .slice(0, 80);
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  return { fileName: `${label}-${hash}.code-workspace`, text };
}

/** The `folders` of a workspace file (JSON with comments and trailing commas, as VS Code reads it); empty when the text is not one. */
export function workspaceFileFolders(fileText: string): WorkspaceFileEntry[] {
  const errors: ParseError[] = [];
  const folders = (parseJsonc(fileText, errors, { allowTrailingComma: true }) as { folders?: unknown } | undefined)?.folders;
  if (errors.length > 0 || !Array.isArray(folders)) return [];
  return folders.flatMap((f): WorkspaceFileEntry[] => {
    if (typeof f !== 'object' || f === null) return [];
    const e = f as { path?: unknown; uri?: unknown; name?: unknown };
    const named = typeof e.name === 'string' ? { name: e.name } : {};
    if (typeof e.path === 'string') return [{ path: e.path, ...named }];
    if (typeof e.uri === 'string') return [{ uri: e.uri, ...named }];
    return [];
  });
}

/**
 * The folders a workspace file names that the window does not show (by path for `path` entries,
 * by URI for `uri` entries), in file order. Empty when the text is not a workspace file.
 */
export function missingWorkspaceFolders(fileText: string, shown: readonly WorkspaceFolderRef[]): WorkspaceFileEntry[] {
  const trim = (p: string) => (p.length > 1 ? p.replace(/\/+$/, '') : p);
  return workspaceFileFolders(fileText).filter((e) =>
    'path' in e ? !shown.some((s) => s.scheme === 'file' && trim(s.path) === trim(e.path)) : !shown.some((s) => s.uri === e.uri),
  );
}

/**
 * The names of the executor folders (URIs with `scheme`) a workspace file lists, for a window that
 * does not list its folders yet: an entry's `name`, else its URI.
 */
export function executorFoldersInFile(fileText: string, scheme: string): string[] {
  return workspaceFileFolders(fileText)
    .filter((e): e is { uri: string; name?: string } => 'uri' in e && e.uri.startsWith(`${scheme}:`))
    .map((e) => e.name ?? e.uri);
}

/** Where Open Executor Folder… writes the workspace file of a single-folder window, in the folder itself (`<folder>/.vscode/exec-bridge/`). */
export const WORKSPACE_DIR_IN_FOLDER = ['.vscode', 'exec-bridge'] as const;

/**
 * Where the workspace file goes. VS Code trusts a saved workspace only if its *file* is in a
 * trusted place too (its folders are not enough: the file decides which folders open): written to
 * the extension's global storage it reopens the window in Restricted Mode (1.139.1) or asks for
 * trust again (1.100.3). The window's own folder is trusted (the window is), so with workspace
 * trust on the file goes there, in `.vscode/exec-bridge/` (with a `.gitignore` that keeps it out
 * of git); with trust off (nothing to decide) the user's folder is left alone.
 */
export function workspaceFilePlacement(o: {
  trustEnabled: boolean;
  trusted: boolean;
  folderWritable: boolean;
}): 'folder' | 'globalStorage' {
  return o.trustEnabled && o.trusted && o.folderWritable ? 'folder' : 'globalStorage';
}

/** Whether a window's workspace file is one Open Executor Folder… wrote (in global storage, or in a folder's `.vscode/exec-bridge/`). */
export function isExecutorWorkspaceFile(path: string, globalWorkspacesDir: string): boolean {
  if (!path.endsWith('.code-workspace')) return false;
  return path.startsWith(`${globalWorkspacesDir}/`) || path.includes(`/${WORKSPACE_DIR_IN_FOLDER.join('/')}/`);
}

/** What a window in Restricted Mode on such a workspace tells the user: exactly what to click. */
export function restrictedModeText(executorFolders: readonly string[]): string {
  const which = executorFolders.length > 0 ? ` (${executorFolders.join(', ')})` : '';
  return (
    `Exec Bridge: this workspace opened in Restricted Mode, so its executor folder${which} stays empty: VS Code has not trusted the workspace file. ` +
    'Click "Trust Workspace" below and then "Trust" on the page that opens; the executor folder is listed as soon as the workspace is trusted.'
  );
}
