/**
 * The registry of runtime directories (src/util/privateDir.ts): what a server whose private
 * directory is not a fixed place records, and what every sandbox build then hides, whatever its
 * own environment (docs/security.md, "Our private directory"). Real directories: the fixed place
 * `/tmp/exec-bridge-<uid>` is shared with every other test and server of this user, so each case
 * only looks at its own entries.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, lutimesSync, mkdirSync, mkdtempSync, readlinkSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { COVER_NAME, fixedPrivateDirs, privateDir, sandboxHiddenDirs } from '../../../src/util/privateDir';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-registry-')));
const registry = join(fixedPrivateDirs().at(-1)!, 'runtime-dirs');
const entryFor = (dir: string, pid: number) => join(registry, `${createHash('sha256').update(dir).digest('hex').slice(0, 32)}-${pid}`);
/** A pid that is certainly dead: a child that has exited and been reaped. */
const deadPid = () => spawnSync('true').pid!;
const hidden = () => {
  const d = sandboxHiddenDirs({});
  return [...d.own, ...d.others];
};

after(() => rmSync(base, { recursive: true, force: true }));

test('a runtime directory from EXEC_BRIDGE_RUNTIME_DIR is registered, and hidden by a build whose environment does not name it', () => {
  const dir = join(base, 'runtime');
  const made = privateDir({ EXEC_BRIDGE_RUNTIME_DIR: dir });
  assert.equal(made, dir);
  assert.equal(readlinkSync(entryFor(dir, process.pid)), dir, 'the entry names the directory');
  const d = sandboxHiddenDirs({});
  assert.ok(d.others.includes(dir), `hidden without the variable: ${JSON.stringify(d)}`);
  const cover = lstatSync(join(dir, COVER_NAME));
  assert.ok(cover.isDirectory() && (cover.mode & 0o777) === 0, 'an empty mode-000 cover to bind over it');
  // Fixed places need no entry: every server computes them alike and hides them.
  for (const f of fixedPrivateDirs()) assert.ok(d.own.includes(realpathSync(f)), f);
});

test('an XDG_RUNTIME_DIR other than /run/user/<uid> is registered as well', () => {
  const xdg = join(base, 'xdg');
  mkdirSync(xdg, { mode: 0o700 });
  const dir = privateDir({ XDG_RUNTIME_DIR: xdg });
  assert.equal(dir, join(xdg, 'exec-bridge'));
  assert.ok(hidden().includes(dir));
});

test('another server’s directory: covered by its cover, by a tmpfs while its process lives without one, not at all once dead without one', () => {
  const covered = join(base, 'dead-covered');
  const bare = join(base, 'dead-bare');
  const liveBare = join(base, 'live-bare');
  const gone = join(base, 'dead-gone');
  for (const d of [covered, bare, liveBare, gone]) mkdirSync(d, { mode: 0o700 });
  mkdirSync(join(covered, COVER_NAME), { mode: 0 });
  const pid = deadPid();
  for (const d of [covered, bare, gone]) symlinkSync(d, entryFor(d, pid));
  symlinkSync(liveBare, entryFor(liveBare, process.pid));
  rmSync(gone, { recursive: true });
  try {
    const d = sandboxHiddenDirs({});
    assert.ok(d.others.includes(covered), 'a cover: bound over it');
    assert.ok(d.own.includes(liveBare), 'no cover, its process lives: a tmpfs');
    assert.ok(!d.others.includes(bare) && !d.own.includes(bare), 'no cover, no live process: nothing to hide');
    assert.equal(existsSync(join(bare, COVER_NAME)), false, 'a build makes nothing in another server’s directory');
    // Gone: listed still (bwrap skips a missing cover), so the argv of sandboxes built ahead of time stays the same.
    assert.ok(d.others.includes(gone));
    assert.ok(lstatSync(entryFor(gone, pid), { throwIfNoEntry: false }), 'its entry stays');
    // Ten minutes later it is forgotten.
    const old = new Date(Date.now() - 11 * 60_000);
    lutimesSync(entryFor(gone, pid), old, old);
    assert.ok(!sandboxHiddenDirs({}).others.includes(gone));
    assert.equal(lstatSync(entryFor(gone, pid), { throwIfNoEntry: false }), undefined, 'its entry went');
  } finally {
    for (const d of [covered, bare]) rmSync(entryFor(d, pid), { force: true });
    rmSync(entryFor(liveBare, process.pid), { force: true });
  }
});

test('dead duplicates of a live entry are dropped; the live one stays', () => {
  const dir = join(base, 'shared');
  privateDir({ EXEC_BRIDGE_RUNTIME_DIR: dir });
  const pid = deadPid();
  symlinkSync(dir, entryFor(dir, pid));
  assert.ok(hidden().includes(dir));
  assert.equal(lstatSync(entryFor(dir, pid), { throwIfNoEntry: false }), undefined, 'the dead duplicate was dropped');
  assert.ok(lstatSync(entryFor(dir, process.pid), { throwIfNoEntry: false }));
});

test('what an older version left in the temp directory (exec-bridge-fifo-*, exec-bridge-run-*) is hidden, other names are not', () => {
  // A temp directory of this test's own: a real /tmp entry that comes and goes would change every
  // other server's sandboxes meanwhile.
  const tmp = join(base, 'tmp');
  mkdirSync(tmp);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    const fifo = mkdtempSync(join(tmp, 'exec-bridge-fifo-'));
    const run = mkdtempSync(join(tmp, 'exec-bridge-run-'));
    const other = mkdtempSync(join(tmp, 'exec-bridge-other-'));
    const h = hidden();
    assert.ok(h.includes(fifo) && h.includes(run), JSON.stringify(h));
    assert.ok(!h.includes(other));
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
});

test('only well-formed entries count: a stray link in the registry is ignored, not followed', () => {
  const stray = join(registry, 'not-an-entry');
  symlinkSync('/usr', stray);
  try {
    assert.ok(!hidden().includes('/usr'));
  } finally {
    rmSync(stray, { force: true });
  }
});
