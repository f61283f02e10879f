import { posix } from 'node:path';
import * as vscode from 'vscode';
import { clientProcesses, ExecutorSearch, fuzzyMatches, type SearchScope, type TextMatch, type TextQuery } from '../core/executorSearch';
import { EXECUTOR_FS_SCHEME, executorFileUri } from '../core/pathMapping';
import { errorMessage } from '../util/errorMessage';
import type { FeatureContext } from './context';

/*
 * Search in executor folders (core/executorSearch.ts: rg, or grep, run on the executor):
 * - VS Code's Find in Files and Quick Open, where VS Code lets an extension answer them for its own
 *   file system. That is a proposed API (`textSearchProvider`, `fileSearchProvider`): desktop VS
 *   Code refuses it to an extension from the Marketplace or a VSIX ("CANNOT use API proposal"),
 *   code-server (1.100.3, 1.139.1) allows it to every extension. We try, and say what happened.
 * - "Exec Bridge: Find in Executor Files…" everywhere: a Quick Pick of the matches, each opening at
 *   its line and column; its button is in the Search view's title while executor folders are open.
 * - Where Find in Files cannot search them, the window says so once (not VS Code's "No results
 *   found. Review your settings for configured exclusions…", which would be wrong).
 */

/** The old shapes of the proposed search API (vscode.proposed.textSearchProvider.d.ts as 1.100–1.139 adapt them). */
interface OldTextSearchOptions {
  folder: vscode.Uri;
  includes: string[];
  excludes: string[];
  useIgnoreFiles: boolean;
  useParentIgnoreFiles: boolean;
  useGlobalIgnoreFiles: boolean;
  followSymlinks: boolean;
  maxResults: number;
  previewOptions?: { matchLines: number; charsPerLine: number };
  maxFileSize?: number;
}
interface OldTextSearchQuery {
  pattern: string;
  isRegExp?: boolean;
  isCaseSensitive?: boolean;
  isWordMatch?: boolean;
}
interface OldTextSearchMatch {
  uri: vscode.Uri;
  ranges: vscode.Range[];
  preview: { text: string; matches: vscode.Range[] };
}
interface OldFileSearchOptions {
  folder: vscode.Uri;
  includes: string[];
  excludes: string[];
  useIgnoreFiles: boolean;
  useParentIgnoreFiles: boolean;
  useGlobalIgnoreFiles: boolean;
  followSymlinks: boolean;
  maxResults?: number;
  /** The same object for the queries of one Quick Open session. */
  session?: unknown;
}
interface ProposedSearchApi {
  registerTextSearchProvider?(
    scheme: string,
    provider: {
      provideTextSearchResults(
        query: OldTextSearchQuery,
        options: OldTextSearchOptions,
        progress: vscode.Progress<OldTextSearchMatch>,
        token: vscode.CancellationToken,
      ): Promise<{ limitHit?: boolean }>;
    },
  ): vscode.Disposable;
  registerFileSearchProvider?(
    scheme: string,
    provider: {
      provideFileSearchResults(
        query: { pattern: string },
        options: OldFileSearchOptions,
        token: vscode.CancellationToken,
      ): Promise<vscode.Uri[]>;
    },
  ): vscode.Disposable;
}

/** Results of one Find in Executor Files at most (a search beyond stops the tool on the executor). */
const MAX_PICK_RESULTS = 2000;
const MAX_FILE_RESULTS = 20_000;
const HINT_KEY = 'execBridge.searchHintShown';

function searchOn(ext: FeatureContext, executor: string): ExecutorSearch {
  return new ExecutorSearch(
    clientProcesses(
      async () => {
        if (!vscode.workspace.isTrusted) throw new Error('Exec Bridge reaches executors only in a trusted workspace');
        return ext.connection(executor).connect();
      },
      (line) => ext.log.info(`${executor}: ${line}`),
    ),
    { rg: 'rg', grep: 'grep' },
    (line) => ext.log.info(`${executor}: ${line}`),
  );
}

/** A line's preview no longer than `max` characters, around its first match; ranges moved with it. */
function preview(m: TextMatch, max: number): { text: string; ranges: Array<{ start: number; end: number }> } {
  if (m.text.length <= max) return { text: m.text, ranges: m.ranges };
  const from = Math.max(0, Math.min(m.ranges[0]!.start - 40, m.text.length - max));
  const text = m.text.slice(from, from + max);
  return {
    text,
    ranges: m.ranges
      .map((r) => ({ start: Math.max(0, r.start - from), end: Math.min(text.length, r.end - from) }))
      .filter((r) => r.end >= r.start && r.start < text.length),
  };
}

export function executorFolders(): readonly vscode.WorkspaceFolder[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === EXECUTOR_FS_SCHEME);
}

