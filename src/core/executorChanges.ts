import { posix } from 'node:path';
import type { ClientWatch, FsWatchEvent, WatchRequest } from '../client';
import { systemClock, Emitter, type Clock, type Disposable, type Event } from '../util';
import { executorFilePath, type FileStat } from './executorFiles';
import { DEFAULT_POLL_LIMITS, ExecutorFilePoller, within, type FileChange, type PolledFiles, type PollLimits } from './executorFilePoller';

// Moved to executorFilePoller.ts; importers of this file keep these names.
export { DEFAULT_POLL_LIMITS, ExecutorFilePoller } from './executorFilePoller';
export type { FileChange, FileChangeType, PolledFiles, PollLimits } from './executorFilePoller';

/**
 * VS Code's watch excludes (`files.watcherExclude` globs) as the server's `excludes`: `**\/NAME/**`
 * → `NAME`, `**\/a/b/**` → `a/b`, `**\/node_modules/*\/**` → `node_modules/*`. Globs of other
 * shapes (`*.log`, braces) are left out: the server then watches more, never less.
 */
export function watchExcludes(globs: readonly string[] | undefined): string[] {
  const out = new Set<string>();
  for (const g of globs ?? []) {
    const m = /^(?:\*\*\/)?(.+?)(?:\/\*\*(?:\/\*)?)?$/.exec(g.trim());
    const body = m?.[1];
    if (!body || !g.trim().endsWith('/**')) continue;
    const segments = body.split('/');
    if (segments.some((s) => s === '' || s === '**' || (s !== '*' && /[*?[\]{}!]/.test(s)))) continue;
    out.add(segments.join('/'));
  }
  return [...out].slice(0, 64);
}

/** Whether directory `rel` (relative, `/`-separated) is excluded by `excludes` (as the server decides it). */
function excludedBy(rel: string, excludes: readonly string[]): boolean {
  if (rel === '') return false;
  const segments = rel.split('/');
  for (let end = 1; end <= segments.length; end++) {
    const dirSegments = segments.slice(0, end);
    for (const pattern of excludes) {
      const want = pattern.split('/');
      if (want.length > dirSegments.length) continue;
      const tail = dirSegments.slice(dirSegments.length - want.length);
      if (want.every((w, i) => w === '*' || w === tail[i])) return true;
    }
  }
  return false;
}

/** The file watches of the current connection (client/fsWatch.ts's FsWatchClient, or a fake in tests). */
export interface WatchSource extends Disposable {
  readonly supported: boolean;
  watch(request: WatchRequest): ClientWatch;
  readonly onDidChange: Event<FsWatchEvent>;
  readonly onDidReconnect: Event<void>;
}

export interface ExecutorChangesDeps {
  /** Whether the executor is connected (polling waits otherwise). */
  canPoll(): boolean;
  /** The watches of the executor's current client (a new one per client); undefined: none (not connected). */
  source(): WatchSource | undefined;
  limits?: PollLimits;
  clock?: Clock;
  log?(line: string): void;
}

interface TrackedWatch {
  path: string;
  recursive: boolean;
  excludes: string[];
  count: number;
  stopPolling: () => void;
  server: ClientWatch | undefined;
}

/**
 * What changed on an executor, for the file system provider: a server watch where the executor's
 * server offers them (ours; docs/protocol-extensions.md "File watches"), polling (bounded, core/executorFilePoller.ts)
 * for everything no server watch covers — the whole of it on `codex exec-server`, a tree too big for
 * the server's bounds, a path it refused. After an overflow or a new connection what polling knows
 * is looked at again at once, so nothing that changed meanwhile goes unreported.
 */
export class ExecutorChanges implements Disposable {
  private readonly changes = new Emitter<FileChange[]>();
  readonly onDidChange: Event<FileChange[]> = this.changes.event;
  readonly poller: ExecutorFilePoller;
  private readonly watches = new Map<string, TrackedWatch>();
  private source: WatchSource | undefined;
  private sourceSubs: Disposable[] = [];
  private disposed = false;

  constructor(
    files: PolledFiles,
    private readonly deps: ExecutorChangesDeps,
  ) {
    this.poller = new ExecutorFilePoller(files, deps.canPoll, deps.limits ?? DEFAULT_POLL_LIMITS, deps.clock ?? systemClock, (p) =>
      this.covered(p),
    );
    this.poller.onDidChange((c) => this.fire(c));
  }

