import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { copyFullOutput, fullOutputNote, OPEN_FULL_OUTPUT_TITLE, type FullOutput } from '../core';
import { errorMessage } from '../util';
import type { ExecTerminal } from './api';
import { commandId } from './commandIds';
import type { FeatureContext } from './context';

/**
 * Exec Bridge: Open Full Output (core/terminalFullOutput.ts): the whole output the executor holds of
 * a terminal's process, in a read-only editor. The copy is a file in the extension's storage
 * (written a page at a time, with progress and cancel), shown through a read-only file system of
 * ours (`vscode.open`: the workbench reads it; a text document opened by the extension would be
 * refused above 50 MB); it goes when its tab closes (leftovers after a day). Also: the context key
 * for the menus and a link on the reopened terminal's notice.
 */

const SCHEME = 'exec-bridge-output';
/** True while the active terminal is one of ours (package.json menus). */
const CONTEXT_KEY = 'execBridge.execTerminalActive';
/** Copies older than this are removed at start (a window that crashed left them). */
const LEFTOVER_MS = 24 * 60 * 60 * 1000;

function outputDir(ext: FeatureContext): string {
  return join(ext.context.globalStorageUri.fsPath, 'full-output');
}

/** The read-only document scheme, the context key, the notice's link, the cleanup. Once, at activation. */
export function registerFullOutput(ext: FeatureContext, terminals: () => ExecTerminal[]): void {
  const ours = (t: vscode.Terminal | undefined) => t !== undefined && terminals().some((x) => x.terminal === t);
  const updateKey = () => void vscode.commands.executeCommand('setContext', CONTEXT_KEY, ours(vscode.window.activeTerminal));
  ext.disposables.add(vscode.window.onDidChangeActiveTerminal(updateKey));
  ext.disposables.add(vscode.window.onDidOpenTerminal(updateKey));
  ext.disposables.add(vscode.window.onDidCloseTerminal(updateKey));
  updateKey();
  ext.disposables.add(
    vscode.workspace.registerFileSystemProvider(SCHEME, new CopiesFileSystem(ext), { isReadonly: true, isCaseSensitive: true }),
  );
  ext.disposables.add(
    vscode.window.tabGroups.onDidChangeTabs((e) => {
      const open = new Set(shownCopies());
      for (const tab of e.closed) {
        const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
        if (uri?.scheme === SCHEME && !open.has(uri.toString())) void unlinkCopy(ext, uri);
      }
    }),
  );
  ext.disposables.add(
    vscode.window.registerTerminalLinkProvider({
      provideTerminalLinks: (context) => {
        if (!ours(context.terminal)) return [];
        const at = context.line.indexOf(OPEN_FULL_OUTPUT_TITLE);
        if (at < 0) return [];
        return [
          {
            startIndex: at,
            length: OPEN_FULL_OUTPUT_TITLE.length,
            tooltip: 'Open the whole output in an editor',
            terminal: context.terminal,
          },
        ];
      },
      handleTerminalLink: (link: vscode.TerminalLink & { terminal?: vscode.Terminal }) =>
        void vscode.commands.executeCommand(commandId('openFullOutput'), link.terminal),
    }),
  );
  void removeLeftovers(outputDir(ext));
}

/** The file behind a document of ours: its name is the query, inside our directory only. */
function fileOf(ext: FeatureContext, uri: vscode.Uri): string {
  const name = uri.query;
  if (!/^[\w.-]+$/.test(name)) throw vscode.FileSystemError.FileNotFound(uri);
  return join(outputDir(ext), name);
}

async function unlinkCopy(ext: FeatureContext, uri: vscode.Uri): Promise<void> {
  try {
    await unlink(fileOf(ext, uri));
  } catch {
    // Gone already.
  }
}

/** The URIs of our copies some tab still shows. */
function shownCopies(): string[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .flatMap((t) => (t.input instanceof vscode.TabInputText && t.input.uri.scheme === SCHEME ? [t.input.uri.toString()] : []));
}

