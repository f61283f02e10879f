import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, rmdirSync, unlinkSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { orphanGuard } from '../orphanGuard';

/*
 * Placeholder stubs. A missing carve-out (`.git`, `.vscode`, `.codex`, a denied path) inside a
 * writable root is protected by mounting an empty read-only tmpfs at its path, and a mount needs
 * a directory there on the host. That directory must outlive every sandbox mounted on it: removed
 * on the host, its mount in a running sandbox is detached, and the command could then create the
 * protected path after all (measured). So each planner that uses a stub keeps a claim file in it
 * (`.exec-bridge-claim-<pid>-<id>`, hidden inside the sandbox by the tmpfs), and removes the
 * directory only with `rmdir`, which the kernel refuses while any other claim — another exec-server
 * on the same workspace — or anything real is in it. Claims of dead processes are swept, and the
 * server's orphan watchdog removes its claims and stubs when the server dies (SIGKILL included).
 */
const CLAIM_PREFIX = '.exec-bridge-claim-';
/**
 * Beside each stub we make: `<name>.exec-bridge-stub`, an empty file saying "the directory next to
 * me is a placeholder". Editors can hide both (the extension contributes `files.exclude` entries
 * with a `when` clause on it); it goes with the stub, and the moment anything but claims appears
 * in the stub (the user makes their own `.vscode/tasks.json` there while a command runs) it goes
 * on its own: from then on the folder is the user's, and nothing may hide it (`PlaceholderClaims.watchMarker`).
 */
export const STUB_MARKER_SUFFIX = '.exec-bridge-stub';

/**
 * Whether `p` is a real directory (not a link) holding claim files only: a placeholder, not (or no
 * longer) someone's folder. A link, or a claim-named folder, is not one: it can lead elsewhere.
 */
export function isPlaceholder(p: string): boolean {
  try {
    if (!lstatSync(p).isDirectory()) return false;
    return readdirSync(p).every((n) => n.startsWith(CLAIM_PREFIX) && lstatSync(join(p, n)).isFile());
  } catch {
    return false; // gone, or not a directory
  }
}

/** Drops the marker beside `p` unless `p` is still a placeholder; true when it did. */
function unmarkUnlessPlaceholder(p: string): boolean {
  if (isPlaceholder(p)) return false;
  unmark(p);
  return true;
}

/** Removes the stub at `p` if it is empty, with its marker; a stub someone put real content in keeps the content and loses the marker. */
function removeStubDir(p: string): void {
  try {
    rmdirSync(p); // only succeeds for an empty directory: never removes anything real, nor a stub another server still claims
  } catch {
    // Claimed by another (the marker stays with that stub), or made real by someone, or removed
    // by someone: then the marker must go, it would hide a real folder made there later.
    if (isPlaceholder(p)) return;
  }
  unmark(p);
}

function unmark(p: string): void {
  try {
    unlinkSync(p + STUB_MARKER_SUFFIX);
  } catch {
    // never made, or gone already
  }
}

/** The stubs one planner uses: how many of its sandboxes rely on each, and which it may remove. */
export class PlaceholderClaims {
  /** Placeholder stubs on the host for missing carve-outs that this planner claims, with their users. */
  private readonly stubs = new Map<string, number>();
  /** Stubs this planner made, or found claimed by another server: the last user removes them. */
  private readonly removable = new Set<string>();
  /** Claims the orphan watchdog cleans up if we die: path → whether it removes the directory too. */
  private readonly guarded = new Map<string, boolean>();
  /** The file that marks a stub as in use by this planner (see `claimStub`). */
  private readonly claimName = `${CLAIM_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`;
  /** Watches on the stubs this planner claims, for content the user puts in them (see `watchMarker`). */
  private readonly watches = new Map<string, FSWatcher>();

  /** One more sandbox relies on the stub at `p`. */
  retain(p: string): void {
    // Claimed on every use, not only the first: the directory (and our claim) may have been
    // deleted on the host meanwhile (a workspace removed and made again).
    if (claimStub(p, this.claimName)) this.removable.add(p);
    this.stubs.set(p, (this.stubs.get(p) ?? 0) + 1);
    this.guard(p, this.removable.has(p));
    if (this.removable.has(p)) this.watchMarker(p);
  }

