import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, type Dirent, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { depthOf, isWithin, type Access, type ResolvedPolicy } from './policy';

/*
 * Step 2 of planning: a restricted-filesystem policy → an ordered list of mounts, looking at the
 * real filesystem (symlinks, what exists, `.git` pointer files). Mount order is the whole game:
 * a later mount on a deeper path wins, so mounts are sorted by depth, and for one path the
 * strongest access wins (deny > write > read; an explicit entry beats a built-in carve-out).
 */

/** Inside every writable root these stay read-only, even when missing (creating them is blocked). */
export const PROTECTED_NAMES = ['.git', '.vscode', '.codex'] as const;

/** What `minimal` makes readable when the root is not. */
export const MINIMAL_PATHS = ['/bin', '/sbin', '/usr', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

export type Mount =
  /** `path` writable (host path bound read-write). */
  | { kind: 'bind'; path: string }
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

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
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
export function computeLayout(policy: ResolvedPolicy, isStub: (path: string) => boolean = () => false): Layout {
  if (policy.fs === 'unrestricted') return { root: 'rw', mounts: [], writableRoots: ['/'], protectedPaths: [], tmp: 'shared' };

  const candidates = explicitCandidates(policy);
  const rootRule = candidates.get('/');
  const root: Layout['root'] = rootRule?.access === 'read' ? 'ro' : rootRule?.access === 'write' ? 'rw' : 'empty';
  candidates.delete('/');

  // Scratch roots (/tmp, $TMPDIR) get no carve-outs.
  const scratch = new Set(candidates.paths((c) => c.scratch === true));
  addCarveOuts(candidates, candidates.writable(root), scratch);
  addNestedCarveOuts(candidates, candidates.writable(root), scratch);

  const writableRoots = candidates.writable(root);
  const underWritable = (p: string) => writableRoots.some((w) => isWithin(p, w));
  // A carve-out outside every writable area is read-only anyway: no mount needed.
  for (const c of candidates.all()) if (c.access === 'protect' && !underWritable(c.path)) candidates.delete(c.path);

  const tmp = tmpLayout(policy, root, candidates);
  const { mounts, protectedPaths } = mountsFor(candidates, root, tmp, underWritable, isStub);
  return { root, mounts, writableRoots, protectedPaths, tmp };
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
function addCarveOuts(candidates: Candidates, writable: string[], scratch: Set<string>): void {
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
        // The link itself can be re-pointed (its directory is writable); protect what it points to.
        const target = realpathOrNull(p) ?? resolve(dirname(p), readlinkSync(p));
        candidates.put({ path: target, access: 'protect', explicit: false });
        continue;
      }
      candidates.put({ path: p, access: 'protect', explicit: false });
      if (name === '.git' && st.isFile()) {
        const m = /^gitdir:\s*(.+?)\s*$/m.exec(safeRead(p));
        if (m?.[1]) candidates.put({ path: realish(resolve(w, m[1])), access: 'protect', explicit: false });
      }
    }
  }
}

/**
 * 2b. The same names deeper down (nested repositories, sub-projects), as far as the bounded scan
 * sees: only existing ones (see docs/sandbox.md, "Nested repositories").
 */
function addNestedCarveOuts(candidates: Candidates, writable: string[], scratch: Set<string>): void {
  const putNested = (p: string): void => {
    // Inside a carve-out that is already a read-only directory (a submodule's gitdir in .git/modules): nothing to add.
    for (const c of candidates.all())
      if (c.access === 'protect' && c.path !== p && isWithin(p, c.path) && lstatOrNull(c.path)?.isDirectory()) return;
    candidates.put({ path: p, access: 'protect', explicit: false, nested: true });
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
        const target = realpathOrNull(p);
        if (target !== null) putNested(target);
        continue;
      }
      putNested(p);
      if (st.isFile() && p.endsWith('/.git')) {
        const m = /^gitdir:\s*(.+?)\s*$/m.exec(safeRead(p));
        const target = m?.[1] ? realpathOrNull(resolve(dirname(p), m[1])) : null;
        if (target !== null) putNested(target);
      }
    }
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
): Pick<Layout, 'mounts' | 'protectedPaths'> {
  const readable = (p: string) => root !== 'empty' || candidates.all().some((c) => c.access !== 'deny' && isWithin(p, c.path));
  const ordered = candidates.all().sort((a, b) => depthOf(a.path) - depthOf(b.path) || a.path.localeCompare(b.path));
  const mounts: Mount[] = [];
  if (tmp === 'private' && !candidates.has('/tmp')) mounts.push({ kind: 'tmpfs', path: '/tmp' });
  const protectedPaths: string[] = [];
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
        else if (underWritable(c.path)) mounts.push({ kind: 'placeholder', path: c.path, mode: 0o000 });
        break;
    }
  }
  return { mounts, protectedPaths };
}

