import * as vscode from 'vscode';
import type { ExecServerClient } from '../client/execServerClient';
import { FsWatchClient } from '../client/fsWatch';
import { ExecutorChanges, type FileChange } from '../core/executorChanges';
import type { ExecutorConnection } from '../core/executorConnection';
import { ExecutorFiles, type FileStat } from '../core/executorFiles';
import { classifyFsError, ExecutorFsError } from '../core/fsErrors';
import {
  executorWorkspaceFile,
  isExecutorWorkspaceFile,
  missingWorkspaceFolders,
  restrictedModeText,
  WORKSPACE_DIR_IN_FOLDER,
  workspaceFilePlacement,
} from '../core/executorWorkspace';
import { EXECUTOR_FS_SCHEME, executorFileUri, findPathLinks } from '../core/pathMapping';
import { lastMarkedCwd } from '../core/shellIntegration';
import type { ExecTerminal } from './api';
import type { FeatureContext } from './context';
import { registerExecutorSearch } from './executorSearch';

/** The VS Code error for an fs failure (not found, exists, no permission, unavailable, …). */
function toFileSystemError(e: unknown, uri: vscode.Uri): vscode.FileSystemError {
  const { code, message } = classifyFsError(e);
  const text = `${uri.toString(true)}: ${message}`;
  switch (code) {
    case 'FileNotFound':
      return vscode.FileSystemError.FileNotFound(text);
    case 'FileExists':
      return vscode.FileSystemError.FileExists(text);
    case 'FileNotADirectory':
      return vscode.FileSystemError.FileNotADirectory(text);
    case 'FileIsADirectory':
      return vscode.FileSystemError.FileIsADirectory(text);
    case 'NoPermissions':
      return vscode.FileSystemError.NoPermissions(text);
    case 'Unavailable':
      return vscode.FileSystemError.Unavailable(text);
    case 'Unknown':
      return new vscode.FileSystemError(text);
  }
}

const fileType = (s: Pick<FileStat, 'kind' | 'symlink'>) =>
  (s.kind === 'directory' ? vscode.FileType.Directory : s.kind === 'file' ? vscode.FileType.File : vscode.FileType.Unknown) |
  (s.symlink ? vscode.FileType.SymbolicLink : 0);

/**
 * `execbridge://<executor>/<absolute path>`: files on an executor, over `fs/*` (core/executorFiles.ts).
 * Every call connects the executor if needed; while its connection is recovering calls fail at once
 * with `Unavailable` (VS Code keeps the editor and says why) instead of hanging the editor. Changes
 * made on the executor come from its server's file watches, or from polling where it has none
 * (core/executorChanges.ts).
 */
class ExecutorFileSystemProvider implements vscode.FileSystemProvider {
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly perExecutor = new Map<string, { files: ExecutorFiles; changes: ExecutorChanges }>();
  /** The watch client of each executor client (a new client, after a failure or Reconnect, gets its own). */
  private readonly watchClients = new WeakMap<ExecServerClient, FsWatchClient>();
  /** Executors a call failed on since they were last connected (the Explorer may hold that failure). */
  readonly failedOn = new Set<string>();
  private readonly stateSub: { dispose(): void };

  constructor(private readonly ext: FeatureContext) {
    this.stateSub = ext.executors.onDidChangeState(({ executor, state }) => {
      if (state.kind === 'connected') this.perExecutor.get(executor)?.changes.connected();
    });
  }

  /** The executor's connection now (settings may have replaced it since the entry was made). */
  private connectionOf(name: string): ExecutorConnection {
    const conn = this.ext.executors.get(name);
    if (!conn) throw new ExecutorFsError('FileNotFound', `there is no executor named "${name}"`);
    return conn;
  }

  private watchClient(name: string): FsWatchClient | undefined {
    const client = this.ext.executors.get(name)?.client;
    if (!client || client.state.kind === 'failed') return undefined;
    let w = this.watchClients.get(client);
    if (!w) {
      w = new FsWatchClient(client, (line) => this.ext.log.info(`${name}: ${line}`));
      this.watchClients.set(client, w);
    }
    return w;
  }

