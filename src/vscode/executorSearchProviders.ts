import { posix } from 'node:path';
import * as vscode from 'vscode';
import { fuzzyMatches, matchPreview, EXECUTOR_FS_SCHEME, executorFileUri, type ExecutorSearch, type SearchScope } from '../core';
import { errorMessage } from '../util';
import type { FeatureContext } from './context';

/*
 * VS Code's Find in Files and Quick Open in executor folders, where VS Code lets an extension answer
 * them for its own file system. That is a proposed API (`textSearchProvider`, `fileSearchProvider`):
 * desktop VS Code refuses it to an extension from the Marketplace or a VSIX ("CANNOT use API
 * proposal"), code-server (1.100.3, 1.139.1) allows it to every extension. We try, and say what happened.
 */

/** The old shapes of the proposed search API (vscode.proposed.textSearchProvider.d.ts as 1.100–1.139 adapt them). */
/** What a folder search of either kind is told: where, which files, which ignore files. */
interface OldSearchScope {
  folder: vscode.Uri;
  includes: string[];
  excludes: string[];
  useIgnoreFiles: boolean;
  useParentIgnoreFiles: boolean;
  useGlobalIgnoreFiles: boolean;
  followSymlinks: boolean;
}
interface OldTextSearchOptions extends OldSearchScope {
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
interface OldFileSearchOptions extends OldSearchScope {
  maxResults?: number;
  /** The same object for the queries of one Quick Open session. */
  session?: unknown;
}
interface TextSearchProvider {
  provideTextSearchResults(
    query: OldTextSearchQuery,
    options: OldTextSearchOptions,
    progress: vscode.Progress<OldTextSearchMatch>,
    token: vscode.CancellationToken,
  ): Promise<{ limitHit?: boolean }>;
}
interface FileSearchProvider {
  provideFileSearchResults(
    query: { pattern: string },
    options: OldFileSearchOptions,
    token: vscode.CancellationToken,
  ): Promise<vscode.Uri[]>;
}
interface ProposedSearchApi {
  registerTextSearchProvider?(scheme: string, provider: TextSearchProvider): vscode.Disposable;
  registerFileSearchProvider?(scheme: string, provider: FileSearchProvider): vscode.Disposable;
}

const MAX_FILE_RESULTS = 20_000;

/** The search of an executor, by name (one per executor, made when first asked for). */
export type SearchOn = (executor: string) => ExecutorSearch;

/**
 * Registers the text and file search providers of `execbridge:` where this VS Code lets us; says
 * which in the log. Returns whether Find in Files now searches executor folders.
 */
export function registerSearchProviders(ext: FeatureContext, on: SearchOn): boolean {
  const api = vscode.workspace as unknown as ProposedSearchApi;
  let findInFiles = false;
  try {
    if (typeof api.registerTextSearchProvider !== 'function') throw new Error('this VS Code has no registerTextSearchProvider');
    ext.disposables.add(api.registerTextSearchProvider(EXECUTOR_FS_SCHEME, textSearchProvider(on)));
    findInFiles = true;
    if (typeof api.registerFileSearchProvider === 'function')
      ext.disposables.add(api.registerFileSearchProvider(EXECUTOR_FS_SCHEME, fileSearchProvider(on)));
    ext.log.info('Find in Files and Quick Open search executor folders (on the executor, with rg or grep)');
  } catch (e) {
    ext.log.info(
      `Find in Files cannot search executor folders in this VS Code (${errorMessage(e)}); "Exec Bridge: Find in Executor Files…" does`,
    );
  }
  return findInFiles;
}

/** Find in Files: each match as it is found, its preview cut to the line length VS Code asks for. */
function textSearchProvider(on: SearchOn): TextSearchProvider {
  return {
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
              const p = matchPreview(m, max);
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
  };
}

/** Quick Open: the folder's files, fuzzy-matched against what was typed. */
function fileSearchProvider(on: SearchOn): FileSearchProvider {
  const fileLists = new WeakMap<object, Map<string, Promise<string[]>>>();
  return {
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
  };
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