/** Registers the search providers (where VS Code allows them), the Search view context key and the one-time hint. */
export function registerExecutorSearch(ext: FeatureContext): void {
  const searches = new Map<string, ExecutorSearch>();
  const on = (executor: string) => {
    let s = searches.get(executor);
    if (!s) searches.set(executor, (s = searchOn(ext, executor)));
    return s;
  };
  const api = vscode.workspace as unknown as ProposedSearchApi;
  const fileLists = new WeakMap<object, Map<string, Promise<string[]>>>();
  let findInFiles = false;
  try {
    if (typeof api.registerTextSearchProvider !== 'function') throw new Error('this VS Code has no registerTextSearchProvider');
    ext.disposables.add(
      api.registerTextSearchProvider(EXECUTOR_FS_SCHEME, {
        async provideTextSearchResults(query, options, progress, token) {
          const executor = decodeURIComponent(options.folder.authority);
          const abort = new AbortController();
          const sub = token.onCancellationRequested(() => abort.abort());
          const max = options.previewOptions?.charsPerLine ?? 10_000;
          try {
            const r = await on(executor).findText(
              { pattern: query.pattern, isRegExp: query.isRegExp, isCaseSensitive: query.isCaseSensitive, isWordMatch: query.isWordMatch },
              scopeOf(options),
              {
                maxResults: options.maxResults,
                signal: abort.signal,
                onMatch: (m) => {
                  const p = preview(m, max);
                  progress.report({
                    uri: vscode.Uri.parse(executorFileUri(executor, m.path)),
                    ranges: m.ranges.map((r) => new vscode.Range(m.line, r.start, m.line, r.end)),
                    preview: { text: p.text, matches: p.ranges.map((r) => new vscode.Range(0, r.start, 0, r.end)) },
                  });
                },
              },
            );
            return { limitHit: r.limitHit };
          } catch (e) {
            // Shown in the Search view: never an empty result that looks like "nothing there".
            throw new Error(`Exec Bridge could not search ${executor}: ${errorMessage(e)}`);
          } finally {
            sub.dispose();
          }
        },
      }),
    );
    findInFiles = true;
    if (typeof api.registerFileSearchProvider === 'function') {
      ext.disposables.add(
        api.registerFileSearchProvider(EXECUTOR_FS_SCHEME, {
          async provideFileSearchResults(query, options, token) {
            const executor = decodeURIComponent(options.folder.authority);
            // Quick Open asks again at every keystroke of one session: the folder's files are listed once per session.
            const key = JSON.stringify([
              options.folder.toString(),
              options.includes,
              options.excludes,
              options.useIgnoreFiles,
              options.followSymlinks,
            ]);
            const session = typeof options.session === 'object' && options.session !== null ? options.session : undefined;
            const cache = session ? (fileLists.get(session) ?? new Map<string, Promise<string[]>>()) : undefined;
            if (session && cache) fileLists.set(session, cache);
            let list = cache?.get(key);
            if (!list) {
              list = on(executor)
                .findFiles('', scopeOf(options), { maxResults: MAX_FILE_RESULTS })
                .then((r) => r.paths);
              cache?.set(key, list);
              list.catch(() => cache?.delete(key));
            }
            const all = await list;
            if (token.isCancellationRequested) return [];
            const max = Math.min(options.maxResults ?? MAX_FILE_RESULTS, MAX_FILE_RESULTS);
            return all
              .filter((p) => fuzzyMatches(posix.relative(options.folder.path, p), query.pattern))
              .slice(0, max)
              .map((p) => vscode.Uri.parse(executorFileUri(executor, p)));
          },
        }),
      );
    }
    ext.log.info('Find in Files and Quick Open search executor folders (on the executor, with rg or grep)');
  } catch (e) {
    ext.log.info(
      `Find in Files cannot search executor folders in this VS Code (${errorMessage(e)}); "Exec Bridge: Find in Executor Files…" does`,
    );
  }

  const update = () => {
    const any = executorFolders().length > 0;
    void vscode.commands.executeCommand('setContext', 'execBridge.hasExecutorFolders', any);
    if (any && !findInFiles) void hintOnce(ext);
  };
  ext.disposables.add(vscode.workspace.onDidChangeWorkspaceFolders(update));
  update();
}

function scopeOf(options: OldTextSearchOptions | OldFileSearchOptions): SearchScope {
  return {
    folder: options.folder.path,
    includes: options.includes,
    excludes: options.excludes,
    useIgnoreFiles: options.useIgnoreFiles,
    useParentIgnoreFiles: options.useParentIgnoreFiles,
    useGlobalIgnoreFiles: options.useGlobalIgnoreFiles,
    followSymlinks: options.followSymlinks,
    ...('maxFileSize' in options && options.maxFileSize ? { maxFileSize: options.maxFileSize } : {}),
  };
}

