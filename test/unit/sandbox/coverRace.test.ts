import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CoverRaceWatch } from '../../../src/server/sandbox/coverRace';
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
