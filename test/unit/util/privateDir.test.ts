/**
 * The registry of runtime directories (src/util/privateDir.ts): what a server whose private
 * directory is not a fixed place records, and what every sandbox build then hides, whatever its
 * own environment (docs/security.md, "Our private directory"). Real directories: the fixed place
 * `/tmp/exec-bridge-<uid>` is shared with every other test and server of this user, so each case
 * only looks at its own entries.
 */
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { COVER_NAME, fixedPrivateDirs, privateDir, sandboxHiddenDirs } from '../../../src/util/privateDir';
import { entryFor, hidden, REGISTRY, registryTestBase } from '../../helpers/runtimeDirRegistry';

const base = registryTestBase();

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
  const stray = join(REGISTRY, 'not-an-entry');
  symlinkSync('/usr', stray);
  try {
    assert.ok(!hidden().includes('/usr'));
  } finally {
    rmSync(stray, { force: true });
  }
});
