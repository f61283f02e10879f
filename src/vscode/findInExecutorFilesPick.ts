import { posix } from 'node:path';
import * as vscode from 'vscode';
import { executorFileUri, type ExecutorSearch, type TextMatch, type TextQuery } from '../core';
import { errorMessage } from '../util';
import type { SearchOn } from './executorSearchProviders';

/** Results of one Find in Executor Files at most (a search beyond stops the tool on the executor). */
const MAX_PICK_RESULTS = 2000;

interface PickItem extends vscode.QuickPickItem {
  match?: { uri: vscode.Uri; range: vscode.Range };
}

/** An executor folder to search and the name it goes by in the pick. */
export interface SearchRoot {
  uri: vscode.Uri;
  name: string;
}

/** The pick's toggles (its title buttons). */
export interface FindFlags {
  isRegExp: boolean;
  isCaseSensitive: boolean;
  isWordMatch: boolean;
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

/** The matches of one search, grouped by file, shown at most every 100 ms while they come. */
class PickResults {
  readonly files = new Map<string, PickItem[]>();
  count = 0;
  limitHit = false;
  private first = true;
  private renderTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly pick: vscode.QuickPick<PickItem>,
    private readonly signal: AbortSignal,
    private readonly manyRoots: boolean,
  ) {}

  add(root: SearchRoot, executor: string, m: TextMatch): void {
    this.count++;
    const rel = posix.relative(root.uri.path, m.path) || posix.basename(m.path);
    const key = this.manyRoots ? `${root.name}/${rel}` : rel;
    const r0 = m.ranges[0]!;
    const list = this.files.get(key) ?? [];
    list.push({
      label: m.text.trim().slice(0, 200) || ' ',
      description: `${m.line + 1}:${r0.start + 1}`,
      alwaysShow: true,
      match: {
        uri: vscode.Uri.parse(executorFileUri(executor, m.path)),
        range: new vscode.Range(m.line, r0.start, m.line, r0.end),
      },
    });
    this.files.set(key, list);
    this.renderTimer ??= setTimeout(() => ((this.renderTimer = undefined), this.render()), 100);
  }

  /** Shows every match now (the search ended). */
  flush(): void {
    if (this.renderTimer) clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
    this.render();
  }

  private render(): void {
    if (this.signal.aborted) return;
    const items: PickItem[] = [];
    for (const [label, list] of this.files) items.push({ label, kind: vscode.QuickPickItemKind.Separator }, ...list);
    this.pick.items = items;
    const firstMatch = items.find((i) => i.match);
    if (this.first && firstMatch) {
      this.first = false;
      this.pick.activeItems = [firstMatch];
    }
  }
}

/**
 * The Quick Pick of "Exec Bridge: Find in Executor Files…": searches `roots` on their executors
 * 250 ms after the last keystroke (a new search aborts the one before); its buttons toggle case,
 * whole word and regular expression; accepting a match opens it at its line and column.
 */