/** The copies, read-only: the workbench reads a file as VS Code reads any (no 50 MB limit of extension documents). */
class CopiesFileSystem implements vscode.FileSystemProvider {
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changes.event;
  constructor(private readonly ext: FeatureContext) {}
  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }
  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const s = await stat(fileOf(this.ext, uri)).catch(() => {
      throw vscode.FileSystemError.FileNotFound(uri);
    });
    return { type: vscode.FileType.File, ctime: s.ctimeMs, mtime: s.mtimeMs, size: s.size, permissions: vscode.FilePermission.Readonly };
  }
  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return readFile(fileOf(this.ext, uri)).catch(() => {
      throw vscode.FileSystemError.FileNotFound(uri);
    });
  }
  readDirectory(): never {
    throw vscode.FileSystemError.NoPermissions('a copy of a terminal’s output is one file');
  }
  createDirectory(): never {
    throw vscode.FileSystemError.NoPermissions('read-only');
  }
  writeFile(): never {
    throw vscode.FileSystemError.NoPermissions('read-only');
  }
  delete(): never {
    throw vscode.FileSystemError.NoPermissions('read-only');
  }
  rename(): never {
    throw vscode.FileSystemError.NoPermissions('read-only');
  }
}

async function removeLeftovers(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    const p = join(dir, n);
    const s = await stat(p).catch(() => undefined);
    if (s && Date.now() - s.mtimeMs > LEFTOVER_MS) await unlink(p).catch(() => undefined);
  }
}

/** What the command reports back (tests read the file). */
export interface OpenedFullOutput extends FullOutput {
  file: string;
  uri: vscode.Uri;
}

/**
 * The command: `target` is the terminal it was invoked on (its context menu, the notice's link),
 * else the active one. Says clearly when there is nothing to open.
 */
export async function openFullOutput(
  ext: FeatureContext,
  terminals: () => ExecTerminal[],
  target: unknown,
): Promise<OpenedFullOutput | undefined> {
  const all = terminals();
  const t = all.find((x) => x.terminal === target) ?? all.find((x) => x.terminal === vscode.window.activeTerminal);
  if (!t) {
    void vscode.window.showInformationMessage(`${OPEN_FULL_OUTPUT_TITLE}: the active terminal is not an Exec Bridge terminal.`);
    return undefined;
  }
  const p = t.process;
  if (!p) {
    void vscode.window.showInformationMessage(`${OPEN_FULL_OUTPUT_TITLE}: nothing ran in "${t.terminal.name}" yet.`);
    return undefined;
  }
  const client = ext.connection(t.executor).client;
  if (!client) {
    void vscode.window.showWarningMessage(`${OPEN_FULL_OUTPUT_TITLE}: ${t.executor} is not connected; connect it and try again.`);
    return undefined;
  }
  const dir = outputDir(ext);
  const name = `${p.processId.replace(/[^\w.-]/g, '_')}-${Date.now()}.log`;
  const file = join(dir, name);
  let result: FullOutput;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Exec Bridge: the output of "${t.terminal.name}"`, cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        const sub = token.onCancellationRequested(() => abort.abort());
        const out = createWriteStream(file, { mode: 0o600 });
        const write = (data: Buffer) => new Promise<void>((resolve, reject) => out.write(data, (e) => (e ? reject(e) : resolve())));
        let reported = 0;
        try {
          return await copyFullOutput(
            (afterSeq, maxBytes) =>
              client.call('process/read', { processId: p.processId, afterSeq, ...(maxBytes !== undefined ? { maxBytes } : {}) }),
            write,
            {
              signal: abort.signal,
              onProgress: (bytes, of) => {
                const pct = of ? Math.min(100, (100 * bytes) / of) : 0;
                progress.report({ message: `${(bytes / (1024 * 1024)).toFixed(1)} MiB`, increment: pct - reported });
                reported = pct;
              },
            },
          );
        } finally {
          sub.dispose();
          await new Promise<void>((resolve) => out.end(resolve));
        }
      },
    );
  } catch (e) {
    await unlink(file).catch(() => undefined);
    void vscode.window.showErrorMessage(`${OPEN_FULL_OUTPUT_TITLE}: could not read the output of "${t.terminal.name}": ${errorMessage(e)}`);
    return undefined;
  }
  const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${t.terminal.name.replace(/[/\\]/g, '_')}.log`, query: name });
  await vscode.commands.executeCommand('vscode.open', uri, { preview: false });
  const note = fullOutputNote(result);
  if (note) void vscode.window.showInformationMessage(`${OPEN_FULL_OUTPUT_TITLE}: ${note}`);
  ext.log.info(`${t.executor}: full output of ${p.processId}: ${result.bytes} bytes in ${file}`);
  return { ...result, file, uri };
}
