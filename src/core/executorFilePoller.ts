import { posix } from 'node:path';
import { systemClock, Emitter, type Clock, type TimerHandle, type Event } from '../util';
import { executorFilePath, type ExecutorFiles, type FileStat } from './executorFiles';
import { classifyFsError } from './fsErrors';

export type FileChangeType = 'created' | 'changed' | 'deleted';
export interface FileChange {
  type: FileChangeType;
  path: string;
}

export interface PollLimits {
  /** Between the end of one round and the start of the next. */
  intervalMs: number;
  /** Watched paths polled (the oldest watch beyond this is not polled). */
  maxWatched: number;
  /** Files read or written through the provider that are polled too (most recent first): open editors. */
  maxRecentFiles: number;
  /** Directories listed through the provider that are polled too (most recent first): the Explorer's expanded folders. */
  maxListedDirs: number;
  /** Entries of a directory compared per round (a bigger listing only compares the first ones). */
  maxEntries: number;
  /** Paths looked at in one round (a stat each, a directory also a listing); the next round goes on from there. */
  maxPerRound: number;
}

export const DEFAULT_POLL_LIMITS: PollLimits = {
  intervalMs: 2000,
  maxWatched: 64,
  maxRecentFiles: 100,
  maxListedDirs: 64,
  maxEntries: 2000,
  maxPerRound: 64,
};

type Snapshot = { kind: 'missing' } | { kind: 'file'; mtimeMs: number; size: number } | { kind: 'directory'; names: Set<string> };

