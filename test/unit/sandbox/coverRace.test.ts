import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CoverRaceWatch, dirIdentity } from '../../../src/server/sandbox/coverRace';
import { COVER_NAME } from '../../../src/util/privateDir';

const base = mkdtempSync(join(tmpdir(), 'eb-cover-watch-'));
after(() => rmSync(base, { recursive: true, force: true }));
const gone = join(base, 'gone'); // a covered directory that vanished (never made here)
const there = join(base, 'there');
mkdirSync(join(there, COVER_NAME), { recursive: true, mode: 0o700 });

function feedAll(watch: CoverRaceWatch, parts: Array<['stdout' | 'stderr', string]>): string[] {
  const out: string[] = [];
  for (const [stream, text] of parts) watch.feed(stream, Buffer.from(text), (s, d) => out.push(`${s}:${d.toString()}`));
  return out;
}
const bwrapLine = (dir: string) =>
  [
    ['stderr', 'bwrap: '],
    ['stderr', `Can't bind mount /oldroot${dir}/${COVER_NAME} on /newroot${dir}`],
    ['stderr', ': No such file or directory\n'],
  ] as Array<['stdout' | 'stderr', string]>;

test("bwrap's message about a vanished cover, in its three writes, is held and judged a race", () => {
  const watch = new CoverRaceWatch([there, gone]);
  assert.deepEqual(feedAll(watch, bwrapLine(gone)), []);
  watch.wroteStdin(Buffer.from('in'));
  assert.ok(watch.holding);
  const raced = watch.raced(1);
  assert.equal(raced?.dir, gone);
  assert.deepEqual(raced?.stdin.map(String), ['in']);
  assert.equal(watch.raced(2), undefined, "bwrap's own failure exits 1");
});

test('a cover still there, a directory the plan does not cover, or a prefix of a path: no race', () => {
  const still = new CoverRaceWatch([there]);
  feedAll(still, bwrapLine(there));
  assert.ok(still.holding);
  assert.equal(still.raced(1), undefined);
  // Not about a directory this plan covers: out as soon as the line is whole.
  const other = new CoverRaceWatch([there]);
  assert.deepEqual(
    feedAll(other, bwrapLine(gone)).join(''),
    `stderr:bwrap: stderr:Can't bind mount /oldroot${gone}/${COVER_NAME} on /newroot${gone}stderr:: No such file or directory\n`,
  );
  const prefix = new CoverRaceWatch([join(base, 'go')]);
  feedAll(prefix, bwrapLine(gone));
  assert.equal(prefix.raced(1), undefined);
});

test('anything else releases what was held, in order, and ends the watch', () => {
  const watch = new CoverRaceWatch([gone]);
  const out = feedAll(watch, [
    ['stderr', 'bwr'],
    ['stdout', 'x'],
    ['stderr', 'bwrap: later\n'],
  ]);
  assert.deepEqual(out, ['stderr:bwr', 'stdout:x', 'stderr:bwrap: later\n']);
  assert.equal(watch.holding, false);
  const twoLines = new CoverRaceWatch([gone]);
  assert.deepEqual(feedAll(twoLines, [['stderr', 'bwrap: a\nb']]), ['stderr:bwrap: a\nb']);
  const notBwrap = new CoverRaceWatch([gone]);
  assert.deepEqual(feedAll(notBwrap, [['stderr', 'warning: x']]), ['stderr:warning: x']);
});

test('stdin past the bound makes a retry impossible (the failure is then reported as it is)', () => {
  const watch = new CoverRaceWatch([gone]);
  feedAll(watch, bwrapLine(gone));
  watch.wroteStdin(Buffer.alloc(1024 * 1024 + 1));
  assert.equal(watch.raced(1), undefined);
});

test("another process's directory hidden under a tmpfs that vanished under bwrap is a race too; one still there is not", () => {
  const remount = (dir: string) =>
    [
      ['stderr', 'bwrap: '],
      ['stderr', `Can't remount readonly on /newroot${dir}: Unable to remount destination "/newroot${dir}" with correct flags`],
      ['stderr', ': No such file or directory\n'],
    ] as Array<['stdout' | 'stderr', string]>;
  const planned = (dir: string) => ({ dir, id: dirIdentity(lstatSync(dir)) });
  const thereAsPlanned = planned(there);
  const watch = new CoverRaceWatch([], [thereAsPlanned, { dir: gone, id: '1:2:3' }]);
  assert.deepEqual(feedAll(watch, remount(gone)), []);
  assert.equal(watch.raced(1)?.dir, gone);
  // `there` is still the directory planned (its cover is beside the point for a tmpfs): the failure is reported as it is.
  const still = new CoverRaceWatch([], [thereAsPlanned]);
  feedAll(still, remount(there));
  assert.equal(still.raced(1), undefined);
  // Removed and made again meanwhile (as any bwrap building a sandbox with the old plan does, stop 35's CI): a race.
  const remade = join(base, 'remade');
  mkdirSync(remade);
  const remadeAsPlanned = planned(remade);
  rmSync(remade, { recursive: true });
  mkdirSync(join(base, 'filler')); // the old inode number is not free for the next directory
  mkdirSync(remade);
  const again = new CoverRaceWatch([], [remadeAsPlanned]);
  feedAll(again, remount(remade));
  assert.equal(again.raced(1)?.dir, remade);
  // A covered directory is judged by its cover, not by itself: `there` has one.
  const covered = new CoverRaceWatch([there], []);
  feedAll(covered, remount(there));
  assert.equal(covered.raced(1), undefined);
});