async function hintOnce(ext: FeatureContext): Promise<void> {
  if (ext.context.workspaceState.get<boolean>(HINT_KEY)) return;
  await ext.context.workspaceState.update(HINT_KEY, true);
  const choice = await vscode.window.showInformationMessage(
    'Find in Files does not search executor folders in this VS Code (it lets extensions search their own file systems only through a proposed API): an empty result there says nothing about them. Use "Exec Bridge: Find in Executor Files…" (also the search button in the Search view\'s title).',
    'Find in Executor Files…',
  );
  if (choice) await vscode.commands.executeCommand('execBridge.findInExecutorFiles');
}

/** The globs `files.exclude` and `search.exclude` leave out (those set to true), as Find in Files does. */
function excludesOf(uri: vscode.Uri): string[] {
  const out = new Set<string>();
  for (const section of ['files', 'search']) {
    const map = vscode.workspace.getConfiguration(section, uri).get<Record<string, unknown>>('exclude') ?? {};
    for (const [glob, on] of Object.entries(map)) if (on === true) out.add(glob);
  }
  return [...out];
}

interface PickItem extends vscode.QuickPickItem {
  match?: { uri: vscode.Uri; range: vscode.Range };
}

export interface FindArgs {
  query?: string;
  isRegExp?: boolean;
  isCaseSensitive?: boolean;
  isWordMatch?: boolean;
  /** An executor folder (`execbridge:` URI) to search; default: every executor folder of the window. */
  folder?: string;
}

function findArgs(arg: unknown): FindArgs {
  if (typeof arg === 'string') return { query: arg };
  if (typeof arg !== 'object' || arg === null) return {};
  const a = arg as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const b = (v: unknown) => (typeof v === 'boolean' ? v : undefined);
  const out: FindArgs = {};
  if (s(a.query) !== undefined) out.query = s(a.query);
  if (s(a.folder) !== undefined) out.folder = s(a.folder);
  if (b(a.isRegExp) !== undefined) out.isRegExp = b(a.isRegExp);
  if (b(a.isCaseSensitive) !== undefined) out.isCaseSensitive = b(a.isCaseSensitive);
  if (b(a.isWordMatch) !== undefined) out.isWordMatch = b(a.isWordMatch);
  return out;
}

/**
 * "Exec Bridge: Find in Executor Files…": a Quick Pick that searches the window's executor folders
 * on their executors as you type (rg, or grep); a match opens at its line and column. Resolves with
 * the opened file, or undefined when the pick was closed.
 */
