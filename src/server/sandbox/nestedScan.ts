import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync, type Dirent, type Stats } from 'node:fs';
import { basename, join } from 'node:path';

/** Inside every writable root these stay read-only, even when missing (creating them is blocked; ./layout.ts). */
export const PROTECTED_NAMES = ['.git', '.vscode', '.codex'] as const;

/*
 * The nested scan. Breadth-first from a writable root, without following symlinks, it lists every
 * existing `.git`/`.vscode`/`.codex` below the root itself, within NESTED_SCAN's bounds. It runs
 * for every sandboxed start, so it is cached per directory: a directory whose identity and ctime
 * are what they were when it was read has the same entries (adding, removing or renaming an entry
 * changes its directory's ctime, and ctime cannot be set back), so only changed directories are
 * read again and the rest costs one lstat each. A directory changed so shortly before it was read
 * that a later change could keep the same ctime (timestamp granularity) is read again next time.
 *
 * The bounds are the command's to push: 5000 empty files in the root use up the entry budget, and
 * a folder made unreadable (`chmod 311`) is skipped, so the next start protected nothing below
 * (measured by a review: the command then wrote `lib/.git/config`). So a folder that cannot be read
 * is itself kept read-only (the command cannot make it readable again inside), and what any scan
 * found for a root is remembered (in this server, and in a file of the private state directory
 * when the planner names one, for the next server) and protected while it exists, whatever the
 * scan reached this time.
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
  /** Its entries could not be read (permissions): kept read-only as a whole. */
  unreadable?: true;
}

const scanCache = new Map<string, Map<string, ScannedDir>>();

/** What the last scan did: directories read, and directories taken from the cache (tests, bench). */
export const lastNestedScan = { read: 0, reused: 0 };

/** What earlier scans found, per root (bounded like a scan). */
const remembered = new Map<string, Set<string>>();
/** Where the remembered carve-outs are kept for the next server (the private state directory), if anywhere. */
let memoryDir: string | undefined;

/** Keeps what scans find in `dir` too (a folder only this user can reach; the planner's state directory). */
export function rememberNestedIn(dir: string | undefined): void {
  if (memoryDir === dir) return;
  memoryDir = dir;
  remembered.clear();
}

function memoryFile(root: string): string | undefined {
  return memoryDir && join(memoryDir, `nested-${createHash('sha256').update(root).digest('hex').slice(0, 32)}.json`);
}

function rememberedFor(root: string): Set<string> {
  let known = remembered.get(root);
  if (known) return known;
  known = new Set();
  const file = memoryFile(root);
  try {
    if (file)
      for (const p of JSON.parse(readFileSync(file, 'utf8')) as unknown[])
        if (typeof p === 'string' && p.startsWith(`${root}/`)) known.add(p);
  } catch {
    // none yet, or unreadable: this server's scans fill it
  }
  remembered.set(root, known);
  return known;
}

/** Adds `found` to what is remembered for `root` and drops what is gone; kept on disk when that changed anything. */
function remember(root: string, found: readonly string[]): void {
  const known = rememberedFor(root);
  let changed = false;
  for (const p of known)
    if (gone(p)) {
      known.delete(p); // a scan finds it if it comes back
      changed = true;
    }
  for (const p of found)
    if (!known.has(p) && known.size < NESTED_SCAN.maxFound) {
      known.add(p);
      changed = true;
    }
  const file = memoryFile(root);
  if (!file || !changed) return;
  try {
    mkdirSync(memoryDir!, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify([...known]), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // not kept for the next server; this one still remembers
  }
}

/**
 * Existing protected names below `root` (not in the root itself), shallowest first, within `limits`,
 * then what earlier scans found that still exists, and folders that could not be read.
 */
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
    if (depth > 0 && node.unreadable) found.push(dir);
    if (depth < limits.maxDepth) for (const name of node.subdirs) queue.push([join(dir, name), depth + 1]);
  }
  scanCache.delete(root);
  scanCache.set(root, seen);
  if (scanCache.size > CACHED_ROOTS) scanCache.delete(scanCache.keys().next().value!);
  const kept = found.slice(0, limits.maxFound);
  // Carve-outs only: a folder unreadable once is not kept read-only after it is readable again.
  remember(
    root,
    kept.filter((p) => (PROTECTED_NAMES as readonly string[]).includes(basename(p))),
  );
  // Found before, not this time (the scan stopped short, or could not read a folder on the way): while it is there.
  const now = new Set(kept);
  for (const p of rememberedFor(root)) if (!now.has(p)) kept.push(p);
  return kept;
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
  } catch (e) {
    // Unreadable now: try again next time; meanwhile, if for lack of permission, kept read-only.
    const denied = ['EACCES', 'EPERM'].includes((e as NodeJS.ErrnoException).code ?? '');
    return { ...node, settled: false, ...(denied ? { unreadable: true as const } : {}) };
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
  remembered.clear();
}

/** Nothing is at `p` (a folder on the way that cannot be read is no proof of that). */
function gone(p: string): boolean {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) === undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOTDIR';
  }
}

/** `lstat`, or null when nothing (readable) is there. */
export function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}
