import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readTokenFile, TokenFileError } from '../../../src/cli/tokenFile';

const dir = mkdtempSync(join(tmpdir(), 'eb-tokenfile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, content: string, mode: number) => {
  const p = join(dir, name);
  writeFileSync(p, content);
  chmodSync(p, mode);
  return p;
};

test('readTokenFile: a 0600 (or 0400) file of our own gives its content, trimmed', () => {
  assert.equal(readTokenFile(file('ok', '  s3cret-token\n', 0o600)), 's3cret-token');
  assert.equal(readTokenFile(file('ro', 'abc', 0o400)), 'abc');
});

test('readTokenFile: a file group or others may access is refused, naming the file and chmod 600', () => {
  for (const mode of [0o644, 0o640, 0o604, 0o660, 0o602, 0o610]) {
    const p = file(`m${mode.toString(8)}`, 'tok', mode);
    assert.throws(
      () => readTokenFile(p),
      (e: Error) =>
        e instanceof TokenFileError &&
        e.message.includes(p) &&
        e.message.includes(`mode 0${mode.toString(8)}`) &&
        e.message.includes(`chmod 600 ${p}`),
      mode.toString(8),
    );
  }
  const spaced = file('with space', 'tok', 0o644);
  assert.throws(
    () => readTokenFile(spaced),
    (e: Error) => e.message.includes(`chmod 600 '${spaced}'`),
    'the fix is a pasteable command',
  );
});

test("readTokenFile: empty or blank, missing, and another user's file are refused", () => {
  assert.throws(() => readTokenFile(file('empty', '', 0o600)), /--token-file .*empty is empty/);
  assert.throws(() => readTokenFile(file('blank', ' \n\t\n', 0o600)), /is empty/);
  assert.throws(() => readTokenFile(join(dir, 'missing'), '--token-file'), /cannot read --token-file .*missing: ENOENT/);
  if (process.getuid?.() === 0) {
    const theirs = file('theirs', 'tok', 0o600);
    chownSync(theirs, 65534, 65534);
    assert.throws(() => readTokenFile(theirs), /belongs to uid 65534, not to this user \(uid 0\)/);
  }
});
