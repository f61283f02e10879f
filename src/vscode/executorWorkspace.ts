import * as vscode from 'vscode';
import {
  classifyFsError,
  executorFoldersInFile,
  executorWorkspaceFile,
  isExecutorWorkspaceFile,
  missingWorkspaceFolders,
  restrictedModeText,
  WORKSPACE_DIR_IN_FOLDER,
  workspaceFilePlacement,
  EXECUTOR_FS_SCHEME,
  executorFileUri,
} from '../core';
import type { ExecutorConnection } from '../core';
import type { FeatureContext } from './context';

// Executor folders in the window's workspace (the adapter of core/executorWorkspace.ts): Open
// Executor Folder…, the workspace file a single-folder window reopens with, and what a window
// reopened on such a file may still need (its folders shown, Restricted Mode explained).

/** The folder of `conn` as an `execbridge:` URI. */
export function executorFolderUri(executor: string, path: string): vscode.Uri {
  return vscode.Uri.parse(executorFileUri(executor, path));
}

/**
 * "Exec Bridge: Open Executor Folder…": asks for a folder on the executor (default: its working
 * directory) and adds it to the workspace: in place in a multi-root window (resolves once VS Code
 * applied it); a single-folder window reopens, without a question, as a workspace file of its folder
 * and the executor folder. A window of executor folders only would be a virtual workspace,
 * where this extension does not run: an empty window is refused with that reason.
 */
export async function openExecutorFolder(ext: FeatureContext, conn: ExecutorConnection, given?: string): Promise<vscode.Uri | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (!folders.some((f) => f.uri.scheme !== EXECUTOR_FS_SCHEME)) {
    throw new Error('open a local folder first: a window of executor folders only is a virtual workspace, where Exec Bridge cannot run');
  }
  const path =
    given ??
    (await vscode.window.showInputBox({
      title: `Open Executor Folder (${conn.name})`,
      prompt: 'Absolute path of a folder on the executor',
      value: conn.defaultCwd(),
      validateInput: (v) => (v.startsWith('/') ? undefined : 'an absolute path, e.g. /home/me/project'),
    }));
  if (!path) return undefined;
  const client = await conn.connect();
  const meta = await client.getMetadata(path).catch((e: unknown) => {
    throw new Error(`${path} on ${conn.name}: ${classifyFsError(e).message}`);
  });
  if (!meta.isDirectory) throw new Error(`${path} on ${conn.name} is not a folder`);
  const uri = executorFolderUri(conn.name, path);
  const name = `${conn.name}: ${path}`;
  if (folders.some((f) => f.uri.toString() === uri.toString())) {
    void vscode.commands.executeCommand('revealInExplorer', uri);
    return uri;
  }
  if (vscode.workspace.workspaceFile) {
    await addWorkspaceFolder(uri, name);
    ext.log.info(`${conn.name}: added executor folder ${uri.toString(true)} to the workspace`);
    void vscode.commands.executeCommand('workbench.view.explorer');
    return uri;
  }
  // A single-folder window becomes a workspace of its folder and the executor folder, without a
  // question: VS Code's own switch (updateWorkspaceFolders into an untitled workspace) does not
  // reopen the window in the web workbench (code-server 4.139: the workspace file is written, the
  // window stays as it was), so we write the workspace file (core/executorWorkspace.ts) and open it
  // in this window; the extension host (and this call) ends. With workspace trust on, the file goes
  // into the (trusted) folder itself: a workspace file elsewhere reopens the window untrusted.
  const file = executorWorkspaceFile(
    folders.map((f) => ({ uri: f.uri.toString(), scheme: f.uri.scheme, path: f.uri.path, name: f.name })),
    { uri: uri.toString(), name, label: `${conn.name}-${path.split('/').filter(Boolean).pop() ?? 'root'}` },
  );
  const dir = await workspaceFileDir(ext, folders[0]!.uri);
  const target = vscode.Uri.joinPath(dir, file.fileName);
  await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(file.text));
  ext.log.info(`${conn.name}: opening ${target.fsPath} (this window's folder and ${uri.toString(true)})`);
  void vscode.commands.executeCommand('vscode.openFolder', target, { forceReuseWindow: true });
  return uri;
}

/** The extension's own folder of workspace files (global storage). */
function globalWorkspacesDir(ext: FeatureContext): vscode.Uri {
  return vscode.Uri.joinPath(ext.context.globalStorageUri, 'workspaces');
}

/**
 * Where the workspace file of a single-folder window goes (core/executorWorkspace.ts,
 * `workspaceFilePlacement`): `<folder>/.vscode/exec-bridge/` when workspace trust is on (with a
 * `.gitignore` of `*`, so git never sees it), else the extension's global storage; made if needed.
 */
