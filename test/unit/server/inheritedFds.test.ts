import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { closeInheritedFds } from '../../../src/server/inheritedFds';

const base = mkdtempSync(join(tmpdir(), 'eb-fds-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** A stand-in for /proc/self: `fd/<n>` entries and their `fdinfo/<n>` (undefined: no fdinfo, as for a descriptor gone meanwhile). */
function procSelf(name: string, fds: Record<number, string | undefined>): string {
  const dir = join(base, name);
  mkdirSync(join(dir, 'fd'), { recursive: true });
  mkdirSync(join(dir, 'fdinfo'));
  for (const [fd, info] of Object.entries(fds)) {
    writeFileSync(join(dir, 'fd', fd), '');
    if (info !== undefined) writeFileSync(join(dir, 'fdinfo', fd), info);
  }
  return dir;
}

const info = (flags: string) => `pos:\t0\nflags:\t${flags}\nmnt_id:\t25\nino:\t1234\n`;

test('closes every descriptor above stderr without close-on-exec, and only those', { skip: process.platform !== 'linux' }, () => {
  const dir = procSelf('mixed', {
    0: info('0100002'),
    1: info('01'),
    2: info('01'),
    3: info('02000002'), // Node's epoll: close-on-exec
    4: info('02100000'),
    7: info('0100000'), // an inherited directory (O_LARGEFILE only)
    9: undefined, // gone while we looked (the listing's own descriptor)
    11: 'pos:\t0\n', // no flags line: not ours to judge
    200: info('00'),
  });
  const closed: number[] = [];
  assert.deepEqual(
    closeInheritedFds(dir, (fd) => closed.push(fd))?.sort((a, b) => a - b),
    [7, 200],
  );
  assert.deepEqual(
    closed.sort((a, b) => a - b),
    [7, 200],
  );
});

test('a descriptor whose close fails is not reported; no /proc means nothing is closed', { skip: process.platform !== 'linux' }, () => {
  const dir = procSelf('failing', { 5: info('00'), 6: info('00') });
  const result = closeInheritedFds(dir, (fd) => {
    if (fd === 5) throw new Error('EBADF');
  });
  assert.deepEqual(result, [6]);
  assert.equal(
    closeInheritedFds(join(base, 'missing'), () => assert.fail('nothing to close')),
    undefined,
  );
});
