import { watch as fsWatch, type FSWatcher } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FS_CHANGED } from '../protocol';
import type { FsChange, FsChangedNotification, FsChangeType, FsWatchLimits, FsWatchParams, FsWatchResult } from '../protocol';
import { RpcError, type Router } from '../rpc';
import { systemClock, type Clock, type TimerHandle } from '../util';
import { io, isMissing, resolveFor, toPath } from './fsPaths';
import { FsSandbox } from './fsSandbox';
import { uriFromPath } from './uri';

/*
 * `execBridge/fsWatch` (ours; docs/protocol-extensions.md "File watches"): change events for a file,
 * a directory, or a directory tree, to the connection that asked. Every watched directory is one
 * inotify (kqueue, …) watch through `fs.watch`, so the bounds below are what the OS spends; events
 * of one watch are gathered for `coalesceMs` and sent as one notification, their kinds decided
 * then by a stat (what the path *is* after the burst, not each step of it).
 */

export const DEFAULT_FS_WATCH_LIMITS: FsWatchLimits = { maxWatches: 256, maxDirectories: 4096, coalesceMs: 100, maxChanges: 1000 };
/** Directories watched by every connection of the server together (the user's inotify watches are shared with everything else). */
export const SERVER_WATCH_DIRECTORIES = 32_768;
const MAX_DEPTH = 64;

/** What a raw OS event says: an entry appeared, went or was replaced (`rename`), or its content changed (`change`). */
export type RawEvent = 'rename' | 'change';

/**
 * Gathers one watch's raw events: the first starts a timer of `coalesceMs` (not restarted by the
 * next, so a steady stream still flushes every `coalesceMs`); at the flush each path's kind is
 * decided by `resolve` (a stat). Beyond `maxChanges` distinct paths in one window the rest are
 * dropped and the flush says `overflow`.
 */
export class ChangeCoalescer {
  private pending = new Map<string, RawEvent>();
  private overflow = false;
  private timer: TimerHandle | undefined;
  private flushing: Promise<void> | undefined;
  private disposed = false;

  constructor(
    private readonly limits: Pick<FsWatchLimits, 'coalesceMs' | 'maxChanges'>,
    /** The kind of change at `path` now, or undefined to drop it (e.g. a path the sandbox hides). */
    private readonly resolve: (path: string, raw: RawEvent) => Promise<FsChangeType | undefined>,
    private readonly emit: (changes: FsChange[], overflow: boolean) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  add(path: string, raw: RawEvent): void {
    if (this.disposed) return;
    if (!this.overflow) {
      // A rename says more than a change (the entry may be new or gone): it wins.
      if (this.pending.get(path) !== 'rename') {
        if (!this.pending.has(path) && this.pending.size >= this.limits.maxChanges) {
          this.overflow = true;
          this.pending.clear();
        } else this.pending.set(path, raw);
      }
    }
    this.schedule();
  }

  /** The OS lost events (or the watch cannot say which): the client should look again. */
  addOverflow(): void {
    if (this.disposed) return;
    this.overflow = true;
    this.pending.clear();
    this.schedule();
  }

  private schedule(): void {
    // During a flush, new events wait for the next window (scheduled when that flush ends).
    if (this.timer || this.flushing) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if (this.pending.size > 0 || this.overflow) this.schedule();
      });
    }, this.limits.coalesceMs);
    this.timer.unref?.();
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    const overflow = this.overflow;
    this.pending = new Map();
    this.overflow = false;
    if (overflow) {
      if (!this.disposed) this.emit([], true);
      return;
    }
    const changes: FsChange[] = [];
    for (const [path, raw] of batch) {
      const type = await this.resolve(path, raw).catch(() => undefined);
      if (type) changes.push({ type, path });
    }
    if (changes.length > 0 && !this.disposed) this.emit(changes, false);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }
}

/** Whether the directory at relative path `rel` (from the watch's root) matches one of `excludes` (names, or `a/*\/b` tails). */
export function isExcluded(rel: string, excludes: readonly string[]): boolean {
  if (excludes.length === 0 || rel === '') return false;
  const segments = rel.split('/');
  for (const pattern of excludes) {
    const want = pattern.split('/').filter((s) => s !== '');
    if (want.length === 0 || want.length > segments.length) continue;
    const tail = segments.slice(segments.length - want.length);
    if (want.every((w, i) => w === '*' || w === tail[i])) return true;
  }
  return false;
}

/** Directories watched, shared by the connections of one server. */
export class WatchBudget {
  private used = 0;
  constructor(readonly limit: number = SERVER_WATCH_DIRECTORIES) {}
  take(): boolean {
    if (this.used >= this.limit) return false;
    this.used++;
    return true;
  }
  give(n = 1): void {
    this.used = Math.max(0, this.used - n);
  }
  get inUse(): number {
    return this.used;
  }
}

interface WatchedDir {
  /** The path the client sees (below the watch's path as given). */
  reported: string;
  real: string;
  watcher: FSWatcher;
}