async function workspaceFileDir(ext: FeatureContext, folder: vscode.Uri): Promise<vscode.Uri> {
  const fallback = globalWorkspacesDir(ext);
  const placement = workspaceFilePlacement({
    trustEnabled: vscode.workspace.getConfiguration('security.workspace.trust').get<boolean>('enabled') !== false,
    trusted: vscode.workspace.isTrusted,
    folderWritable: vscode.workspace.fs.isWritableFileSystem(folder.scheme) !== false,
  });
  if (placement === 'folder') {
    const inFolder = vscode.Uri.joinPath(folder, ...WORKSPACE_DIR_IN_FOLDER);
    try {
      await vscode.workspace.fs.createDirectory(inFolder);
      const ignore = vscode.Uri.joinPath(inFolder, '.gitignore');
      const exists = await vscode.workspace.fs.stat(ignore).then(
        () => true,
        () => false,
      );
      if (!exists)
        await vscode.workspace.fs.writeFile(
          ignore,
          new TextEncoder().encode(
            '# Workspace files of Exec Bridge: Open Executor Folder… (kept here so VS Code trusts them; not for git)\n*\n',
          ),
        );
      return inFolder;
    } catch (e) {
      ext.log.warn(
        `cannot write the workspace file into ${folder.toString(true)} (${e instanceof Error ? e.message : String(e)}); it goes to global storage, and VS Code may ask for trust again`,
      );
    }
  }
  await vscode.workspace.fs.createDirectory(fallback);
  return fallback;
}

/** Adds a folder at the end of a multi-root workspace; resolves once VS Code applied it (a next update before that is refused). */
async function addWorkspaceFolder(uri: vscode.Uri, name: string): Promise<void> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  await new Promise<void>((resolve, reject) => {
    const done = (e?: Error) => {
      sub.dispose();
      clearTimeout(timer);
      if (e) reject(e);
      else resolve();
    };
    const sub = vscode.workspace.onDidChangeWorkspaceFolders((e) => {
      if (e.added.some((f) => f.uri.toString() === uri.toString())) done();
    });
    const timer = setTimeout(() => done(new Error('VS Code did not add the folder to the workspace within 15 s')), 15_000);
    if (!vscode.workspace.updateWorkspaceFolders(folders.length, 0, { uri, name })) {
      done(new Error('VS Code refused to add the folder to the workspace'));
    }
  });
}

/**
 * A workspace of ours that opened in Restricted Mode (a workspace file from an older version, kept
 * in global storage; a folder whose trust was taken back): its executor folders stay empty until
 * the user trusts it. Say so, with exactly what to click.
 */
export async function explainRestrictedMode(ext: FeatureContext): Promise<void> {
  const file = vscode.workspace.workspaceFile;
  if (vscode.workspace.isTrusted || !file || !isExecutorWorkspaceFile(file.path, globalWorkspacesDir(ext).path)) return;
  let names = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === EXECUTOR_FS_SCHEME).map((f) => f.name);
  // The web workbench may not list a workspace file's folders yet (see completeExecutorWorkspace): name them from the file.
  if (names.length === 0)
    names = await vscode.workspace.fs.readFile(file).then(
      (bytes) => executorFoldersInFile(new TextDecoder().decode(bytes), EXECUTOR_FS_SCHEME),
      () => [], // unreadable: the message goes without the names
    );
  ext.log.warn(`${file.fsPath} opened in Restricted Mode; its executor folders wait for the workspace to be trusted`);
  void vscode.window.showWarningMessage(restrictedModeText(names), 'Trust Workspace').then((choice) => {
    if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
  });
}

/** Resolves when the window's folders change or after `ms`. */
function foldersChanged(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const sub = vscode.workspace.onDidChangeWorkspaceFolders(() => done());
    const timer = setTimeout(() => done(), ms);
    function done() {
      sub.dispose();
      clearTimeout(timer);
      resolve();
    }
  });
}

/**
 * A window reopened on a workspace file that Open Executor Folder… wrote. The web workbench
 * (code-server 1.139) takes a remote workspace file's folders from its configuration cache first
 * (empty for a new file) and reads the file afterwards; sometimes that late read never reaches the
 * window, which then shows "No Folder Opened" for good. Here, once the provider is registered: while folders the
 * file names are missing, the file is rewritten (same text; the workbench watches it and reloads
 * its folders), at most 3 times.
 */
export async function completeExecutorWorkspace(ext: FeatureContext): Promise<void> {
  const file = vscode.workspace.workspaceFile;
  if (!file || !isExecutorWorkspaceFile(file.path, globalWorkspacesDir(ext).path)) return;
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
  const shown = () =>
    (vscode.workspace.workspaceFolders ?? []).map((f) => ({ uri: f.uri.toString(), scheme: f.uri.scheme, path: f.uri.path }));
  for (let attempt = 1; missingWorkspaceFolders(text, shown()).length > 0; attempt++) {
    // The workbench may still be reading the file: give it a moment before writing.
    await foldersChanged(attempt === 1 ? 3000 : 5000);
    const missing = missingWorkspaceFolders(text, shown());
    if (missing.length === 0) break;
    if (attempt > 3) {
      ext.log.warn(
        `${file.fsPath}: VS Code does not show ${JSON.stringify(missing)} of this workspace; reopen it (File > Open Workspace from File…)`,
      );
      return;
    }
    ext.log.info(
      `${file.fsPath}: VS Code shows ${shown().length} of its folders; rewriting it so VS Code reads it again (${attempt} of 3)`,
    );
    await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(text));
  }
}