  private executor(uri: vscode.Uri): { conn: ExecutorConnection; files: ExecutorFiles; changes: ExecutorChanges } {
    if (!vscode.workspace.isTrusted) throw new ExecutorFsError('Unavailable', 'Exec Bridge reaches executors only in a trusted workspace');
    const name = decodeURIComponent(uri.authority);
    const conn = this.connectionOf(name);
    let entry = this.perExecutor.get(name);
    if (!entry) {
      const files = new ExecutorFiles(async () => {
        const current = this.connectionOf(name);
        if (current.client?.state.kind === 'recovering')
          throw new ExecutorFsError('Unavailable', `the connection to ${name} is recovering; try again in a moment`);
        return current.connect();
      });
      const changes = new ExecutorChanges(files, {
        canPoll: () => this.ext.executors.get(name)?.client?.state.kind === 'connected',
        source: () => this.watchClient(name),
        log: (line) => this.ext.log.debug(`${name}: ${line}`),
      });
      changes.onDidChange((list) => this.changed.fire(list.map((c) => this.event(name, c))));
      entry = { files, changes };
      this.perExecutor.set(name, entry);
    }
    return { conn, ...entry };
  }

  private event(executor: string, c: FileChange): vscode.FileChangeEvent {
    const type =
      c.type === 'created'
        ? vscode.FileChangeType.Created
        : c.type === 'deleted'
          ? vscode.FileChangeType.Deleted
          : vscode.FileChangeType.Changed;
    return { type, uri: vscode.Uri.parse(executorFileUri(executor, c.path)) };
  }

  private async call<T>(uri: vscode.Uri, fn: (e: ReturnType<ExecutorFileSystemProvider['executor']>) => Promise<T>): Promise<T> {
    try {
      return await fn(this.executor(uri));
    } catch (e) {
      this.failedOn.add(decodeURIComponent(uri.authority));
      throw toFileSystemError(e, uri);
    }
  }

  watch(uri: vscode.Uri, options: { readonly recursive: boolean; readonly excludes: readonly string[] }): vscode.Disposable {
    try {
      const stop = this.executor(uri).changes.watch(uri.path, { recursive: options.recursive, excludes: options.excludes });
      return new vscode.Disposable(stop);
    } catch {
      return new vscode.Disposable(() => undefined);
    }
  }

  stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    return this.call(uri, async ({ files }) => {
      const s = await files.stat(uri.path);
      return { type: fileType(s), ctime: s.ctimeMs, mtime: s.mtimeMs, size: s.size };
    });
  }

  readDirectory(uri: vscode.Uri): Promise<[string, vscode.FileType][]> {
    return this.call(uri, async ({ files, changes }) => {
      const entries = await files.readDirectory(uri.path);
      // What VS Code now shows of this folder (the Explorer lists a folder as it expands it): changes are looked for from here.
      changes.listed(
        uri.path,
        entries.map((e) => e.fileName),
      );
      return entries.map((e): [string, vscode.FileType] => [
        e.fileName,
        fileType({ kind: e.isDirectory ? 'directory' : e.isFile ? 'file' : 'other', symlink: false }),
      ]);
    });
  }

  createDirectory(uri: vscode.Uri): Promise<void> {
    return this.call(uri, ({ files }) => files.createDirectory(uri.path));
  }

  readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return this.call(uri, async ({ files, changes }) => {
      const data = await files.readFile(uri.path);
      changes.touched(uri.path, await files.stat(uri.path).catch(() => undefined));
      return data;
    });
  }

  writeFile(uri: vscode.Uri, content: Uint8Array, options: { readonly create: boolean; readonly overwrite: boolean }): Promise<void> {
    return this.call(uri, async ({ files, changes }) => {
      await files.writeFile(uri.path, content, options);
      changes.touched(uri.path, await files.stat(uri.path).catch(() => undefined));
    });
  }

  delete(uri: vscode.Uri, options: { readonly recursive: boolean }): Promise<void> {
    return this.call(uri, ({ files }) => files.delete(uri.path, options));
  }

  rename(oldUri: vscode.Uri, newUri: vscode.Uri, options: { readonly overwrite: boolean }): Promise<void> {
    return this.call(oldUri, async ({ files }) => {
      if (oldUri.authority !== newUri.authority) throw new ExecutorFsError('NoPermissions', 'cannot move files between executors');
      await files.rename(oldUri.path, newUri.path, options);
    });
  }

  copy(source: vscode.Uri, destination: vscode.Uri, options: { readonly overwrite: boolean }): Promise<void> {
    return this.call(source, async ({ files }) => {
      if (source.authority !== destination.authority) throw new ExecutorFsError('NoPermissions', 'cannot copy files between executors');
      await files.copy(source.path, destination.path, options);
    });
  }

  dispose(): void {
    this.stateSub.dispose();
    for (const { changes } of this.perExecutor.values()) changes.dispose();
    this.changed.dispose();
  }
}

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

