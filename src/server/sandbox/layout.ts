import { mkdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { findNested, lstatOrNull, PROTECTED_NAMES } from './nestedScan';
import { depthOf, isWithin, type Access, type ResolvedPolicy } from './policy';

export { clearNestedScanCache, findNested, lastNestedScan, NESTED_SCAN, NESTED_SKIP, PROTECTED_NAMES } from './nestedScan';

/*
 * Step 2 of planning: a restricted-filesystem policy → an ordered list of mounts, looking at the
 * real filesystem (symlinks, what exists, `.git` pointer files). Mount order is the whole game:
 * a later mount on a deeper path wins, so mounts are sorted by depth, and for one path the
 * strongest access wins (deny > write > read; an explicit entry beats a built-in carve-out).
 */

/** What `minimal` makes readable when the root is not. */
export const MINIMAL_PATHS = ['/bin', '/sbin', '/usr', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

export type Mount =
  /** `path` writable (host path bound read-write). */
  /** `optional`: a pin (`pinnedFolders`); one that vanished before the mount holds nothing left to pin (`--bind-try`). */
  | { kind: 'bind'; path: string; optional?: true }
  /** `path` read-only. `optional`: a nested carve-out found by the scan; if it vanished before the mount, skip it (`--ro-bind-try`). */
  | { kind: 'ro-bind'; path: string; optional?: true }
  /** Missing protected path: an empty read-only directory is mounted there (its stub is ours to remove). */
  | { kind: 'placeholder'; path: string; mode: number }
  /** Existing directory hidden behind an empty, inaccessible tmpfs. */
  | { kind: 'deny-dir'; path: string }
  /** Existing file hidden: /dev/null bound over it on a nodev mount, so opening it fails with EACCES. */
  | { kind: 'deny-file'; path: string }
  /** Private, empty, writable tmpfs (writes vanish at exit). */
  | { kind: 'tmpfs'; path: string };

export interface Layout {
  /** Root of the sandbox: the host root read-only, read-write, or an empty root. */
  root: 'ro' | 'rw' | 'empty';
  mounts: Mount[];
  /** Real paths that are writable (for the denial heuristic and Seatbelt). */
  writableRoots: string[];
  /** Not writable although inside a writable root: carve-outs (existing or placeholders), read and deny entries. */
  protectedPaths: string[];
  /**
   * The symbolic links on the way to a `.git`/`.vscode`/`.codex` (the entry itself, and any link it
   * points through): the end is protected, but a link cannot be a mount point, and its folder may
   * be writable. Replaced, it would make the name the command's; the running sandbox's guard
   * watches them (./carveOutGuard.ts).
   */
  links?: string[];
  /** The folders bound onto themselves so that the command cannot rename them (`pinnedFolders`). */
  pins?: string[];
  /** How /tmp looks inside. */
  tmp: 'shared' | 'private' | 'read-only';
}

interface Candidate {
  path: string;
  access: Access | 'protect';
  /** Explicit entries beat built-in carve-outs at the same path. */
  explicit: boolean;
  scratch?: boolean;
  /** Found by the nested scan (exists; never a placeholder). */
  nested?: boolean;
}

function realpathOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/**
 * Real path of `p` when it exists; for a missing path, the real path of its deepest existing
 * ancestor joined with the rest (so a later comparison with real roots still works).
 */
export function realish(p: string): string {
  const r = realpathOrNull(p);
  if (r !== null) return r;
  const parent = dirname(p);
  if (parent === p) return p;
  return resolve(realish(parent), p.slice(parent.length + (parent.endsWith('/') ? 0 : 1)));
}

const STRENGTH: Record<Candidate['access'], number> = { read: 0, protect: 1, write: 2, deny: 3 };

/**
 * What the mounts are made from, one entry per real path: for one path the strongest access wins,
 * and an explicit entry beats a built-in carve-out.
 */
class Candidates {
  private readonly byPath = new Map<string, Candidate>();

  put(c: Candidate): void {
    const prev = this.byPath.get(c.path);
    if (!prev || (c.explicit && !prev.explicit) || (c.explicit === prev.explicit && STRENGTH[c.access] > STRENGTH[prev.access]))
      this.byPath.set(c.path, c);
  }
  get(path: string): Candidate | undefined {
    return this.byPath.get(path);
  }
  has(path: string): boolean {
    return this.byPath.has(path);
  }
  delete(path: string): void {
    this.byPath.delete(path);
  }
  all(): Candidate[] {
    return [...this.byPath.values()];
  }
  paths(where: (c: Candidate) => boolean): string[] {
    return this.all()
      .filter(where)
      .map((c) => c.path);
  }
  /** The writable real paths: "/" when the root is, then the write entries. */
  writable(root: Layout['root']): string[] {
    return [...(root === 'rw' ? ['/'] : []), ...this.paths((c) => c.access === 'write')];
  }
}

/**
 * `isStub` tells which existing directories are placeholders another running sandbox created: they
 * must stay placeholders (shared, removed by their last user), not become real carve-outs.
 */
export function computeLayout(
  policy: ResolvedPolicy,
  isStub: (path: string) => boolean = () => false,
  /** Directories the sandbox hides (private directories): the folders above them are pinned too. */
  hidden: readonly string[] = [],
): Layout {
  if (policy.fs === 'unrestricted') return { root: 'rw', mounts: [], writableRoots: ['/'], protectedPaths: [], tmp: 'shared' };

  const candidates = explicitCandidates(policy);
  const rootRule = candidates.get('/');
  const root: Layout['root'] = rootRule?.access === 'read' ? 'ro' : rootRule?.access === 'write' ? 'rw' : 'empty';
  candidates.delete('/');

  // Scratch roots (/tmp, $TMPDIR) get no carve-outs.
  const scratch = new Set(candidates.paths((c) => c.scratch === true));
  const links: string[] = [];
  addCarveOuts(candidates, candidates.writable(root), scratch, links);
  addNestedCarveOuts(candidates, candidates.writable(root), scratch, links);

  const writableRoots = candidates.writable(root);
  const underWritable = (p: string) => writableRoots.some((w) => isWithin(p, w));
  // A carve-out outside every writable area is read-only anyway: no mount needed.
  for (const c of candidates.all()) if (c.access === 'protect' && !underWritable(c.path)) candidates.delete(c.path);

  const tmp = tmpLayout(policy, root, candidates);
  const { mounts, protectedPaths, pins } = mountsFor(candidates, root, tmp, underWritable, isStub, [...links, ...hidden]);
  return { root, mounts, writableRoots, protectedPaths, tmp, ...(links.length ? { links } : {}), ...(pins?.length ? { pins } : {}) };
}

/** 1. Explicit rules on real paths; a missing read/write target is skipped (nothing to bind). */
function explicitCandidates(policy: ResolvedPolicy): Candidates {
  const candidates = new Candidates();
  for (const rule of policy.rules) {
    const real = realpathOrNull(rule.path);
    if (real === null) {
      if (rule.access === 'deny') candidates.put({ path: realish(rule.path), access: 'deny', explicit: true });
      continue;
    }
    candidates.put({ path: real, access: rule.access, explicit: true, ...(rule.scratch ? { scratch: true } : {}) });
  }
  return candidates;
}

/** 2. Built-in carve-outs inside every writable root but scratch ones, and the target of a `.git` pointer file. */
function addCarveOuts(candidates: Candidates, writable: string[], scratch: Set<string>, links: string[]): void {
  for (const w of writable) {
    // A writable "/" is full write access: carve-outs at /.git would only litter the host root.
    if (scratch.has(w) || w === '/') continue;
    for (const name of PROTECTED_NAMES) {
      const p = w === '/' ? `/${name}` : `${w}/${name}`;
      const st = lstatOrNull(p);
      if (st === null) {
        candidates.put({ path: p, access: 'protect', explicit: false });
        continue;
      }
      if (st.isSymbolicLink()) {
        // The link itself can be re-pointed (its directory is writable): protect what it points to
        // (a placeholder when that is missing), and watch every link on the way (`links`).
        candidates.put({ path: followLinks(p, links), access: 'protect', explicit: false });
        continue;
      }
      candidates.put({ path: p, access: 'protect', explicit: false });
      if (name === '.git' && st.isFile()) {
        const m = /^gitdir:\s*(.+?)\s*$/m.exec(safeRead(p));
        if (m?.[1]) {
          const target = realish(resolve(w, m[1]));
          candidates.put({ path: target, access: 'protect', explicit: false });
          const common = commonDirOf(target, w);
          if (common !== null) candidates.put({ path: common, access: 'protect', explicit: false });
        }
      }
    }
  }
}

/**
 * 2b. The same names deeper down (nested repositories, sub-projects), as far as the bounded scan
 * sees: only existing ones (see docs/sandbox.md, "Nested repositories").
 */
function addNestedCarveOuts(candidates: Candidates, writable: string[], scratch: Set<string>, links: string[]): void {
  /** `exists: false`: a placeholder (the target of a `.git` pointer that is missing: made by the command, git would use it). */
  const putNested = (p: string, exists = true): void => {
    // Inside a carve-out that is already a read-only directory (a submodule's gitdir in .git/modules): nothing to add.
    for (const c of candidates.all())
      if (c.access === 'protect' && c.path !== p && isWithin(p, c.path) && lstatOrNull(c.path)?.isDirectory()) return;
    candidates.put({ path: p, access: 'protect', explicit: false, ...(exists ? { nested: true } : {}) });
  };
  const explicitPaths = candidates.paths((c) => c.explicit);
  for (const w of writable) {
    if (scratch.has(w) || w === '/') continue;
    // Inside another explicit entry below this root: covered by that entry (or its own scan).
    const inner = explicitPaths.filter((e) => e !== w && isWithin(e, w));
    for (const p of findNested(w)) {
      if (inner.some((e) => isWithin(p, e))) continue;
      const st = lstatOrNull(p);
      if (st === null) continue;
      if (st.isSymbolicLink()) {
        const target = followLinks(p, links);
        // A link to nothing: made by the command, that target would be the name's; a placeholder there.
        if (lstatOrNull(target)) putNested(target);
        else candidates.put({ path: target, access: 'protect', explicit: false });
        continue;
      }
      putNested(p);
      if (st.isFile() && p.endsWith('/.git')) {
        const m = /^gitdir:\s*(.+?)\s*$/m.exec(safeRead(p));
        if (m?.[1]) {
          const target = realish(resolve(dirname(p), m[1]));
          putNested(target, lstatOrNull(target) !== null);
          const common = commonDirOf(target, w);
          if (common !== null) putNested(common, lstatOrNull(common) !== null);
        }
      }
    }
  }
}

/**
 * Resolves `p` as `realpath` would, one component at a time, and pushes every link met on the way
 * to `links` (`p` itself first when it is one): a link anywhere on the way, replaced, points the
 * name elsewhere. A missing tail is kept as it is. At most 40 links (the kernel's own bound).
 */
function followLinks(p: string, links: string[]): string {
  let todo = p.split('/').filter(Boolean);
  let cur = '/';
  for (let hops = 0; todo.length > 0 && hops <= 40;) {
    const name = todo.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      cur = dirname(cur);
      continue;
    }
    const next = cur === '/' ? `/${name}` : `${cur}/${name}`;
    const to = lstatOrNull(next)?.isSymbolicLink() ? readlinkOrNull(next) : null;
    if (to === null) {
      cur = next;
      continue;
    }
    hops++;
    links.push(next);
    todo = [...to.split('/').filter(Boolean), ...todo];
    if (to.startsWith('/')) cur = '/';
  }
  return cur;
}

function readlinkOrNull(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null; // gone (or no longer a link) since the look: taken as it is now
  }
}