  /**
   * While we claim a stub, its marker must not outlive the stub being a placeholder: a user who
   * makes `.vscode/tasks.json` while a command runs writes into the stub (the folder is there on
   * the host), and with the marker still beside it `files.exclude` would hide their folder until
   * the command ends — a shell runs for hours. So an inotify watch on the stub drops the marker as
   * soon as anything but claims is in it. The sandbox is unaffected: the command keeps its empty
   * read-only tmpfs at that path, it can neither see nor change what the user puts there.
   */
  private watchMarker(p: string): void {
    if (this.watches.has(p)) return;
    if (unmarkUnlessPlaceholder(p)) return;
    let w: FSWatcher;
    try {
      w = watch(p, { persistent: false });
    } catch {
      return; // gone already, or no inotify: the marker goes at release, as before
    }
    const stop = () => {
      if (this.watches.get(p) === w) this.watches.delete(p);
      w.close();
    };
    w.on('change', () => {
      if (unmarkUnlessPlaceholder(p)) stop();
    });
    w.on('error', stop);
    this.watches.set(p, w);
    // Content that arrived between the first look and the watch.
    if (unmarkUnlessPlaceholder(p)) stop();
  }

  /** Tells the watchdog about our claim at `p` (`removeDir`: we would remove the stub too), or forgets it. */
  private guard(p: string, removeDir: boolean | undefined): void {
    const was = this.guarded.get(p);
    if (was === removeDir) return;
    const claim = join(p, this.claimName);
    if (was !== undefined) orphanGuard.removeStub(claim, was);
    if (removeDir === undefined) this.guarded.delete(p);
    else {
      this.guarded.set(p, removeDir);
      orphanGuard.addStub(claim, removeDir);
    }
  }

  /** The last user here drops this planner's claim; the last claim anywhere removes the stub. */
  release(p: string): void {
    const n = (this.stubs.get(p) ?? 1) - 1;
    if (n > 0) {
      this.stubs.set(p, n);
      return;
    }
    this.stubs.delete(p);
    this.guard(p, undefined);
    this.watches.get(p)?.close();
    this.watches.delete(p);
    try {
      unlinkSync(join(p, this.claimName));
    } catch {
      // gone already
    }
    // An empty directory that was there before (not a stub of ours or another server's) stays.
    if (!this.removable.delete(p)) return;
    removeStubDir(p);
  }
}

/**
 * Puts our claim in the stub (making the directory if needed). True when the directory is a stub
 * (we made it, or another server's claim is in it); false for an empty directory that was already
 * there (someone's own, or one another server is removing this instant): used, but never removed.
 * A directory with anything but claims in it is the user's (a `.vscode` made in a stub while a
 * command ran, and a sandbox for the next start then built from that command's plan): false, and no
 * claim goes into it. No server removes a folder with content, so a claim protects nothing there,
 * and it made the user's own `rm -rf .vscode` fail ("Directory not empty") while it lasted.
 */
function claimStub(p: string, claimName: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    let stub: boolean;
    try {
      mkdirSync(p, { mode: 0o755 });
      stub = true;
      try {
        writeFileSync(p + STUB_MARKER_SUFFIX, '', { flag: 'wx', mode: 0o644 });
      } catch {
        // there already (another server's), or the parent refuses: only the hiding needs it
      }
    } catch {
      const names = safeReaddir(p);
      if (names.some((n) => !n.startsWith(CLAIM_PREFIX))) return false;
      stub = names.some((n) => n.startsWith(CLAIM_PREFIX) && n !== claimName);
    }
    try {
      writeFileSync(join(p, claimName), '', { flag: 'wx', mode: 0o600 });
      return stub;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return stub;
      if (code !== 'ENOENT') return false; // cannot claim (read-only, not a directory): bwrap reports what is wrong
      // removed between mkdir and claim by its last user elsewhere: make it again
    }
  }
  return false;
}

function safeReaddir(p: string): string[] {
  try {
    return readdirSync(p);
  } catch {
    return [];
  }
}

/** A directory holding only live claims (claims of dead processes are removed on the way). */
export function isClaimedStub(p: string): boolean {
  let names: string[];
  try {
    names = readdirSync(p);
  } catch {
    return false;
  }
  // Empty: someone's own, or a stub whose last user elsewhere is removing it right now. An empty
  // read-only tmpfs over it shows the same, and does not break if it vanishes before bwrap mounts.
  if (names.length === 0) return true;
  // Real content: a folder of the user's (perhaps made in a stub while a command ran). A marker
  // left beside it (its server died before it saw the content) must not keep hiding it.
  if (names.some((n) => !n.startsWith(CLAIM_PREFIX))) {
    unmarkUnlessPlaceholder(p);
    return false;
  }
  let live = 0;
  for (const name of names) {
    const pid = Number(name.slice(CLAIM_PREFIX.length).split('-')[0]);
    if (pidAlive(pid)) {
      live++;
      continue;
    }
    try {
      unlinkSync(join(p, name));
    } catch {
      // swept by someone else
    }
  }
  if (live === 0) {
    removeStubDir(p); // a stub left by a server that died: it was never anything real
  }
  return true;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