/** One `execBridge/fsWatch`. */
class Watch {
  readonly dirs = new Map<string, WatchedDir>();
  truncated = false;
  private readonly coalescer: ChangeCoalescer;
  private disposed = false;

  constructor(
    readonly id: string,
    /** The watched path as the client gave it. */
    readonly root: string,
    readonly realRoot: string,
    readonly recursive: boolean,
    /** Watching a file: its name in `root`'s directory (the directory is watched, so a replaced file keeps being seen). */
    readonly file: string | undefined,
    private readonly excludes: readonly string[],
    private readonly sb: FsSandbox | undefined,
    private readonly owner: ConnectionWatches,
    limits: FsWatchLimits,
    clock: Clock,
  ) {
    this.coalescer = new ChangeCoalescer(
      limits,
      (path, raw) => this.kindOf(path, raw),
      (changes, overflow) => this.owner.send(this.id, changes, overflow),
      clock,
    );
  }

  /** Watches `realDir` (reported as `reported`) and, when recursive, the tree below it, as far as the budget goes. */
  async addTree(reported: string, realDir: string, depth: number): Promise<void> {
    const queue: Array<{ reported: string; real: string; depth: number }> = [{ reported, real: realDir, depth }];
    for (let next = queue.shift(); next && !this.disposed; next = queue.shift()) {
      if (this.dirs.has(next.reported)) continue;
      if (!this.owner.takeDirectory()) {
        this.truncated = true;
        return;
      }
      let watcher: FSWatcher;
      try {
        const dir = next.reported;
        watcher = fsWatch(next.real, { persistent: false }, (event, name) => this.onEvent(dir, event, name));
      } catch (e) {
        // Gone meanwhile: nothing to watch there. Out of OS watches (ENOSPC) or refused: not all is watched.
        this.owner.giveDirectories(1);
        if (!isMissing(e)) this.truncated = true;
        continue;
      }
      const entry: WatchedDir = { reported: next.reported, real: next.real, watcher };
      watcher.on('error', () => this.dropDir(entry.reported, true));
      this.dirs.set(next.reported, entry);
      if (!this.recursive || this.file !== undefined) continue;
      if (next.depth >= MAX_DEPTH) {
        this.truncated = true;
        continue;
      }
      let entries;
      try {
        entries = await fsp.readdir(next.real, { withFileTypes: true });
      } catch {
        continue;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const e of entries) {
        // Symlinked directories are not followed (no cycles, and nothing outside the tree).
        if (!e.isDirectory()) continue;
        const childReported = join(next.reported, e.name);
        if (isExcluded(this.relative(childReported), this.excludes)) continue;
        const childReal = join(next.real, e.name);
        if (this.sb && !canSee(this.sb, childReal)) continue;
        queue.push({ reported: childReported, real: childReal, depth: next.depth + 1 });
      }
    }
  }

  private relative(reported: string): string {
    return reported === this.root ? '' : reported.slice(this.root === '/' ? 1 : this.root.length + 1);
  }

  private onEvent(dir: string, event: string, name: string | Buffer | null): void {
    if (this.disposed) return;
    if (name === null) {
      // The OS did not say what changed (e.g. its queue overflowed).
      this.coalescer.addOverflow();
      return;
    }
    const child = typeof name === 'string' ? name : name.toString('utf8');
    const raw: RawEvent = event === 'change' ? 'change' : 'rename';
    if (this.file !== undefined) {
      if (child === this.file) this.coalescer.add(this.root, raw);
      return;
    }
    this.coalescer.add(join(dir, child), raw);
    // A watched directory that itself went away reports its own name (inotify IN_DELETE_SELF).
    if (raw === 'rename' && child === basename(dir)) this.coalescer.add(dir, 'rename');
  }

  /** The kind of change at `path` after a burst; watched directories follow what they find. */
  private async kindOf(path: string, raw: RawEvent): Promise<FsChangeType | undefined> {
    let real: string | undefined;
    if (path === this.root) real = this.realRoot;
    else {
      const parent = this.dirs.get(dirname(path));
      real = parent ? join(parent.real, basename(path)) : this.dirs.get(path)?.real;
    }
    if (real === undefined) return undefined;
    if (this.sb && !canSee(this.sb, real)) return undefined;
    let stat;
    try {
      stat = await fsp.lstat(real);
    } catch (e) {
      if (!isMissing(e)) return undefined;
    }
    if (!stat) {
      if (this.dirs.has(path)) this.dropTree(path);
      if (path === this.root) return 'deleted';
      // Its directory went too: that directory's deletion says it (and a gone directory's own event names a child it never had).
      if (!(await exists(dirname(real)))) return undefined;
      return 'deleted';
    }
    if (stat.isDirectory() && this.recursive && this.file === undefined && path !== this.root && !this.dirs.has(path)) {
      if (!isExcluded(this.relative(path), this.excludes)) await this.addTree(path, real, this.depthOf(path));
    }
    return raw === 'change' ? 'changed' : 'created';
  }

