import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CarveOutGuard, watchedCarveOutFolders, type CarveOut, type CarveOutBreach } from '../../../src/server/sandbox/carveOutGuard';
import { SandboxUnavailableError } from '../../../src/server/sandbox/errors';

const base = mkdtempSync(join(tmpdir(), 'eb-carveout-guard-'));
after(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
/** A workspace with `.git` (real content) and a `.codex` placeholder (claims only). */
function workspace(): string {
  const ws = join(base, `ws${++n}`);
  mkdirSync(join(ws, '.git'), { recursive: true });
  writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  mkdirSync(join(ws, '.codex'));
  writeFileSync(join(ws, '.codex', '.exec-bridge-claim-1-abcd'), '');
  return ws;
}
const carveOuts = (ws: string): CarveOut[] => [
  { path: join(ws, '.git'), root: ws, hidden: false, quarantine: true },
  { path: join(ws, '.codex'), root: ws, hidden: false, quarantine: true },
  { path: join(ws, 'secret.txt'), root: ws, hidden: true, quarantine: false },
];

/**
 * A guard, and a wait for its first breach. The watches do not keep a process alive (the server
 * lives on without them), so the wait holds a timer of its own: it fails after 10 s.
 */
function guarded(list: CarveOut[]): { guard: CarveOutGuard; breach: () => Promise<CarveOutBreach> } {
  let resolve!: (b: CarveOutBreach) => void;
  const seen = new Promise<CarveOutBreach>((r) => (resolve = r));
  const breach = () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no breach reported within 10 s')), 10_000)));
    return Promise.race([seen, late]).finally(() => clearTimeout(timer));
  };
  return { guard: new CarveOutGuard(list, resolve), breach };
}

test('changes beside the carve-outs go unreported; the first carve-out that goes is, once', async () => {
  const ws = workspace();
  writeFileSync(join(ws, 'secret.txt'), 'hidden\n');
  const { guard, breach } = guarded(carveOuts(ws));
  try {
    // inotify keeps the order of one folder's events: had any of these been taken for a breach, it
    // would be reported before the one that follows.
    writeFileSync(join(ws, 'other.txt'), 'x');
    renameSync(join(ws, 'other.txt'), join(ws, 'renamed.txt'));
    mkdirSync(join(ws, '.codexx'));
    writeFileSync(join(ws, '.git.bak'), 'x');
    writeFileSync(join(ws, '.git', 'config'), '[core]\n'); // inside the repository: not the mount's entry
    writeFileSync(join(ws, '.codex', '.exec-bridge-claim-2-beef'), ''); // another server's claim
    rmSync(join(ws, '.codex'), { recursive: true });
    assert.deepEqual(await breach(), { path: join(ws, '.codex'), changed: join(ws, '.codex'), hidden: false, found: 'missing' });
    rmSync(join(ws, '.git'), { recursive: true });
    guard.checkAll();
    assert.deepEqual(
      guard.breached,
      { path: join(ws, '.codex'), changed: join(ws, '.codex'), hidden: false, found: 'missing' },
      'the first one stays the answer',
    );
  } finally {
    guard.dispose();
  }
});

test('a file replaced on the host (an editor saving by rename) is a breach of what the sandbox hid', async () => {
  const ws = workspace();
  writeFileSync(join(ws, 'secret.txt'), 'old\n');
  const { guard, breach } = guarded(carveOuts(ws));
  try {
    writeFileSync(join(ws, 'secret.txt.tmp'), 'new\n');
    renameSync(join(ws, 'secret.txt.tmp'), join(ws, 'secret.txt'));
    assert.deepEqual(await breach(), { path: join(ws, 'secret.txt'), changed: join(ws, 'secret.txt'), hidden: true, found: 'replaced' });
    assert.deepEqual(guard.quarantine(), [], 'a hidden file replaced by the user is theirs: never moved');
    assert.equal(existsSync(join(ws, 'secret.txt')), true);
  } finally {
    guard.dispose();
  }
});

test('checkAll sees a change the watch has not reported yet; quarantine moves what is new at .git/.codex, and nothing else', () => {
  const ws = workspace();
  const { guard } = guarded(carveOuts(ws));
  try {
    assert.deepEqual(guard.quarantine(), [], 'no breach, nothing moved');
    renameSync(join(ws, '.git'), join(ws, '.git-old'));
    mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(ws, '.git', 'hooks', 'pre-commit'), 'evil\n');
    // The .codex stub removed and made again by another start: a placeholder still, holding nothing.
    rmSync(join(ws, '.codex'), { recursive: true });
    mkdirSync(join(ws, '.codex'));
    writeFileSync(join(ws, '.codex', '.exec-bridge-claim-3-cafe'), '');
    guard.checkAll();
    assert.deepEqual(guard.breached, { path: join(ws, '.git'), changed: join(ws, '.git'), hidden: false, found: 'replaced' });
    const moved = guard.quarantine();
    assert.equal(moved.length, 1, JSON.stringify(moved));
    assert.equal(moved[0]![0], join(ws, '.git'));
    assert.match(
      moved[0]![1]!,
      new RegExp(`^${ws}/\\.git\\.exec-bridge-quarantine-\\w{6}/\\.git$`),
      'into a folder of a name nobody could guess ahead',
    );
    assert.equal(existsSync(join(moved[0]![1]!, 'hooks', 'pre-commit')), true, 'moved whole');
    assert.equal(existsSync(join(ws, '.git')), false);
    assert.equal(existsSync(join(ws, '.git-old', 'HEAD')), true, "the user's renamed repository is untouched");
    assert.deepEqual(readdirSync(join(ws, '.codex')), ['.exec-bridge-claim-3-cafe'], 'a placeholder is never moved');
  } finally {
    guard.dispose();
  }
});

