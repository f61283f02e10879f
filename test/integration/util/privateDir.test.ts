/**
 * The registry of runtime directories (src/util/privateDir.ts) with real processes: live, dead and
 * zombie servers' entries, and a printed fix run through the real /bin/sh. The rest is
 * test/unit/util/privateDir.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { COVER_NAME, fixedPrivateDirs, privateDir, sandboxHiddenDirs } from '../../../src/util/privateDir';
import { entryFor, hidden, registryTestBase } from '../../helpers/runtimeDirRegistry';

const base = registryTestBase();
/** A pid that is certainly dead: a child that has exited and been reaped. */
const deadPid = () => spawnSync('true').pid!;

after(() => rmSync(base, { recursive: true, force: true }));

test('another server’s directory: bound over by its cover, a tmpfs without one, listed while gone; a dead process’s entry goes', () => {
  const covered = join(base, 'live-covered');
  const bare = join(base, 'live-bare');
  const gone = join(base, 'live-gone');
  const dead = join(base, 'dead');
  for (const d of [covered, bare, gone, dead]) mkdirSync(d, { mode: 0o700 });
  for (const d of [covered, dead]) mkdirSync(join(d, COVER_NAME), { mode: 0 });
  // This process stands for the live server; a reaped child for a dead one.
  for (const d of [covered, bare, gone]) symlinkSync(d, entryFor(d, process.pid));
  const pid = deadPid();
  symlinkSync(dead, entryFor(dead, pid));
  rmSync(gone, { recursive: true });
  try {
    const d = sandboxHiddenDirs({});
    assert.ok(d.others.includes(covered), 'a cover: bound over it');
    assert.ok(d.own.includes(bare), 'no cover: a tmpfs');
    // Another process's: it may go while a sandbox is built (the start is then run again, src/server/sandbox/coverRace.ts).
    const transient = d.transient ?? [];
    assert.ok(transient.includes(bare) && !transient.includes(covered));
    assert.ok(!transient.some((t) => fixedPrivateDirs().includes(t)), 'the fixed places are ours to keep');
    assert.equal(existsSync(join(bare, COVER_NAME)), false, 'a build makes nothing in another server’s directory');
    // Gone while its process lives: listed still (bwrap skips a missing cover), so the argv stays the same.
    assert.ok(d.others.includes(gone));
    // Dead: what it holds opens nothing; not hidden, and its entry goes.
    assert.ok(!d.others.includes(dead) && !d.own.includes(dead));
    assert.equal(lstatSync(entryFor(dead, pid), { throwIfNoEntry: false }), undefined, 'the dead process’s entry went');
  } finally {
    for (const d of [covered, bare, gone]) rmSync(entryFor(d, process.pid), { force: true });
  }
});

test('a zombie is not a live process: its directory is not hidden', async () => {
  // The background `sleep 1` exits after sh has exec'd `sleep 30`, which never reaps it: a zombie, for
  // which kill(pid, 0) still succeeds. (A child that exits before the exec may be reaped by sh itself.)
  const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    const state = () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.[0];
      } catch {
        return undefined; // reaped
      }
    };
    for (let i = 0; i < 800 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(state(), 'Z', 'the child is a zombie');
    const dir = join(base, 'zombie');
    mkdirSync(dir, { mode: 0o700 });
    mkdirSync(join(dir, COVER_NAME), { mode: 0 });
    symlinkSync(dir, entryFor(dir, pid));
    const d = sandboxHiddenDirs({});
    assert.ok(!d.others.includes(dir) && !d.own.includes(dir));
    assert.equal(lstatSync(entryFor(dir, pid), { throwIfNoEntry: false }), undefined);
  } finally {
    parent.kill('SIGKILL');
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

// Issue 24 item 6: the fix a refusal prints is a command that works when pasted, spaces and all.
test('a private directory open to others is refused with a chmod that, pasted in sh, fixes it', () => {
  const dir = join(base, "it's a dir");
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  let message = '';
  try {
    privateDir({ EXEC_BRIDGE_RUNTIME_DIR: dir });
  } catch (e) {
    message = (e as Error).message;
  }
  const command = /run `([^`]+)` and try again/.exec(message)?.[1];
  assert.ok(command, message);
  const r = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(lstatSync(dir).mode & 0o777, 0o700);
  assert.equal(privateDir({ EXEC_BRIDGE_RUNTIME_DIR: dir }), dir);
});