  private depthOf(reported: string): number {
    const rel = this.relative(reported);
    return rel === '' ? 0 : rel.split('/').length;
  }

  private dropDir(reported: string, gone: boolean): void {
    const entry = this.dirs.get(reported);
    if (!entry) return;
    entry.watcher.close();
    this.dirs.delete(reported);
    this.owner.giveDirectories(1);
    if (gone && reported === this.root) this.coalescer.add(reported, 'rename');
  }

  /** A directory went away: its watches and those below it. */
  private dropTree(reported: string): void {
    for (const key of [...this.dirs.keys()])
      if (key === reported || key.startsWith(reported === '/' ? '/' : `${reported}/`)) this.dropDir(key, false);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.coalescer.dispose();
    for (const d of this.dirs.values()) d.watcher.close();
    this.owner.giveDirectories(this.dirs.size);
    this.dirs.clear();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await fsp.lstat(path);
    return true;
  } catch {
    return false;
  }
}

function canSee(sb: FsSandbox, real: string): boolean {
  const a = sb.accessAt(real);
  return a === 'read' || a === 'write';
}

/** The watches of one connection: bounded, ended with it. */
export class ConnectionWatches {
  private readonly watches = new Map<string, Watch>();
  private directories = 0;
  private disposed = false;

  constructor(
    private readonly notify: (method: string, params: FsChangedNotification) => void,
    readonly limits: FsWatchLimits = DEFAULT_FS_WATCH_LIMITS,
    private readonly budget: WatchBudget = new WatchBudget(),
    private readonly clock: Clock = systemClock,
  ) {}

  get watchCount(): number {
    return this.watches.size;
  }
  get directoryCount(): number {
    return this.directories;
  }

  takeDirectory(): boolean {
    if (this.disposed || this.directories >= this.limits.maxDirectories || !this.budget.take()) return false;
    this.directories++;
    return true;
  }
  giveDirectories(n: number): void {
    this.directories -= n;
    this.budget.give(n);
  }

  send(watchId: string, changes: FsChange[], overflow: boolean): void {
    if (this.disposed || !this.watches.has(watchId)) return;
    const params: FsChangedNotification = {
      watchId,
      changes: changes.map((c) => ({ type: c.type, path: uriFromPath(c.path) })),
      ...(overflow ? { overflow: true } : {}),
    };
    this.notify(FS_CHANGED, params);
  }

  async add(params: FsWatchParams): Promise<FsWatchResult> {
    if (this.watches.has(params.watchId)) throw RpcError.invalidRequest(`watch id ${params.watchId} is already in use on this connection`);
    if (this.watches.size >= this.limits.maxWatches)
      throw RpcError.invalidRequest(`too many file watches on this connection (limit ${this.limits.maxWatches}); end some first`);
    const path = toPath(params.path);
    const sb = FsSandbox.fromRequest(params.sandbox);
    const { real, isDirectory } = await io(async () => {
      const r = sb ? await resolveFor(sb, path, true) : await fsp.realpath(path);
      sb?.checkRead(r);
      return { real: r, isDirectory: (await fsp.stat(r)).isDirectory() };
    });
    // A file is watched through its (real) directory, so that a file replaced by a rename is still seen.
    const file = isDirectory ? undefined : basename(real);
    const watch = new Watch(params.watchId, path, real, params.recursive, file, params.excludes ?? [], sb, this, this.limits, this.clock);
    this.watches.set(params.watchId, watch);
    try {
      if (file !== undefined) await watch.addTree(dirname(real), dirname(real), 0);
      else await watch.addTree(path, real, 0);
    } catch (e) {
      this.remove(params.watchId);
      throw e;
    }
    if (this.disposed) {
      watch.dispose();
      throw RpcError.internal('connection closed');
    }
    return { watchId: params.watchId, directories: file !== undefined ? 0 : watch.dirs.size, truncated: watch.truncated };
  }

  remove(watchId: string): void {
    this.watches.get(watchId)?.dispose();
    this.watches.delete(watchId);
  }

  dispose(): void {
    this.disposed = true;
    for (const w of this.watches.values()) w.dispose();
    this.watches.clear();
  }
}

/** What the watch methods need of a request: the connection's watches (undefined: not negotiated). */
export interface FsWatchContext {
  fsWatches?: ConnectionWatches;
}

export function registerFsWatchMethods<Ctx extends FsWatchContext>(router: Router<Ctx>): void {
  const watches = (ctx: Ctx): ConnectionWatches => {
    if (!ctx.fsWatches)
      throw RpcError.invalidRequest('file watches are not enabled on this connection (initialize with execBridgeFsWatch: true)');
    return ctx.fsWatches;
  };
  router.on('execBridge/fsWatch', (params, ctx) => watches(ctx).add(params));
  router.on('execBridge/fsUnwatch', (params, ctx) => {
    watches(ctx).remove(params.watchId);
    return {};
  });
}