export async function findInExecutorFiles(ext: FeatureContext, arg?: unknown): Promise<vscode.Uri | undefined> {
  const args = findArgs(arg);
  const roots = args.folder
    ? [{ uri: vscode.Uri.parse(args.folder), name: args.folder }]
    : executorFolders().map((f) => ({ uri: f.uri, name: f.name }));
  if (roots.length === 0) {
    const choice = await vscode.window.showInformationMessage(
      'Exec Bridge: this window has no executor folder to search. Open one first.',
      'Open Executor Folder…',
    );
    if (choice) await vscode.commands.executeCommand('execBridge.openExecutorFolder');
    return undefined;
  }
  const options = {
    isRegExp: args.isRegExp ?? false,
    isCaseSensitive: args.isCaseSensitive ?? false,
    isWordMatch: args.isWordMatch ?? false,
  };
  const pick = vscode.window.createQuickPick<PickItem>();
  pick.matchOnDescription = false;
  pick.placeholder = 'Text to find on the executor';
  const scopeText = roots.map((r) => r.name).join(', ');
  const buttons = () => [
    {
      iconPath: new vscode.ThemeIcon('case-sensitive'),
      tooltip: `Match Case (${options.isCaseSensitive ? 'on' : 'off'})`,
      key: 'isCaseSensitive' as const,
    },
    {
      iconPath: new vscode.ThemeIcon('whole-word'),
      tooltip: `Match Whole Word (${options.isWordMatch ? 'on' : 'off'})`,
      key: 'isWordMatch' as const,
    },
    {
      iconPath: new vscode.ThemeIcon('regex'),
      tooltip: `Use Regular Expression (${options.isRegExp ? 'on' : 'off'})`,
      key: 'isRegExp' as const,
    },
  ];
  const setTitle = (status?: string) => {
    const flags = [options.isCaseSensitive ? 'Aa' : '', options.isWordMatch ? 'ab|' : '', options.isRegExp ? '.*' : '']
      .filter(Boolean)
      .join(' ');
    pick.title = `Find in Executor Files: ${scopeText}${flags ? ` [${flags}]` : ''}${status ? ` — ${status}` : ''}`;
  };
  pick.buttons = buttons();
  setTitle();
  let current: AbortController | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const searches = new Map<string, ExecutorSearch>();

  const run = (text: string) => {
    current?.abort();
    const abort = (current = new AbortController());
    if (text === '') {
      pick.items = [];
      pick.busy = false;
      setTitle();
      return;
    }
    const query: TextQuery = { pattern: text, ...options };
    const files = new Map<string, PickItem[]>();
    let count = 0;
    let limitHit = false;
    let first = true;
    const render = () => {
      if (abort.signal.aborted) return;
      const items: PickItem[] = [];
      for (const [label, list] of files) items.push({ label, kind: vscode.QuickPickItemKind.Separator }, ...list);
      pick.items = items;
      const firstMatch = items.find((i) => i.match);
      if (first && firstMatch) {
        first = false;
        pick.activeItems = [firstMatch];
      }
    };
    let renderTimer: ReturnType<typeof setTimeout> | undefined;
    const scheduleRender = () => (renderTimer ??= setTimeout(() => ((renderTimer = undefined), render()), 100));
    pick.busy = true;
    setTitle('searching…');
    void (async () => {
      const tools = new Set<string>();
      const errors: string[] = [];
      for (const root of roots) {
        const executor = decodeURIComponent(root.uri.authority);
        let search = searches.get(executor);
        if (!search) searches.set(executor, (search = searchOn(ext, executor)));
        try {
          const r = await search.findText(
            query,
            { folder: root.uri.path, excludes: excludesOf(root.uri) },
            {
              maxResults: MAX_PICK_RESULTS - count,
              signal: abort.signal,
              onMatch: (m) => {
                count++;
                const rel = posix.relative(root.uri.path, m.path) || posix.basename(m.path);
                const key = roots.length > 1 ? `${root.name}/${rel}` : rel;
                const r0 = m.ranges[0]!;
                const list = files.get(key) ?? [];
                list.push({
                  label: m.text.trim().slice(0, 200) || ' ',
                  description: `${m.line + 1}:${r0.start + 1}`,
                  alwaysShow: true,
                  match: {
                    uri: vscode.Uri.parse(executorFileUri(executor, m.path)),
                    range: new vscode.Range(m.line, r0.start, m.line, r0.end),
                  },
                });
                files.set(key, list);
                scheduleRender();
              },
            },
          );
          tools.add(`${r.tool} on ${executor}${r.sandboxed ? '' : ', unsandboxed'}`);
          limitHit ||= r.limitHit && !abort.signal.aborted;
        } catch (e) {
          if (abort.signal.aborted) return;
          errors.push(`${root.name}: ${errorMessage(e)}`);
        }
        if (abort.signal.aborted || count >= MAX_PICK_RESULTS) break;
      }
      if (abort.signal.aborted) return;
      if (renderTimer) clearTimeout(renderTimer);
      renderTimer = undefined;
      render();
      pick.busy = false;
      const how = [...tools].join(', ');
      if (count === 0) {
        // Said as what it is: searched there, nothing found (or why it could not search).
        pick.items = [
          ...errors.map((e) => ({ label: `$(error) ${e}`, alwaysShow: true })),
          ...(errors.length < roots.length
            ? [{ label: `$(info) No results for "${text}" in ${scopeText}`, description: how, alwaysShow: true }]
            : []),
        ];
        setTitle('no results');
        return;
      }
      if (errors.length > 0) pick.items = [...errors.map((e) => ({ label: `$(error) ${e}`, alwaysShow: true })), ...pick.items];
      setTitle(`${count}${limitHit ? '+' : ''} results in ${files.size} files (${how})`);
    })();
  };

  return new Promise<vscode.Uri | undefined>((resolve) => {
    let opened: vscode.Uri | undefined;
    pick.onDidChangeValue((v) => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => run(v), 250);
    });
    pick.onDidTriggerButton((b) => {
      const key = (b as { key?: keyof typeof options }).key;
      if (!key) return;
      options[key] = !options[key];
      pick.buttons = buttons();
      run(pick.value);
    });
    pick.onDidAccept(async () => {
      const match = pick.activeItems[0]?.match;
      if (!match) return;
      opened = match.uri;
      pick.hide();
      try {
        await vscode.window.showTextDocument(match.uri, { selection: match.range, preview: true });
      } catch (e) {
        void vscode.window.showErrorMessage(`Exec Bridge: could not open ${match.uri.toString(true)}: ${errorMessage(e)}`);
      }
      resolve(opened);
    });
    pick.onDidHide(() => {
      current?.abort();
      if (timer) clearTimeout(timer);
      pick.dispose();
      if (!opened) resolve(undefined);
    });
    pick.show();
    if (args.query) {
      pick.value = args.query;
      run(args.query);
    }
  });
}
