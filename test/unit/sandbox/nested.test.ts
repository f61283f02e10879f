import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../../src/protocol/sandbox';
import {
  clearNestedScanCache,
  computeLayout,
  findNested,
  lastNestedScan,
  makePlaceholderFolders,
  NESTED_SCAN,
} from '../../../src/server/sandbox/layout';
import { rememberNestedIn } from '../../../src/server/sandbox/nestedScan';
import { resolvePolicy } from '../../../src/server/sandbox/policy';

const uri = (p: string) => pathToFileURL(p).href;
const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'sbx-nested-')));
after(() => rmSync(scratch, { recursive: true, force: true }));

let n = 0;
/** A fresh workspace with the given directories and files (a path ending in / is a directory). */
function workspace(paths: string[]): string {
  const ws = join(scratch, `ws${n++}`);
  mkdirSync(ws);
  for (const p of paths) {
    if (p.endsWith('/')) mkdirSync(join(ws, p), { recursive: true });
    else {
      mkdirSync(join(ws, p, '..'), { recursive: true });
      writeFileSync(join(ws, p), 'x\n');
    }
  }
  return ws;
}

const layoutOf = (ws: string, intent: Parameters<typeof sandboxForPolicy>[0] = { policy: 'workspace-write', cwd: uri(ws) }) =>
  computeLayout(resolvePolicy(sandboxForPolicy(intent), ws, {}));
const mountsOf = (ws: string) =>
  layoutOf(ws).mounts.map(
    (m) => `${m.kind}${m.kind === 'ro-bind' && m.optional ? '?' : ''} ${m.path.startsWith(ws) ? m.path.slice(ws.length) || '/' : m.path}`,
  );

test('nested repositories and folders: existing .git, .vscode and .codex below a writable root are read-only', () => {
  const ws = workspace(['.git/', 'sub/.git/hooks/', 'sub/.vscode/settings.json', 'a/b/c/.codex/', 'a/b/plain.txt', 'x/.git']);
  const m = mountsOf(ws);
  for (const p of ['/sub/.git', '/sub/.vscode', '/a/b/c/.codex', '/x/.git'])
    assert.ok(m.includes(`ro-bind? ${p}`), `${p} in ${m.join(', ')}`);
  // The top level is as before: its existing .git bound, its missing .vscode/.codex placeholders.
  assert.ok(m.includes('ro-bind /.git'));
  assert.ok(m.includes('placeholder /.vscode') && m.includes('placeholder /.codex'));
  // Missing ones in a nested repository get nothing (no stubs all over the tree).
  assert.ok(!m.some((x) => x.includes('/sub/.codex')), 'no placeholder in a nested repo');
  // Each after the workspace's bind (deeper mounts win).
  assert.ok(m.indexOf('bind /') < m.indexOf('ro-bind? /sub/.git'));
  assert.ok(layoutOf(ws).protectedPaths.includes(join(ws, 'sub', '.git')), 'known to the denial heuristic and Seatbelt');
});

test('nested: a submodule gitdir inside the protected .git adds nothing; a symlinked .vscode protects its target', () => {
  const ws = workspace(['.git/modules/sub/', 'other/real-vscode/', 'wt-git/']);
  mkdirSync(join(ws, 'sub'));
  writeFileSync(join(ws, 'sub', '.git'), 'gitdir: ../.git/modules/sub\n');
  mkdirSync(join(ws, 'linked'));
  symlinkSync(join(ws, 'other', 'real-vscode'), join(ws, 'linked', '.vscode'));
  mkdirSync(join(ws, 'wt'));
  writeFileSync(join(ws, 'wt', '.git'), `gitdir: ${join(ws, 'wt-git')}\n`);
  const m = mountsOf(ws);
  assert.ok(m.includes('ro-bind? /sub/.git'), 'the pointer file');
  assert.ok(!m.some((x) => x.endsWith('/.git/modules/sub')), 'its target is inside the bound .git already');
  assert.ok(m.includes('ro-bind? /other/real-vscode'), 'the link target');
  assert.ok(m.includes('ro-bind? /wt-git'), 'a worktree gitdir elsewhere in the workspace');
});

