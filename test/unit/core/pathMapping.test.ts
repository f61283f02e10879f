import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  executorFileUri,
  executorToLocal,
  findPathLinks,
  localToExecutor,
  outputRewriter,
  StreamReplacer,
} from '../../../src/core/pathMapping';

const m = { local: '/home/me/proj', executor: '/srv/proj/' };

test('paths map both ways inside the mapped folder only', () => {
  assert.equal(executorToLocal('/srv/proj/src/a.ts', m), '/home/me/proj/src/a.ts');
  assert.equal(executorToLocal('/srv/proj', m), '/home/me/proj');
  assert.equal(executorToLocal('/srv/project/a', m), undefined);
  assert.equal(executorToLocal('/srv/proj/../x', m), undefined);
  assert.equal(localToExecutor('/home/me/proj/a/../b', m), '/srv/proj/b');
  assert.equal(localToExecutor('/home/me/other', m), undefined);
  assert.equal(localToExecutor('/x/y', { local: '/', executor: '/mnt/host' }), '/mnt/host/x/y');
});

test('executor file URIs encode the executor name and each path segment', () => {
  assert.equal(executorFileUri('bundled', '/home/me/a b#.txt'), 'execbridge://bundled/home/me/a%20b%23.txt');
  assert.equal(executorFileUri('dev box', '/'), 'execbridge://dev%20box/');
});

test('the stream replacer finds occurrences split across chunks and holds back only a possible start', () => {
  const r = new StreamReplacer('/srv/proj/', '/home/me/proj/');
  const chunks = ['error at /sr', 'v/pr', 'oj/a.ts(1,2): x\n/s', 'rv/other /srv', '/proj/b.ts'];
  const out = chunks.map((c) => r.push(c)).join('') + r.end();
  assert.equal(out, 'error at /home/me/proj/a.ts(1,2): x\n/srv/other /home/me/proj/b.ts');
  // Nothing is held when the tail cannot start an occurrence.
  assert.equal(r.push('plain text'), 'plain text');
  assert.equal(r.push('ends with /'), 'ends with ');
  assert.equal(r.end(), '/');
  assert.equal(outputRewriter({ local: '/a', executor: '/a/' }), undefined);
});

test('path links: tsc, gcc and plain paths, with line and column', () => {
  assert.deepEqual(findPathLinks('/srv/p/src/a.ts(12,5): error TS2322: bad'), [
    { start: 0, length: 21, path: '/srv/p/src/a.ts', line: 12, column: 5 },
  ]);
  assert.deepEqual(findPathLinks('in /srv/p/m.c:3:14: warning'), [{ start: 3, length: 15, path: '/srv/p/m.c', line: 3, column: 14 }]);
  assert.deepEqual(findPathLinks('see /etc/hosts.'), [{ start: 4, length: 10, path: '/etc/hosts' }]);
  assert.deepEqual(findPathLinks('url http://x/y and a/b/c and ~/x'), []);
  assert.deepEqual(
    findPathLinks("'/a/b' /c:7").map((l) => [l.path, l.line]),
    [
      ['/a/b', undefined],
      ['/c', 7],
    ],
  );
});

test('relative paths with a line suffix resolve against the cwd; without a cwd, or without a suffix or an extension, they are no links', () => {
  const cwd = '/srv/p';
  assert.deepEqual(findPathLinks("src/app.ts(3,7): error TS2322: Type 'string'", cwd), [
    { start: 0, length: 15, path: '/srv/p/src/app.ts', relative: true, line: 3, column: 7 },
  ]);
  assert.deepEqual(
    findPathLinks('./m.c:3:14: warning; ../lib/x.py:9', cwd).map((l) => [l.start, l.path, l.line, l.column]),
    [
      [0, '/srv/p/m.c', 3, 14],
      [21, '/srv/lib/x.py', 9, undefined],
    ],
  );
  // Absolute and relative in one line, in line order; the absolute one is not also taken as relative.
  assert.deepEqual(
    findPathLinks('a.ts:1 and /srv/p/b.ts:2', cwd).map((l) => [l.start, l.path, l.relative ?? false]),
    [
      [0, '/srv/p/a.ts', true],
      [11, '/srv/p/b.ts', false],
    ],
  );
  assert.deepEqual(findPathLinks('src/app.ts(3,7)'), [], 'no cwd: no relative links');
  assert.deepEqual(findPathLinks('see src/app.ts and Makefile:3 and http://x.io:80 and user@h.com:22', cwd), []);
});