/** 3. /tmp: shared when writable by a rule, otherwise a private tmpfs if the root is visible. */
function tmpLayout(policy: ResolvedPolicy, root: Layout['root'], candidates: Candidates): Layout['tmp'] {
  let tmp: Layout['tmp'];
  const tmpRule = candidates.get('/tmp');
  if (root === 'rw' || tmpRule?.access === 'write') tmp = 'shared';
  else if (tmpRule?.access === 'read') tmp = 'read-only';
  else tmp = 'private';
  const cwdReal = realpathOrNull(policy.cwd) ?? policy.cwd;
  if (
    tmp === 'private' &&
    root === 'ro' &&
    isWithin(cwdReal, '/tmp') &&
    !candidates.all().some((c) => c.access !== 'deny' && isWithin(cwdReal, c.path))
  ) {
    // The private /tmp would hide a cwd under /tmp that the policy lets the command read.
    candidates.put({ path: cwdReal, access: 'read', explicit: true });
  }
  return tmp;
}

/** 4. The mounts in order: shallow first; mounts on the same depth are independent. */
function mountsFor(
  candidates: Candidates,
  root: Layout['root'],
  tmp: Layout['tmp'],
  underWritable: (path: string) => boolean,
  isStub: (path: string) => boolean,
  /** Carve-outs that are links, and hidden directories: the folders above them are pinned too. */
  alsoPinAbove: string[],
): Pick<Layout, 'mounts' | 'protectedPaths' | 'pins'> {
  const readable = (p: string) => root !== 'empty' || candidates.all().some((c) => c.access !== 'deny' && isWithin(p, c.path));
  const ordered = candidates.all().sort((a, b) => depthOf(a.path) - depthOf(b.path) || a.path.localeCompare(b.path));
  const mounts: Mount[] = [];
  if (tmp === 'private' && !candidates.has('/tmp')) mounts.push({ kind: 'tmpfs', path: '/tmp' });
  const protectedPaths: string[] = [];
  /** Whether the command may make `c.path`: the deepest other entry holding it is a write entry (or none, under a writable root). */
  const writableHere = (c: Candidate) =>
    underWritable(c.path) &&
    (ordered.filter((o) => o !== c && isWithin(c.path, o.path)).pop()?.access ?? (root === 'rw' ? 'write' : 'read')) === 'write';
  for (const c of ordered) {
    const st = lstatOrNull(c.path);
    switch (c.access) {
      case 'write':
        mounts.push({ kind: 'bind', path: c.path });
        break;
      case 'read':
        mounts.push({ kind: 'ro-bind', path: c.path });
        if (underWritable(c.path)) protectedPaths.push(c.path);
        break;
      case 'protect':
        if (c.nested) {
          // Existing only, and never a stub of ours: plain read-only, skipped if gone by mount time.
          if (!st) break;
          protectedPaths.push(c.path);
          mounts.push({ kind: 'ro-bind', path: c.path, optional: true });
          break;
        }
        protectedPaths.push(c.path);
        mounts.push(st && !isStub(c.path) ? { kind: 'ro-bind', path: c.path } : { kind: 'placeholder', path: c.path, mode: 0o555 });
        break;
      case 'deny':
        if (underWritable(c.path)) protectedPaths.push(c.path);
        if (!readable(c.path)) break; // invisible anyway
        if (st?.isDirectory()) mounts.push({ kind: 'deny-dir', path: c.path });
        else if (st) mounts.push({ kind: 'deny-file', path: c.path });
        // Missing: hidden by an empty placeholder where the command could make it; under a
        // read-only or denied entry it cannot (and bwrap could not make the mount point there).
        else if (writableHere(c)) mounts.push({ kind: 'placeholder', path: c.path, mode: 0o000 });
        break;
    }
  }
  const pins = pinnedFolders(ordered, [...protectedPaths, ...alsoPinAbove]);
  if (pins.length === 0) return { mounts, protectedPaths };
  // Shallow first, as everything else (a stable sort keeps the order within one depth).
  const all = [...mounts, ...pins.map((path): Mount => ({ kind: 'bind', path, optional: true }))];
  return { mounts: all.sort((a, b) => depthOf(a.path) - depthOf(b.path)), protectedPaths, pins };
}