/*
 * The nested scan. Breadth-first from a writable root, without following symlinks, it lists every
 * existing `.git`/`.vscode`/`.codex` below the root itself, within NESTED_SCAN's bounds. It runs
 * for every sandboxed start, so it is cached per directory: a directory whose identity and ctime
 * are what they were when it was read has the same entries (adding, removing or renaming an entry
 * changes its directory's ctime, and ctime cannot be set back), so only changed directories are
 * read again and the rest costs one lstat each. A directory changed so shortly before it was read
 * that a later change could keep the same ctime (timestamp granularity) is read again next time.
 */

/** Bounds of the nested scan, per writable root. */
export const NESTED_SCAN = {
  /** Directory levels read below the root (the root's children are level 1). */
  maxDepth: 6,
  /** Directory entries read in all; the scan stops at the first directory that reaches it. */
  maxEntries: 5000,
  /** Nested carve-outs kept (the shallowest first). */
  maxFound: 256,
  /** A directory changed less than this before it was read is read again next time. */
  racyMs: 2000,
};

/** Never descended into: dependency trees and caches (huge, and not where repositories live). */
export const NESTED_SKIP = new Set([
  'node_modules',
  'bower_components',
  'jspm_packages',
  '.venv',
  'venv',
  '__pycache__',
  '.tox',
  '.nox',
  '.mypy_cache',
  '.pytest_cache',
  '.ruff_cache',
  '.gradle',
  '.cache',
  '.next',
  '.nuxt',
  '.terraform',
]);

/** Roots whose scan is cached. */
const CACHED_ROOTS = 16;

interface ScannedDir {
  dev: number;
  ino: number;
  ctimeMs: number;
  /** Its ctime was old enough when read that an unchanged ctime proves unchanged entries. */
  settled: boolean;
  entries: number;
  subdirs: string[];
  /** Protected names present in it (any file type). */
  hits: string[];
}

const scanCache = new Map<string, Map<string, ScannedDir>>();

/** What the last scan did: directories read, and directories taken from the cache (tests, bench). */
export const lastNestedScan = { read: 0, reused: 0 };

/** Existing protected names below `root` (not in the root itself), shallowest first, within `limits`. */
export function findNested(root: string, limits: typeof NESTED_SCAN = NESTED_SCAN): string[] {
  const before = scanCache.get(root);
  const seen = new Map<string, ScannedDir>();
  const found: string[] = [];
  const queue: Array<[string, number]> = [[root, 0]];
  let entries = 0;
  lastNestedScan.read = lastNestedScan.reused = 0;
  for (let i = 0; i < queue.length && entries < limits.maxEntries && found.length < limits.maxFound; i++) {
    const [dir, depth] = queue[i]!;
    const st = lstatOrNull(dir);
    if (!st?.isDirectory()) continue;
    let node = before?.get(dir);
    if (!node || !node.settled || node.dev !== st.dev || node.ino !== st.ino || node.ctimeMs !== st.ctimeMs) {
      node = readScannedDir(dir, st, limits.racyMs);
      lastNestedScan.read++;
    } else lastNestedScan.reused++;
    seen.set(dir, node);
    entries += node.entries;
    if (depth > 0) for (const name of node.hits) found.push(join(dir, name));
    if (depth < limits.maxDepth) for (const name of node.subdirs) queue.push([join(dir, name), depth + 1]);
  }
  scanCache.delete(root);
  scanCache.set(root, seen);
  if (scanCache.size > CACHED_ROOTS) scanCache.delete(scanCache.keys().next().value!);
  return found.slice(0, limits.maxFound);
}

function readScannedDir(dir: string, st: Stats, racyMs: number): ScannedDir {
  const readAt = Date.now();
  const node: ScannedDir = {
    dev: st.dev,
    ino: st.ino,
    ctimeMs: st.ctimeMs,
    settled: readAt - st.ctimeMs > racyMs,
    entries: 0,
    subdirs: [],
    hits: [],
  };
  let list: Dirent[];
  try {
    list = readdirSync(dir, { withFileTypes: true });
  } catch {
    return { ...node, settled: false }; // unreadable now: try again next time
  }
  node.entries = list.length;
  for (const e of list) {
    if ((PROTECTED_NAMES as readonly string[]).includes(e.name)) node.hits.push(e.name);
    else if (e.isDirectory() && !NESTED_SKIP.has(e.name)) node.subdirs.push(e.name);
  }
  return node;
}

/** Forgets every cached scan (tests). */
export function clearNestedScanCache(): void {
  scanCache.clear();
}

function safeRead(p: string): string {
  try {
    return readFileSync(p, 'utf8').slice(0, 4096);
  } catch {
    return '';
  }
}