  /** Watches `path` (VS Code's `watch`); the returned function ends it. */
  watch(path: string, options: { recursive: boolean; excludes?: readonly string[] }): () => void {
    const p = executorFilePath(path);
    const excludes = watchExcludes(options.excludes);
    const key = `${options.recursive ? 'r' : 'n'} ${p} ${excludes.join(',')}`;
    let w = this.watches.get(key);
    if (w) w.count++;
    else {
      w = { path: p, recursive: options.recursive, excludes, count: 1, stopPolling: this.poller.watch(p), server: undefined };
      this.watches.set(key, w);
      this.serverWatch(w);
    }
    const tracked = w;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--tracked.count > 0) return;
      this.watches.delete(key);
      tracked.stopPolling();
      tracked.server?.dispose();
      tracked.server = undefined;
    };
  }

  touched(path: string, stat?: FileStat): void {
    this.poller.touched(path, stat);
  }

  listed(path: string, names: readonly string[]): void {
    this.poller.listed(path, names);
  }

  /** Whether a server watch reports changes of `p` now (so polling leaves it out). */
  covered(p: string): boolean {
    for (const w of this.watches.values()) {
      if (!w.server?.covered) continue;
      if (w.recursive) {
        if (!within(p, w.path)) continue;
        const rel = p === w.path ? '' : p.slice(w.path === '/' ? 1 : w.path.length + 1);
        // Nothing in an excluded directory is watched there, nor its names.
        if (excludedBy(rel, w.excludes)) continue;
        return true;
      }
      if (p === w.path || posix.dirname(p) === w.path) return true;
    }
    return false;
  }

  /**
   * The executor (re)connected, maybe with a new client: watch through the current one, and look
   * at everything once (what changed while it was away was not reported).
   */
  connected(): void {
    if (this.disposed) return;
    const now = this.deps.source();
    // The same client resumed: its watch client makes the watches again and says so (onDidReconnect).
    if (now === this.source) return;
    for (const s of this.sourceSubs) s.dispose();
    this.sourceSubs = [];
    this.source = undefined;
    for (const w of this.watches.values()) {
      w.server?.dispose();
      w.server = undefined;
    }
    if (now) this.useSource(now);
    for (const w of this.watches.values()) this.serverWatch(w);
    this.afterGap();
  }

  private useSource(now: WatchSource): void {
    this.source = now;
    this.sourceSubs.push(
      now.onDidChange((e) => this.onServerChange(e)),
      now.onDidReconnect(() => this.afterGap()),
    );
  }

  private serverWatch(w: TrackedWatch): void {
    const source = this.source ?? this.adoptSource();
    if (!source?.supported) {
      this.deps.log?.(
        `watching ${w.path}${w.recursive ? ' and below' : ''} by polling (${source ? 'the executor has no file watches' : 'not connected yet'})`,
      );
      return;
    }
    this.deps.log?.(`watching ${w.path}${w.recursive ? ' and below' : ''} on the executor`);
    w.server = source.watch({ path: w.path, recursive: w.recursive, ...(w.excludes.length > 0 ? { excludes: w.excludes } : {}) });
    // Covered once answered: polling leaves it out from then on (and polls it if the server refused or truncated).
    void w.server.ready.then(() => this.poller.schedule());
  }

  /** The first watch may come before any `connected()`: take the current client's watches if there is one. */
  private adoptSource(): WatchSource | undefined {
    const now = this.deps.source();
    if (now) this.useSource(now);
    return now;
  }

  private onServerChange(e: FsWatchEvent): void {
    if (e.overflow) {
      this.deps.log?.(`${e.watch.request.path}: the executor reported too many changes at once; looking at it again`);
      void this.poller.rescan(e.watch.request.path).catch(() => undefined);
      return;
    }
    const changes = e.changes.map((c) => ({ type: c.type, path: c.path }));
    this.poller.learnt(changes);
    this.fire(changes);
  }

  private afterGap(): void {
    // After the watches are answered: events from then on come from the server.
    const ready = [...this.watches.values()].map((w) => w.server?.ready ?? Promise.resolve());
    void Promise.all(ready)
      .then(() => this.poller.rescan())
      .catch(() => undefined);
    this.poller.schedule();
  }

  private fire(changes: FileChange[]): void {
    if (this.disposed || changes.length === 0) return;
    const unique = [...new Map(changes.map((c) => [`${c.type} ${c.path}`, c])).values()];
    this.changes.fire(unique);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const s of this.sourceSubs) s.dispose();
    for (const w of this.watches.values()) w.server?.dispose();
    this.watches.clear();
    this.poller.dispose();
    this.changes.dispose();
  }
}
