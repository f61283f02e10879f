import { chmodSync, lstatSync, mkdtempSync, renameSync, rmdirSync, rmSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SandboxUnavailableError } from './errors';
import { isPlaceholder } from './placeholders';
import { pathIdentity } from './prewarmStub';

/*
 * A carve-out inside a writable root (`.git`, `.vscode`, `.codex`, a read or deny entry) is a mount
 * on a path of the host, and a mount lives on its directory entry: that entry, or a folder above
 * it, removed or renamed on the host (by the user, or by a command run without the sandbox) takes
 * the mount along in every running sandbox, and the path is the command's to write (or, for a file
 * replaced on the host, to read). Measured before this guard: a sandboxed command that waited for
 * the `.codex` stub to go made `.codex/config.toml` on the host. (The command cannot do the same
 * from inside: every folder between a writable root and a carve-out is a mount point there, which
 * refuses a rename, see `pinnedFolders` in ./layout.ts.)
 *
 * Nothing in the kernel keeps the mount (a mount locked into a nested namespace is detached too,
 * measured), so a running sandbox is watched instead: an inotify watch on every folder from the
 * writable root down to each carve-out, and the identity (device, inode, birth time) of every
 * entry on that way, checked on each event naming one, and every 2 s (libuv drops inotify's queue
 * overflow without a word). The first change stops the sandbox (`onBreach`). A loop waiting for the
 * path still wins that race (measured), so once the sandbox has ended, the first entry on the way
 * to a read-only carve-out that is not what it was is moved aside (`quarantine`): a `.git/config`
 * or `.vscode/tasks.json` left there would run later as the user.
 */

/** A path whose mount the running sandbox relies on. */
export interface CarveOut {
  path: string;
  /** The writable root it lies in (its folders below the root are watched too). */
  root: string;
  /** The sandbox hides it (a deny entry); else it keeps it read-only. */
  hidden: boolean;
  /**
   * Kept read-only (`.git`, `.vscode`, `.codex`, a read entry): after a breach, what stands on its
   * way may be the command's, so it is moved aside. (What a hidden path holds after a breach is
   * left where it is: the command could at most have put its own content at a path it cannot read.)
   */
  quarantine: boolean;
}

export interface CarveOutBreach {
  /** The carve-out whose mount went. */
  path: string;
  /** The entry that changed: the carve-out itself, or a folder above it. */
  changed: string;
  hidden: boolean;
  /** `missing`: removed or renamed away; `replaced`: something else is there now; `unwatched`: its watch failed. */
  found: 'missing' | 'replaced' | 'unwatched';
}

type Listener = (name: string | null) => void;
/** One watch per folder, shared by every sandbox with a carve-out on its way. */
const folders = new Map<string, { watcher: FSWatcher; listeners: Set<Listener> }>();

function tell(listeners: Set<Listener>, name: string | null): void {
  for (const l of [...listeners]) {
    try {
      l(name);
    } catch {
      // one sandbox's trouble must not keep the others from hearing
    }
  }
}

/** Calls `listener` with the name of each entry of `dir` that changes (null: the watch failed); throws when `dir` cannot be watched. */
function listen(dir: string, listener: Listener): () => void {
  let entry = folders.get(dir);
  if (!entry) {
    const watcher = watch(dir, { persistent: false });
    const listeners = new Set<Listener>();
    watcher.on('change', (_type, name) => tell(listeners, typeof name === 'string' ? name : ''));
    watcher.on('error', () => {
      if (folders.get(dir)?.watcher === watcher) folders.delete(dir);
      tell(listeners, null);
    });
    folders.set(dir, (entry = { watcher, listeners }));
  }
  entry.listeners.add(listener);
  const own = entry;
  return () => {
    own.listeners.delete(listener);
    if (own.listeners.size > 0) return;
    own.watcher.close();
    if (folders.get(dir) === own) folders.delete(dir);
  };
}

/** The identity of `p` itself (not followed); undefined when nothing (readable) is there: not what was mounted on. */
function identity(p: string): string | undefined {
  return pathIdentity(p) ?? undefined;
}

function checkQuietly(g: CarveOutGuard): void {
  try {
    g.checkAll();
  } catch {
    // one sandbox's trouble must not keep the others from being looked at
  }
}

/** The entries from just below `root` down to `path`. */
function wayDown(root: string, path: string): string[] {
  const way: string[] = [];
  for (let p = path; p !== root && p !== dirname(p); p = dirname(p)) way.unshift(p);
  return way;
}

/** Folders watched now (tests: every guard disposed leaves none). */
export function watchedCarveOutFolders(): number {
  return folders.size;
}

/**
 * Every live guard, looked at every 2 s: an event inotify dropped is not a change missed for the
 * rest of a run, and a folder missing when the guard was made (not watched) is looked at too.
 */
const live = new Set<CarveOutGuard>();
let sweep: NodeJS.Timeout | undefined;
const SWEEP_MS = 2000;

/**
 * Watches `carveOuts` from now on: the identities now are the ones the sandbox's mounts hold.
 * `onBreach` is called once, for the first change. A folder that cannot be watched (no inotify
 * watch left) throws `SandboxUnavailableError`: a sandbox that cannot be guarded is not run.
 */
export class CarveOutGuard {
  /** The identity of every entry on the way to a carve-out, taken when the guard was made. */
  private readonly ids = new Map<string, string | undefined>();
  private readonly ways = new Map<CarveOut, string[]>();
  private readonly stops: Array<() => void> = [];
  private breach: CarveOutBreach | undefined;
  private onBreach: ((b: CarveOutBreach) => void) | undefined;
  private disposed = false;