test('guards share one watch per folder and let go of it with the last; an unwatchable folder refuses the start', () => {
  const ws = workspace();
  const before = watchedCarveOutFolders();
  const a = guarded(carveOuts(ws)).guard;
  const b = guarded([{ path: join(ws, '.codex'), root: ws, hidden: false, quarantine: true }]).guard;
  assert.equal(watchedCarveOutFolders(), before + 1);
  a.dispose();
  assert.equal(watchedCarveOutFolders(), before + 1);
  b.dispose();
  b.dispose();
  assert.equal(watchedCarveOutFolders(), before);
  // A carve-out below a folder that is not there yet: not refused, and the folder made (by bwrap,
  // for its mount point) is taken as it comes, not as a change.
  const missing = guarded([{ path: join(ws, 'no-such-folder', 'secret'), root: ws, hidden: true, quarantine: false }]).guard;
  mkdirSync(join(ws, 'no-such-folder', 'secret'), { recursive: true });
  missing.checkAll();
  assert.equal(missing.breached, undefined);
  rmSync(join(ws, 'no-such-folder'), { recursive: true });
  missing.checkAll();
  assert.equal((missing.breached as CarveOutBreach | undefined)?.changed, join(ws, 'no-such-folder'), 'once there, its going is a change');
  missing.dispose();
  assert.equal(watchedCarveOutFolders(), before);
  // A folder that cannot be watched (on a real machine: no inotify watch left; here: a name the
  // kernel refuses) refuses the start, naming the path.
  assert.throws(
    () => new CarveOutGuard([{ path: join(ws, 'bad\0folder', '.codex'), root: ws, hidden: false, quarantine: true }], () => undefined),
    (e: unknown) =>
      e instanceof SandboxUnavailableError &&
      /keeps .*\.codex read-only only while it and the folders above it stay on the host/.test(e.message),
  );
  assert.equal(watchedCarveOutFolders(), before, 'nothing left watched by the refused guard');
});

test('a folder above a nested carve-out renamed on the host is a breach; the folder made in its place is what moves aside', async () => {
  const ws = workspace();
  mkdirSync(join(ws, 'a', 'b', '.git'), { recursive: true });
  const nested = join(ws, 'a', 'b', '.git');
  const { guard, breach } = guarded([{ path: nested, root: ws, hidden: false, quarantine: true }]);
  try {
    assert.equal(watchedCarveOutFolders() >= 3, true, 'ws, ws/a and ws/a/b are watched');
    renameSync(join(ws, 'a'), join(ws, 'x'));
    assert.deepEqual(await breach(), { path: nested, changed: join(ws, 'a'), hidden: false, found: 'missing' });
    mkdirSync(join(ws, 'a', 'b', '.git', 'hooks'), { recursive: true });
    writeFileSync(join(ws, 'a', 'b', '.git', 'config'), '[core]\nfsmonitor = evil\n');
    const moved = guard.quarantine();
    assert.equal(moved.length, 1, JSON.stringify(moved));
    assert.equal(moved[0]![0], join(ws, 'a'), 'the first entry on the way that changed');
    assert.equal(existsSync(join(ws, 'a')), false);
    assert.equal(existsSync(join(ws, 'x', 'b', '.git')), true, "the user's renamed folder is untouched");
  } finally {
    guard.dispose();
  }
});

test('only a real folder of claim files counts as a stub made again: a link, or a claim-named folder, is moved aside', () => {
  const ws = workspace();
  const { guard } = guarded(carveOuts(ws));
  try {
    // .codex replaced by a link to a folder that holds only a claim-named folder: git would follow it.
    mkdirSync(join(ws, 'evil', '.exec-bridge-claim-1-x'), { recursive: true });
    rmSync(join(ws, '.codex'), { recursive: true });
    symlinkSync(join(ws, 'evil'), join(ws, '.codex'));
    guard.checkAll();
    const moved = guard.quarantine();
    assert.deepEqual(
      moved.map(([from]) => from),
      [join(ws, '.codex')],
    );
    assert.equal(lstatSync(moved[0]![1]!).isSymbolicLink(), true, 'the link itself moved, not what it points at');
    assert.equal(existsSync(join(ws, 'evil', '.exec-bridge-claim-1-x')), true);
  } finally {
    guard.dispose();
  }
});