/** Whether `p` is `dir` or below it. */
export const within = (p: string, dir: string) => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`);

/** The calls polling makes (ExecutorFiles, or a fake in tests). */
export type PolledFiles = Pick<ExecutorFiles, 'stat' | 'readDirectory'>;

/**
 * Change detection by polling, with fixed bounds (README "Executor files"), for what no server
 * watch covers: every `intervalMs` after the previous round ended, one round looks at up to
 * `maxPerRound` of the paths below (a file's mtime and size; a directory's names, not recursive),
 * going on where the last round stopped, and compares each with what was last seen: watched paths,
 * the files most recently read or written (open editors), the directories most recently listed
 * (expanded in the Explorer). A round is skipped while `canPoll()` is false (not connected);
 * `skip(path)` leaves out what a server watch reports.
 */
export class ExecutorFilePoller {
  private readonly changes = new Emitter<FileChange[]>();
  readonly onDidChange: Event<FileChange[]> = this.changes.event;
  private readonly watched = new Map<string, number>();
  private readonly recent: string[] = [];
  private readonly listedDirs: string[] = [];
  private readonly last = new Map<string, Snapshot>();
  private cursor = 0;
  private timer: TimerHandle | undefined;
  private polling = false;
  private disposed = false;

  constructor(
    private readonly files: PolledFiles,
    private readonly canPoll: () => boolean,
    private readonly limits: PollLimits = DEFAULT_POLL_LIMITS,
    private readonly clock: Clock = systemClock,
    /** Paths a server watch reports: not polled (but still remembered, for a `rescan`). */
    private readonly skip: (path: string) => boolean = () => false,
  ) {}

  /** Starts polling `path`; the returned function stops it (watches are counted, like VS Code's). */
  watch(path: string): () => void {
    const p = executorFilePath(path);
    this.watched.set(p, (this.watched.get(p) ?? 0) + 1);
    this.schedule();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = (this.watched.get(p) ?? 1) - 1;
      if (n > 0) this.watched.set(p, n);
      else {
        this.watched.delete(p);
        this.forgetUnused(p);
      }
    };
  }

  /** A file was read or written through the provider: poll it too, and take its state as known. */
  touched(path: string, stat?: FileStat): void {
    const p = executorFilePath(path);
    this.remember(this.recent, p, this.limits.maxRecentFiles);
    if (stat?.kind === 'file') this.last.set(p, { kind: 'file', mtimeMs: stat.mtimeMs, size: stat.size });
    this.schedule();
  }

  /** A directory was listed through the provider (the Explorer expanded it): poll it too; `names` is what VS Code now shows. */
  listed(path: string, names: readonly string[]): void {
    const p = executorFilePath(path);
    this.remember(this.listedDirs, p, this.limits.maxListedDirs);
    this.last.set(p, { kind: 'directory', names: new Set(names.slice(0, this.limits.maxEntries)) });
    this.schedule();
  }

  /** Changes learnt elsewhere (a server watch): what was last seen follows them, so a later round does not report them again. */
  learnt(changes: readonly FileChange[]): void {
    for (const c of changes) {
      const parent = this.last.get(posix.dirname(c.path));
      const name = posix.basename(c.path);
      if (parent?.kind === 'directory') {
        if (c.type === 'deleted') parent.names.delete(name);
        else if (c.type === 'created' && parent.names.size < this.limits.maxEntries) parent.names.add(name);
      }
      if (c.type === 'deleted') {
        if (this.last.has(c.path)) this.last.set(c.path, { kind: 'missing' });
      } else if (this.last.get(c.path)?.kind !== 'directory') {
        // Unknown until it is read again (the provider's readFile/stat tells).
        this.last.delete(c.path);
      }
    }
  }

  private remember(list: string[], p: string, max: number): void {
    const i = list.indexOf(p);
    if (i >= 0) list.splice(i, 1);
    list.unshift(p);
    for (const gone of list.splice(max)) this.forgetUnused(gone);
  }

  private forgetUnused(p: string): void {
    if (!this.watched.has(p) && !this.recent.includes(p) && !this.listedDirs.includes(p)) this.last.delete(p);
  }

  /** Every path polling knows of (bounded), skipped ones included. */
  private allTargets(): string[] {
    const watched = [...this.watched.keys()].slice(-this.limits.maxWatched);
    return [...new Set([...watched, ...this.recent, ...this.listedDirs])];
  }

  /** The paths rounds look at (bounded; without those a server watch reports). */
  targets(): string[] {
    return this.allTargets().filter((p) => !this.skip(p));
  }

  /** One round now (at most `maxPerRound` paths, going on from the last); resolves with what changed (also fired). */
  async pollOnce(): Promise<FileChange[]> {
    const all = this.targets();
    if (all.length === 0) return [];
    const n = Math.min(all.length, this.limits.maxPerRound);
    const start = this.cursor % all.length;
    const round = [...all.slice(start), ...all.slice(0, start)].slice(0, n);
    this.cursor = (start + n) % all.length;
    return this.look(round);
  }

  /**
   * Looks at every known path (below `under`) now, watched by the server or not, and reports what
   * differs from what was last seen: after a server said it lost track (overflow) or a new
   * connection (what changed in between was not reported).
   */
  rescan(under?: string): Promise<FileChange[]> {
    const root = under === undefined ? undefined : executorFilePath(under);
    return this.look(this.allTargets().filter((p) => root === undefined || within(p, root)));
  }

  private async look(paths: string[]): Promise<FileChange[]> {
    const out: FileChange[] = [];
    for (const p of paths) {
      if (this.disposed) break;
      const now = await this.snapshot(p);
      if (now === undefined) continue;
      const before = this.last.get(p);
      this.last.set(p, now);
      if (before === undefined) continue;
      out.push(...diff(p, before, now, this.limits.maxEntries));
    }
    // A file both watched through its folder and polled itself is reported once.
    const unique = [...new Map(out.map((c) => [`${c.type} ${c.path}`, c])).values()];
    if (unique.length > 0 && !this.disposed) this.changes.fire(unique);
    return unique;
  }

  private async snapshot(p: string): Promise<Snapshot | undefined> {
    try {
      const s = await this.files.stat(p);
      if (s.kind !== 'directory') return { kind: 'file', mtimeMs: s.mtimeMs, size: s.size };
      const entries = await this.files.readDirectory(p);
      return { kind: 'directory', names: new Set(entries.slice(0, this.limits.maxEntries).map((e) => e.fileName)) };
    } catch (e) {
      // Unavailable (recovering) or another error: no news this round.
      return classifyFsError(e).code === 'FileNotFound' ? { kind: 'missing' } : undefined;
    }
  }

  /** Polling starts (again) if there is something to poll: after a watch, a touch, a listing, or when coverage changed. */
  schedule(): void {
    if (this.disposed || this.timer || this.polling) return;
    if (this.watched.size === 0 && this.recent.length === 0 && this.listedDirs.length === 0) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      if (!this.canPoll() || this.targets().length === 0) return this.schedule();
      this.polling = true;
      void this.pollOnce()
        .catch(() => undefined)
        .finally(() => {
          this.polling = false;
          this.schedule();
        });
    }, this.limits.intervalMs);
    this.timer.unref?.();
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.changes.dispose();
  }
}

function diff(p: string, before: Snapshot, now: Snapshot, maxEntries: number): FileChange[] {
  if (before.kind === 'missing') return now.kind === 'missing' ? [] : [{ type: 'created', path: p }];
  if (now.kind === 'missing') return [{ type: 'deleted', path: p }];
  if (before.kind === 'file' && now.kind === 'file')
    return before.mtimeMs !== now.mtimeMs || before.size !== now.size ? [{ type: 'changed', path: p }] : [];
  if (before.kind === 'directory' && now.kind === 'directory') {
    const out: FileChange[] = [];
    const child = (name: string) => (p === '/' ? `/${name}` : `${p}/${name}`);
    for (const n of now.names) if (!before.names.has(n)) out.push({ type: 'created', path: child(n) });
    for (const n of before.names) if (!now.names.has(n)) out.push({ type: 'deleted', path: child(n) });
    if (out.length > maxEntries) return [{ type: 'changed', path: p }];
    return out;
  }
  return [{ type: 'changed', path: p }];
}