/**
 * Makes the missing folders above each placeholder inside a writable root (mode 0755), and says
 * whether it made any: the layout is then computed again, and pins them. Left to bwrap, which makes
 * a mount point's missing folders itself, they were not pinned: the command could rename one (the
 * empty mount going along) and put its own file at the protected path, for the host to find (a
 * denied `a/b/secret` with no `a`, a missing `gitdir:` target). bwrap left those folders behind
 * too; made here they are the same folders, made a moment earlier. Not under a carve-out (nothing
 * can be made in a read-only one, and the command can rename nothing there).
 */
export function makePlaceholderFolders(layout: Layout): boolean {
  let made = false;
  for (const m of layout.mounts) {
    if (m.kind !== 'placeholder') continue;
    const parent = dirname(m.path);
    if (lstatOrNull(parent) !== null) continue;
    if (!layout.writableRoots.some((w) => w !== '/' && isWithin(parent, w))) continue;
    if (layout.protectedPaths.some((p) => p !== m.path && isWithin(parent, p))) continue;
    try {
      mkdirSync(parent, { recursive: true, mode: 0o755 });
      made = true;
    } catch {
      // cannot be made (a file on the way, read-only): bwrap reports what is wrong
    }
  }
  return made;
}

/**
 * The folders between a writable root and a carve-out below it, each bound onto itself so that it
 * is a mount point in the sandbox. A mount lives on its directory entry, and the kernel refuses to
 * rename or remove a mount point only in the namespace where it is one: renaming `sub` took the
 * read-only mount on `sub/.git` along, and the command made `sub/.git/config` where it had been
 * (measured). A folder that is a mount point cannot be renamed there (EBUSY). The cost: a rename
 * into or out of such a folder crosses a mount (EXDEV; `mv` copies instead, `git mv` fails).
 * Only folders the command could write are pinned: under a read or deny entry it can rename nothing.
 */