export class FindInExecutorFilesPick {
  private readonly pick = vscode.window.createQuickPick<PickItem>();
  private readonly scopeText: string;
  private readonly searches = new Map<string, ExecutorSearch>();
  private current: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly roots: readonly SearchRoot[],
    private readonly flags: FindFlags,
    private readonly searchOn: SearchOn,
  ) {
    this.pick.matchOnDescription = false;
    this.pick.placeholder = 'Text to find on the executor';
    this.scopeText = roots.map((r) => r.name).join(', ');
    this.pick.buttons = this.buttons();
    this.setTitle();
  }

  /** Shows the pick (searching `query` at once if given); resolves with the opened file, or undefined when it was closed. */
  show(query?: string): Promise<vscode.Uri | undefined> {
    const { pick } = this;
    return new Promise<vscode.Uri | undefined>((resolve) => {
      let opened: vscode.Uri | undefined;
      pick.onDidChangeValue((v) => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => this.run(v), 250);
      });
      pick.onDidTriggerButton((b) => {
        const key = (b as { key?: keyof FindFlags }).key;
        if (!key) return;
        this.flags[key] = !this.flags[key];
        pick.buttons = this.buttons();
        this.run(pick.value);
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
        this.current?.abort();
        if (this.timer) clearTimeout(this.timer);
        pick.dispose();
        if (!opened) resolve(undefined);
      });
      pick.show();
      if (query) {
        pick.value = query;
        this.run(query);
      }
    });
  }

  private buttons() {
    const { flags } = this;
    return [
      {
        iconPath: new vscode.ThemeIcon('case-sensitive'),
        tooltip: `Match Case (${flags.isCaseSensitive ? 'on' : 'off'})`,
        key: 'isCaseSensitive' as const,
      },
      {
        iconPath: new vscode.ThemeIcon('whole-word'),
        tooltip: `Match Whole Word (${flags.isWordMatch ? 'on' : 'off'})`,
        key: 'isWordMatch' as const,
      },
      {
        iconPath: new vscode.ThemeIcon('regex'),
        tooltip: `Use Regular Expression (${flags.isRegExp ? 'on' : 'off'})`,
        key: 'isRegExp' as const,
      },
    ];
  }

  private setTitle(status?: string): void {
    const { flags } = this;
    const shown = [flags.isCaseSensitive ? 'Aa' : '', flags.isWordMatch ? 'ab|' : '', flags.isRegExp ? '.*' : ''].filter(Boolean).join(' ');
    this.pick.title = `Find in Executor Files: ${this.scopeText}${shown ? ` [${shown}]` : ''}${status ? ` — ${status}` : ''}`;
  }

  /** Searches `text` (the one before is aborted); the empty text clears the pick. */
  private run(text: string): void {
    this.current?.abort();
    const abort = (this.current = new AbortController());
    if (text === '') {
      this.pick.items = [];
      this.pick.busy = false;
      this.setTitle();
      return;
    }
    const results = new PickResults(this.pick, abort.signal, this.roots.length > 1);
    this.pick.busy = true;
    this.setTitle('searching…');
    void this.search({ pattern: text, ...this.flags }, results, abort.signal);
  }

  /** Each root in turn, until MAX_PICK_RESULTS; then the results, or what was searched and why nothing came. */
  private async search(query: TextQuery, results: PickResults, signal: AbortSignal): Promise<void> {
    const tools = new Set<string>();
    const errors: string[] = [];
    for (const root of this.roots) {
      const executor = decodeURIComponent(root.uri.authority);
      let search = this.searches.get(executor);
      if (!search) this.searches.set(executor, (search = this.searchOn(executor)));
      try {
        const r = await search.findText(
          query,
          { folder: root.uri.path, excludes: excludesOf(root.uri) },
          { maxResults: MAX_PICK_RESULTS - results.count, signal, onMatch: (m) => results.add(root, executor, m) },
        );
        tools.add(`${r.tool} on ${executor}${r.sandboxed ? '' : ', unsandboxed'}`);
        results.limitHit ||= r.limitHit && !signal.aborted;
      } catch (e) {
        if (signal.aborted) return;
        errors.push(`${root.name}: ${errorMessage(e)}`);
      }
      if (signal.aborted || results.count >= MAX_PICK_RESULTS) break;
    }
    if (signal.aborted) return;
    results.flush();
    this.pick.busy = false;
    const how = [...tools].join(', ');
    const errorItems = errors.map((e) => ({ label: `$(error) ${e}`, alwaysShow: true }));
    if (results.count === 0) {
      // Said as what it is: searched there, nothing found (or why it could not search).
      this.pick.items = [
        ...errorItems,
        ...(errors.length < this.roots.length
          ? [{ label: `$(info) No results for "${query.pattern}" in ${this.scopeText}`, description: how, alwaysShow: true }]
          : []),
      ];
      this.setTitle('no results');
      return;
    }
    if (errors.length > 0) this.pick.items = [...errorItems, ...this.pick.items];
    this.setTitle(`${results.count}${results.limitHit ? '+' : ''} results in ${results.files.size} files (${how})`);
  }
}