  constructor(
    private readonly carveOuts: CarveOut[],
    onBreach: (b: CarveOutBreach) => void,
  ) {
    this.onBreach = onBreach;
    // Who cares about which name in which folder.
    const interest = new Map<string, Map<string, CarveOut[]>>();
    for (const c of carveOuts) {
      const way = wayDown(c.root, c.path);
      this.ways.set(c, way);
      for (const p of way) {
        const names = interest.get(dirname(p)) ?? new Map<string, CarveOut[]>();
        names.set(basename(p), [...(names.get(basename(p)) ?? []), c]);
        interest.set(dirname(p), names);
      }
    }
    for (const [dir, names] of interest) {
      try {
        this.stops.push(
          listen(dir, (name) => {
            if (name === null) return this.report({ ...this.first(names), found: 'unwatched', changed: dir });
            if (name === '')
              names.forEach((list) => this.check(list)); // no name given: any of them
            else if (names.has(name)) this.check(names.get(name)!);
          }),
        );
      } catch (e) {
        // A folder that is not there holds nothing to protect yet (a deny entry below a missing
        // folder): what the command makes there is its own, and a later look still compares.
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        this.dispose();
        const c = this.first(names);
        const why = code === 'ENOSPC' ? 'no inotify watch is left (fs.inotify.max_user_watches)' : (e as Error).message;
        throw new SandboxUnavailableError(
          `the sandbox keeps ${c.path} ${c.hidden ? 'hidden' : 'read-only'} only while it and the folders above it stay on the host, and ${dir} cannot be watched for that: ${why}.`,
        );
      }
    }
    // Identities after the watches: a change from here on is seen.
    for (const way of this.ways.values()) for (const p of way) this.ids.set(p, identity(p));
    live.add(this);
    sweep ??= setInterval(() => live.forEach(checkQuietly), SWEEP_MS).unref();
  }

  private first(names: Map<string, CarveOut[]>): { path: string; hidden: boolean } {
    const c = [...names.values()][0]![0]!;
    return { path: c.path, hidden: c.hidden };
  }

  /** The breach seen, if any. */
  get breached(): CarveOutBreach | undefined {
    return this.breach;
  }

  /** Checks every carve-out now, without waiting for the watch (the sandbox ended: what changed before is to be seen now). */
  checkAll(): void {
    this.check(this.carveOuts);
  }

  private check(list: CarveOut[]): void {
    if (this.breach || this.disposed) return;
    for (const c of list) {
      const changed = this.firstChanged(c);
      if (changed === undefined) continue;
      return this.report({ path: c.path, changed, hidden: c.hidden, found: identity(changed) === undefined ? 'missing' : 'replaced' });
    }
  }

  /**
   * The first entry on the way to `c` that is not what it was, if any. One that was missing when
   * the guard was made is taken as it is the first time it is seen: bwrap makes the folders a mount
   * point needs (a deny entry below a missing folder), and nothing was mounted on them before.
   */
  private firstChanged(c: CarveOut): string | undefined {
    return this.ways.get(c)!.find((p) => {
      const now = identity(p);
      if (this.ids.get(p) === undefined && now !== undefined && !this.breach) this.ids.set(p, now);
      return now !== this.ids.get(p);
    });
  }

  private report(b: CarveOutBreach): void {
    if (this.breach || this.disposed) return;
    this.breach = b;
    const cb = this.onBreach;
    this.onBreach = undefined;
    cb?.(b);
  }

  /**
   * After a breach, once the sandbox has ended: for each read-only carve-out, the first entry on
   * its way that is not what it was (and is not a placeholder stub made again) is moved into
   * a new folder `<entry>.exec-bridge-quarantine-XXXXXX` beside it (a name the command cannot
   * guess ahead). A parent the command made unwritable is made writable for the move; what cannot
   * be moved even so is removed, so that nothing the command may have made stays where it would
   * run. Returns what happened to each: `[entry, where it went]`; `''` when it was removed instead,
   * `null` when it could be neither moved nor removed.
   */
  quarantine(): Array<[string, string | null]> {
    if (!this.breach) return [];
    const done: Array<[string, string | null]> = [];
    for (const c of this.carveOuts) {
      if (!c.quarantine) continue;
      const changed = this.firstChanged(c);
      if (changed === undefined || identity(changed) === undefined || isPlaceholder(changed)) continue;
      if (done.some(([from]) => from === changed)) continue;
      done.push([changed, moveAside(changed)]);
    }
    return done;
  }

  dispose(): void {
    this.disposed = true;
    this.onBreach = undefined;
    live.delete(this);
    if (live.size === 0 && sweep) {
      clearInterval(sweep);
      sweep = undefined;
    }
    for (const stop of this.stops.splice(0)) stop();
  }
}

/** Moves `p` into a fresh folder beside it: where it went; '' when it had to be removed instead, null when neither worked. */
function moveAside(p: string): string | null {
  const parent = dirname(p);
  for (let attempt = 0; attempt < 2; attempt++) {
    let box: string | undefined;
    try {
      box = mkdtempSync(`${p}.exec-bridge-quarantine-`);
      const to = join(box, basename(p));
      renameSync(p, to);
      return to;
    } catch (e) {
      if (box) rmdirQuietly(box);
      const code = (e as NodeJS.ErrnoException).code;
      if (attempt > 0 || (code !== 'EACCES' && code !== 'EPERM')) break;
      try {
        chmodSync(parent, lstatSync(parent).mode | 0o700); // the command may have taken our write access away
      } catch {
        break;
      }
    }
  }
  try {
    rmSync(p, { recursive: true, force: true });
    return '';
  } catch {
    return null;
  }
}

function rmdirQuietly(p: string): void {
  try {
    rmdirSync(p);
  } catch {
    // not empty after all, or gone
  }
}