test('nested: skipped are dependency trees, scratch roots, paths under other explicit entries, and what lies past the bounds', () => {
  const deep = 'd1/d2/d3/d4/d5/d6/d7/';
  const ws = workspace([
    'node_modules/pkg/.git/',
    '.venv/lib/.git/',
    `${deep}.git/`,
    'd1/d2/d3/d4/d5/.git/',
    'secret/inner/.git/',
    'ro/inner/.vscode/',
  ]);
  const policy = resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }), ws, {});
  // Add a deny and a read entry inside the workspace.
  policy.rules.push({ path: join(ws, 'secret'), access: 'deny' }, { path: join(ws, 'ro'), access: 'read' });
  const m = computeLayout(policy).mounts.map((x) => `${x.kind} ${x.path.slice(ws.length)}`);
  assert.ok(!m.some((x) => x.includes('node_modules') || x.includes('.venv')), m.join(', '));
  assert.ok(m.includes('ro-bind /d1/d2/d3/d4/d5/.git'), 'level 5 is scanned');
  assert.ok(!m.some((x) => x.includes('/d7/')), `past maxDepth ${NESTED_SCAN.maxDepth}`);
  assert.ok(m.includes('deny-dir /secret') && !m.some((x) => x.includes('/secret/inner')), 'inside a deny entry: hidden anyway');
  assert.ok(m.includes('ro-bind /ro') && !m.some((x) => x.includes('/ro/inner')), 'inside a read entry: read-only anyway');
  // A scratch root ($TMPDIR, /tmp) is never scanned.
  const tmp = workspace(['proj/.git/', 'proj/.vscode/']);
  const withTmp = computeLayout(resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }), ws, { TMPDIR: tmp }));
  assert.ok(
    withTmp.mounts.some((x) => x.kind === 'bind' && x.path === tmp),
    'TMPDIR is writable',
  );
  assert.ok(!withTmp.mounts.some((x) => x.path.startsWith(`${tmp}/`)), 'and gets no carve-outs');
});

test('findNested: the entry and found bounds stop the scan, shallowest first', () => {
  const ws = workspace(['a/.git/', 'b/.vscode/', 'c/d/.git/', 'e/f/g/.git/']);
  const limits = { ...NESTED_SCAN };
  assert.deepEqual(
    findNested(ws, limits).map((p) => p.slice(ws.length)),
    ['/a/.git', '/b/.vscode', '/c/d/.git', '/e/f/g/.git'],
  );
  // Each bound on a fresh memory (what a scan found is protected later whatever the bounds; below).
  const fresh = <T>(v: T) => (clearNestedScanCache(), v);
  assert.deepEqual(
    findNested(ws, fresh({ ...limits, maxFound: 2 })).map((p) => p.slice(ws.length)),
    ['/a/.git', '/b/.vscode'],
  );
  assert.deepEqual(
    findNested(ws, fresh({ ...limits, maxDepth: 2 })).map((p) => p.slice(ws.length)),
    ['/a/.git', '/b/.vscode', '/c/d/.git'],
  );
  // The root has 4 entries, a and b one each: a budget of 6 stops after reading b.
  assert.deepEqual(
    findNested(ws, fresh({ ...limits, maxEntries: 6 })).map((p) => p.slice(ws.length)),
    ['/a/.git', '/b/.vscode'],
  );
});

test('findNested cache: unchanged directories cost an lstat, a new or removed nested repository is seen at once', () => {
  clearNestedScanCache();
  const ws = workspace(['sub/src/', 'lib/x/y/']);
  const trust = { ...NESTED_SCAN, racyMs: -Infinity }; // treat every ctime as settled (no waiting here)
  assert.deepEqual(findNested(ws, trust), []);
  assert.equal(lastNestedScan.read, 6);
  assert.deepEqual(findNested(ws, trust), []);
  assert.deepEqual(lastNestedScan, { read: 0, reused: 6 }, 'nothing read again');
  // A repository appears in an existing directory: only that directory is read again.
  mkdirSync(join(ws, 'lib', 'x', 'y', '.git'));
  assert.deepEqual(findNested(ws, trust), [join(ws, 'lib', 'x', 'y', '.git')]);
  assert.deepEqual(lastNestedScan, { read: 1, reused: 5 });
  // A whole repository moved in (rename: its new parent's ctime changes).
  const outside = join(scratch, `moved${n++}`);
  mkdirSync(join(outside, '.vscode'), { recursive: true });
  renameSync(outside, join(ws, 'sub', 'moved'));
  assert.deepEqual(new Set(findNested(ws, trust)), new Set([join(ws, 'lib', 'x', 'y', '.git'), join(ws, 'sub', 'moved', '.vscode')]));
  // Removed again: gone from the answer.
  rmSync(join(ws, 'lib', 'x', 'y', '.git'), { recursive: true });
  assert.deepEqual(findNested(ws, trust), [join(ws, 'sub', 'moved', '.vscode')]);
  // A directory replaced by another of the same name (new inode) is read again.
  rmSync(join(ws, 'sub', 'src'), { recursive: true });
  mkdirSync(join(ws, 'sub', 'src', '.git'), { recursive: true });
  assert.deepEqual(new Set(findNested(ws, trust)), new Set([join(ws, 'sub', 'moved', '.vscode'), join(ws, 'sub', 'src', '.git')]));
});