function pinnedFolders(ordered: Candidate[], protectedPaths: string[]): string[] {
  const mountedAt = new Set(ordered.map((c) => c.path));
  const pins = new Set<string>();
  for (const p of protectedPaths) {
    for (let dir = dirname(p); dir !== dirname(dir) && !mountedAt.has(dir); dir = dirname(dir)) {
      // The deepest entry holding `dir` says whether the command may write there.
      const holder = ordered.filter((c) => isWithin(dir, c.path)).pop();
      if (holder?.access !== 'write') break;
      if (lstatOrNull(dir)?.isDirectory()) pins.add(dir);
    }
  }
  return [...pins];
}

/**
 * The common directory of a linked worktree's gitdir (`<gitdir>/commondir`, usually `../..`):
 * where git keeps the worktree's `config` and `hooks`, so it is protected with the gitdir (a bare
 * `proj.git` beside its worktrees is no `.git` the scan finds). Null when the gitdir has none, or
 * when it would hold the writable root `root`.
 */
function commonDirOf(gitdir: string, root: string): string | null {
  const rel = safeRead(`${gitdir}/commondir`).split('\n')[0]?.trim();
  const common = rel ? realish(resolve(gitdir, rel)) : null;
  // Never the writable root itself or above it: made read-only, nothing could be written.
  return common === null || isWithin(root, common) ? null : common;
}

function safeRead(p: string): string {
  try {
    return readFileSync(p, 'utf8').slice(0, 4096);
  } catch {
    return '';
  }
}