/** Paths printed in our terminals (`/abs/file:12:3`) open through the provider, on that terminal's executor. */
type PathTerminalLink = vscode.TerminalLink & { target: vscode.Uri; line?: number; column?: number };

class ExecutorPathLinkProvider implements vscode.TerminalLinkProvider<PathTerminalLink> {
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

/** The `execbridge:` file system and the terminal links into it. */
export function registerExecutorFiles(ext: FeatureContext, terminals: () => ExecTerminal[]): void {
  const provider = new ExecutorFileSystemProvider(ext);
  ext.disposables.add(provider);
  ext.disposables.add(vscode.workspace.registerFileSystemProvider(EXECUTOR_FS_SCHEME, provider, { isCaseSensitive: true }));
  ext.disposables.add(vscode.window.registerTerminalLinkProvider(new ExecutorPathLinkProvider(terminals) as vscode.TerminalLinkProvider));
  registerExecutorSearch(ext);
  // An executor root the Explorer resolved while its executor was unreachable (e.g. a reload whose
  // old window still holds the session) stays empty with an error mark: list it again once that
  // executor is connected.
  ext.disposables.add(
    ext.executors.onDidChangeState(({ executor, state }) => {
      if (state.kind !== 'connected' || !provider.failedOn.delete(executor)) return;
      const roots = (vscode.workspace.workspaceFolders ?? []).filter(
        (f) => f.uri.scheme === EXECUTOR_FS_SCHEME && decodeURIComponent(f.uri.authority) === executor,
      );
      if (roots.length === 0) return;
      ext.log.info(`${executor}: connected again; refreshing the Explorer's executor folders`);
      void vscode.commands.executeCommand('workbench.files.action.refreshFilesExplorer');
    }),
  );
  void completeExecutorWorkspace(ext).catch((e: unknown) =>
    ext.log.warn(`executor workspace: ${e instanceof Error ? e.message : String(e)}`),
  );
  explainRestrictedMode(ext);
  // Trust granted: the executor roots the Explorer could not list (the provider refuses untrusted windows) are listed now.
  ext.disposables.add(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if ((vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme === EXECUTOR_FS_SCHEME))
        void vscode.commands.executeCommand('workbench.files.action.refreshFilesExplorer');
    }),
  );
}

/**
 * A workspace of ours that opened in Restricted Mode (a workspace file from an older version, kept
 * in global storage; a folder whose trust was taken back): its executor folders stay empty until
 * the user trusts it. Say so, with exactly what to click.
 */
function explainRestrictedMode(ext: FeatureContext): void {
  const file = vscode.workspace.workspaceFile;
  if (vscode.workspace.isTrusted || !file || !isExecutorWorkspaceFile(file.path, globalWorkspacesDir(ext).path)) return;
  const names = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === EXECUTOR_FS_SCHEME).map((f) => f.name);
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
async function completeExecutorWorkspace(ext: FeatureContext): Promise<void> {
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