test('findNested cache: a directory changed just before it was read is read again next time (timestamp granularity)', () => {
  clearNestedScanCache();
  const ws = workspace(['a/b/']);
  findNested(ws, { ...NESTED_SCAN, racyMs: Infinity }); // as if everything had just changed
  findNested(ws, NESTED_SCAN);
  assert.equal(lastNestedScan.reused, 0, 'nothing trusted');
});

test('nested: every folder between the writable root and a carve-out is pinned (bound onto itself), shallow first, so the command cannot rename it', () => {
  const ws = workspace(['.git/', 'sub/.git/hooks/', 'a/b/c/.codex/', 'a/b/plain.txt', 'ro/inner/.vscode/']);
  const policy = resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }), ws, {});
  policy.rules.push({ path: join(ws, 'ro'), access: 'read' });
  const m = computeLayout(policy).mounts.map((x) => `${x.kind} ${x.path.slice(ws.length) || '/'}`);
  for (const pin of ['/sub', '/a', '/a/b', '/a/b/c']) assert.ok(m.includes(`bind ${pin}`), `${pin} pinned: ${m.join(', ')}`);
  assert.ok(m.indexOf('bind /a') < m.indexOf('bind /a/b') && m.indexOf('bind /a/b') < m.indexOf('bind /a/b/c'), 'shallow first');
  assert.ok(m.indexOf('bind /a/b/c') < m.indexOf('ro-bind /a/b/c/.codex'), 'before the carve-out it holds');
  assert.ok(m.indexOf('bind /') < m.indexOf('bind /sub'), 'after the writable root');
  // Under a read entry the command renames nothing: no pins there; a top-level carve-out needs none.
  assert.ok(!m.some((x) => x.startsWith('bind /ro')), m.join(', '));
  const pins = computeLayout(policy)
    .mounts.filter((x) => x.kind === 'bind' && x.path.startsWith(`${ws}/`))
    .map((x) => x.path.slice(ws.length));
  assert.deepEqual(pins, ['/sub', '/a', '/a/b', '/a/b/c'], 'the four pins, nothing else');
});

test('links at protected names: every link on the way is listed (to be watched), the end protected, a dangling end gets a placeholder', () => {
  const ws = workspace(['real/vs/', 'sub/']);
  symlinkSync(join(ws, 'a'), join(ws, '.vscode')); // .vscode -> a -> real/vs
  symlinkSync('real/vs', join(ws, 'a'));
  symlinkSync('../cfg', join(ws, 'sub', '.vscode')); // dangling
  const layout = layoutOf(ws);
  assert.deepEqual(
    [...(layout.links ?? [])].map((p) => p.slice(ws.length)).sort(),
    ['/.vscode', '/a', '/sub/.vscode'],
    'the link, the link it points through, the dangling nested one',
  );
  const m = mountsOf(ws);
  assert.ok(m.includes('ro-bind /real/vs'), `the end of the chain: ${m.join(', ')}`);
  assert.ok(m.includes('placeholder /cfg'), `the dangling end: ${m.join(', ')}`);
  assert.ok(m.includes('bind /sub'), 'the folder above a nested link is pinned');
});

