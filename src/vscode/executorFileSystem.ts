import * as vscode from 'vscode';
import { FsWatchClient, type ExecServerClient } from '../client';
import { ExecutorChanges, ExecutorFiles, classifyFsError, ExecutorFsError, EXECUTOR_FS_SCHEME, executorFileUri } from '../core';
import type { FileChange, ExecutorConnection, FileStat } from '../core';
import type { ExecTerminal } from './api';
import type { FeatureContext } from './context';
import { ExecutorPathLinkProvider } from './executorPathLinks';
import { registerExecutorSearch } from './executorSearch';
import { completeExecutorWorkspace, explainRestrictedMode } from './executorWorkspace';

// Open Executor Folder… and the workspace it makes: executorWorkspace.ts; the terminal links: executorPathLinks.ts.
export { executorFolderUri, openExecutorFolder } from './executorWorkspace';

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
  void explainRestrictedMode(ext).catch((e: unknown) => ext.log.warn(`Restricted Mode: ${e instanceof Error ? e.message : String(e)}`));
  // Trust granted: the executor roots the Explorer could not list (the provider refuses untrusted windows) are listed now.
  ext.disposables.add(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if ((vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme === EXECUTOR_FS_SCHEME))
        void vscode.commands.executeCommand('workbench.files.action.refreshFilesExplorer');
    }),
  );
}