test("a placeholder's missing folders inside a writable root are made before the build and pinned; a nested .git pointer's missing target is a placeholder", () => {
  // Left to bwrap, `a` and `a/b` were made for the mount, unpinned: the command renamed `a` (the
  // empty mount went along) and wrote a/b/secret for the host to find.
  const ws = workspace(['sub/']);
  writeFileSync(join(ws, 'sub', '.git'), 'gitdir: ../wt/x\n');
  const policy = resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }), ws, {});
  policy.rules.push({ path: join(ws, 'a', 'b', 'secret'), access: 'deny' }, { path: join(ws, 'ro'), access: 'read' });
  policy.rules.push({ path: join(ws, 'ro', 'm', 'n'), access: 'deny' });
  mkdirSync(join(ws, 'ro'));
  const rel = (l: ReturnType<typeof computeLayout>) => l.mounts.map((x) => `${x.kind} ${x.path.slice(ws.length) || '/'}`);
  const first = computeLayout(policy);
  assert.ok(rel(first).includes('placeholder /a/b/secret'), rel(first).join(', '));
  assert.ok(rel(first).includes('placeholder /wt/x'), `the pointer's missing target: ${rel(first).join(', ')}`);
  assert.ok(!rel(first).includes('bind /a'), 'nothing to pin yet');
  // Under a read entry the command can make nothing: no mount (bwrap could not make its mount point there either).
  assert.ok(!rel(first).some((m) => m.includes('/ro/m')), rel(first).join(', '));
  assert.equal(makePlaceholderFolders(first), true);
  assert.ok(existsSync(join(ws, 'a', 'b')) && existsSync(join(ws, 'wt')));
  assert.equal(existsSync(join(ws, 'a', 'b', 'secret')), false, 'the placeholder itself is the stub mechanism’s');
  assert.equal(existsSync(join(ws, 'ro', 'm')), false, 'nothing made under a read entry (the command can rename nothing there)');
  const again = computeLayout(policy);
  for (const pin of ['/a', '/a/b', '/wt', '/sub']) assert.ok(rel(again).includes(`bind ${pin}`), `${pin} pinned: ${rel(again).join(', ')}`);
  assert.equal(makePlaceholderFolders(again), false, 'nothing left to make');
});

test("a linked worktree's common dir (its config and hooks) is protected with its gitdir; one that would hold the workspace is not", () => {
  // A bare `proj.git` beside its worktree: no `.git` for the scan to find, and git takes hooks and
  // config from `<gitdir>/commondir`. The command wrote proj.git/hooks/pre-commit (measured).
  const ws = workspace(['proj.git/hooks/', 'proj.git/worktrees/feature/', 'proj.git/worktrees/odd/', 'feature/', 'odd/']);
  writeFileSync(join(ws, 'proj.git', 'worktrees', 'feature', 'commondir'), '../..\n');
  writeFileSync(join(ws, 'feature', '.git'), `gitdir: ${join(ws, 'proj.git', 'worktrees', 'feature')}\n`);
  writeFileSync(join(ws, 'proj.git', 'worktrees', 'odd', 'commondir'), '../../..\n'); // the workspace itself
  writeFileSync(join(ws, 'odd', '.git'), 'gitdir: ../proj.git/worktrees/odd\n');
  const m = mountsOf(ws);
  assert.ok(m.includes('ro-bind? /proj.git'), `the common dir: ${m.join(', ')}`);
  assert.ok(!m.some((x) => / \/$/.test(x) && x.startsWith('ro-bind')), `the workspace stays writable: ${m.join(', ')}`);
});

test('what a scan found stays protected when the command pushes the tree past the bounds, in this server and the next', () => {
  // The command made 5000 empty files in the root: the next scan stopped there, and the command
  // wrote lib/.git/config (measured by a review). What was found before is protected while it exists.
  clearNestedScanCache();
  const memory = join(scratch, `memory${n}`);
  rememberNestedIn(memory);
  try {
    const ws = workspace(['lib/.git/', 'a/b/.vscode/']);
    const small = { ...NESTED_SCAN, maxEntries: 10 };
    assert.deepEqual(findNested(ws, small).sort(), [join(ws, 'a', 'b', '.vscode'), join(ws, 'lib', '.git')]);
    for (let i = 0; i < 20; i++) writeFileSync(join(ws, `.f${i}`), '');
    assert.deepEqual(findNested(ws, small).sort(), [join(ws, 'a', 'b', '.vscode'), join(ws, 'lib', '.git')], 'remembered');
    // The next server: a fresh memory read from the state directory.
    rememberNestedIn(undefined);
    rememberNestedIn(memory);
    clearNestedScanCache();
    assert.deepEqual(findNested(ws, small).sort(), [join(ws, 'a', 'b', '.vscode'), join(ws, 'lib', '.git')], 'kept on disk');
    // Gone on the host: no longer protected (nothing to protect).
    rmSync(join(ws, 'lib', '.git'), { recursive: true });
    assert.deepEqual(findNested(ws, small), [join(ws, 'a', 'b', '.vscode')]);
  } finally {
    rememberNestedIn(undefined);
  }
});
