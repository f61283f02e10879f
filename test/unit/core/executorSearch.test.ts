import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ExecutorSearch,
  fuzzyMatches,
  globToRegExp,
  grepArgs,
  inScope,
  parseGrepLine,
  parseRipgrepLine,
  queryRegExp,
  ripgrepArgs,
  ToolMissingError,
  type SearchProcesses,
  type TextMatch,
} from '../../../src/core/executorSearch';

const rgMatch = (path: string, line: number, text: string, subs: Array<[number, number]>) =>
  JSON.stringify({
    type: 'match',
    data: {
      path: { text: path },
      lines: { text },
      line_number: line,
      absolute_offset: 0,
      submatches: subs.map(([start, end]) => ({ match: { text: '' }, start, end })),
    },
  });

test('rg --json: a match becomes its line (0-based) and the columns of each submatch, in UTF-16 units', () => {
  // "naïve wörld": ï and ö are two bytes in UTF-8; "wörld" is bytes 7..13 and columns 6..11.
  assert.deepEqual(
    parseRipgrepLine(
      rgMatch('/p/a.txt', 2, 'naïve wörld wörld\n', [
        [7, 13],
        [14, 20],
      ]),
    ),
    [
      {
        path: '/p/a.txt',
        line: 1,
        text: 'naïve wörld wörld',
        ranges: [
          { start: 6, end: 11 },
          { start: 12, end: 17 },
        ],
      },
    ],
  );
  // Other messages (begin, end, summary, context) are not matches.
  assert.deepEqual(parseRipgrepLine('{"type":"begin","data":{"path":{"text":"/p/a.txt"}}}'), []);
  assert.deepEqual(parseRipgrepLine('not json'), []);
});

test('rg --json: a path that is not UTF-8 comes as bytes; a multi-line match gives each of its lines', () => {
  const bytesPath = JSON.stringify({
    type: 'match',
    data: {
      path: { bytes: Buffer.from('/p/ü.txt').toString('base64') },
      lines: { text: 'ab\r\n' },
      line_number: 7,
      submatches: [{ start: 0, end: 2 }],
    },
  });
  assert.deepEqual(parseRipgrepLine(bytesPath), [{ path: '/p/ü.txt', line: 6, text: 'ab', ranges: [{ start: 0, end: 2 }] }]);
  const multi = parseRipgrepLine(rgMatch('/p/m.txt', 3, 'one two\nthree four\n', [[4, 13]]));
  assert.deepEqual(
    multi.map((m) => [m.line, m.text, m.ranges]),
    [
      [2, 'one two', [{ start: 4, end: 7 }]],
      [3, 'three four', [{ start: 0, end: 5 }]],
    ],
  );
});

test('rg arguments: literal or regex, case, whole word, ignore files, globs; the pattern after --regexp, the folder after --', () => {
  const a = ripgrepArgs(
    { pattern: '-x', isCaseSensitive: false },
    { folder: '/srv/p', includes: ['**/*.ts'], excludes: ['**/node_modules'], useIgnoreFiles: false },
  );
  assert.deepEqual(a, [
    '--json',
    '--no-config',
    '--hidden',
    '--no-messages',
    '--ignore-case',
    '--fixed-strings',
    '--no-ignore',
    '--glob',
    '**/*.ts',
    '--glob',
    '!**/node_modules',
    '--regexp',
    '-x',
    '--',
    '/srv/p',
  ]);
  const r = ripgrepArgs(
    { pattern: 'a\\nb', isRegExp: true, isCaseSensitive: true, isWordMatch: true },
    { folder: '/p', followSymlinks: true },
  );
  assert.ok(r.includes('--case-sensitive') && r.includes('--word-regexp') && r.includes('--multiline') && r.includes('--follow'));
  assert.ok(!r.includes('--fixed-strings'));
});

test('grep fallback: NUL after the path, the line number, and where JS finds the pattern on the line', () => {
  const re = queryRegExp({ pattern: 'World', isCaseSensitive: false });
  assert.deepEqual(parseGrepLine(Buffer.from('/p/a b.txt\x0012:hello world, world\n'.slice(0, -1)), re), {
    path: '/p/a b.txt',
    line: 11,
    text: 'hello world, world',
    ranges: [
      { start: 6, end: 11 },
      { start: 13, end: 18 },
    ],
  });
  // A pattern JS reads otherwise than grep -P still gives the line.
  assert.deepEqual(parseGrepLine(Buffer.from('/p/x\x003:abc'), undefined)?.ranges, [{ start: 0, end: 0 }]);
  assert.equal(parseGrepLine(Buffer.from('Binary file matches'), re), undefined);
  const args = grepArgs(
    { pattern: 'a.b', isRegExp: true },
    { folder: '/p', includes: ['**/*.ts', 'src/**'], excludes: ['**/node_modules'] },
  );
  assert.deepEqual(args, [
    '-r',
    '-n',
    '-H',
    '-I',
    '-Z',
    '--color=never',
    '-P',
    '-i',
    '--exclude=node_modules',
    '--exclude-dir=node_modules',
    '-e',
    'a.b',
    '--',
    '/p',
  ]);
  assert.ok(grepArgs({ pattern: 'x' }, { folder: '/p', includes: ['**/*.ts', '**/*.js'] }).includes('--include=*.js'));
  assert.equal(queryRegExp({ pattern: 'a.b' })!.test('axb'), false, 'a literal query is escaped');
  assert.equal(queryRegExp({ pattern: 'ab', isWordMatch: true })!.test('xab'), false);
});

test('globs as VS Code writes them, for what grep cannot filter itself', () => {
  assert.equal(globToRegExp('**/*.ts').test('src/a.ts'), true);
  assert.equal(globToRegExp('**/*.ts').test('a.ts'), true);
  assert.equal(globToRegExp('**/*.ts').test('a.tsx'), false);
  assert.equal(globToRegExp('src/**').test('src/x/y.c'), true);
  assert.equal(globToRegExp('**/node_modules').test('web/node_modules/react/index.js'), true, 'a folder and all below it');
  assert.equal(globToRegExp('**/*.{js,ts}').test('a/b.js'), true);
  assert.equal(globToRegExp('?.c').test('ab.c'), false);
  assert.equal(inScope('src/a.ts', { folder: '/p', includes: ['src/**'], excludes: ['**/*.test.ts'] }), true);
  assert.equal(inScope('src/a.test.ts', { folder: '/p', includes: ['src/**'], excludes: ['**/*.test.ts'] }), false);
  assert.equal(inScope('lib/a.ts', { folder: '/p', includes: ['src/**'] }), false);
  assert.equal(fuzzyMatches('src/core/executorSearch.ts', 'exsea'), true);
  assert.equal(fuzzyMatches('src/core/executorSearch.ts', 'zzz'), false);
});

/** Processes of a fake executor: each argv[0] maps to what it prints, or to "not installed". */
function fakeProcesses(tools: Record<string, { stdout?: string; exitCode?: number; stderr?: string } | 'missing'>) {
  const ran: string[][] = [];
  const processes: SearchProcesses = {
    async run(argv, _cwd, onStdout, signal) {
      ran.push(argv);
      const t = tools[argv[0]!];
      if (!t || t === 'missing') throw new ToolMissingError(argv[0]);
      // In two pieces, split mid-line, as output arrives.
      const out = Buffer.from(t.stdout ?? '');
      const half = Math.floor(out.length / 2);
      onStdout(out.subarray(0, half));
      if (!signal.aborted) onStdout(out.subarray(half));
      return { exitCode: signal.aborted ? 137 : (t.exitCode ?? 0), stderr: t.stderr ?? '', sandboxed: true };
    },
  };
  return { processes, ran };
}

test('no rg on the executor: grep, and from then on grep straight away', async () => {
  const { processes, ran } = fakeProcesses({ rg: 'missing', grep: { stdout: '/p/a.txt\x001:needle here\n' } });
  const search = new ExecutorSearch(processes);
  const got: TextMatch[] = [];
  const r = await search.findText({ pattern: 'needle' }, { folder: '/p' }, { maxResults: 10, onMatch: (m) => got.push(m) });
  assert.deepEqual(r, { count: 1, limitHit: false, tool: 'grep', sandboxed: true });
  assert.deepEqual(got, [{ path: '/p/a.txt', line: 0, text: 'needle here', ranges: [{ start: 0, end: 6 }] }]);
  await search.findText({ pattern: 'needle' }, { folder: '/p' }, { maxResults: 10, onMatch: () => undefined });
  assert.deepEqual(
    ran.map((a) => a[0]),
    ['rg', 'grep', 'grep'],
  );
});

test('maxResults stops the search (limitHit); "nothing found" is no error; a failing tool is an error with its words', async () => {
  const many = Array.from({ length: 50 }, (_, i) => rgMatch('/p/f.txt', i + 1, `hit ${i}\n`, [[0, 3]])).join('\n') + '\n';
  const { processes } = fakeProcesses({ rg: { stdout: many } });
  const got: TextMatch[] = [];
  const r = await new ExecutorSearch(processes).findText(
    { pattern: 'hit' },
    { folder: '/p' },
    { maxResults: 5, onMatch: (m) => got.push(m) },
  );
  assert.deepEqual(r, { count: 5, limitHit: true, tool: 'rg', sandboxed: true });
  assert.equal(got.length, 5);

  const none = fakeProcesses({ rg: { stdout: '', exitCode: 1 } });
  assert.deepEqual(
    await new ExecutorSearch(none.processes).findText({ pattern: 'x' }, { folder: '/p' }, { maxResults: 5, onMatch: () => undefined }),
    {
      count: 0,
      limitHit: false,
      tool: 'rg',
      sandboxed: true,
    },
  );
  const broken = fakeProcesses({ rg: { stdout: '', exitCode: 2, stderr: 'rg: regex parse error:\n    (unclosed\n' } });
  await assert.rejects(
    new ExecutorSearch(broken.processes).findText(
      { pattern: '(', isRegExp: true },
      { folder: '/p' },
      { maxResults: 5, onMatch: () => undefined },
    ),
    /rg failed on the executor: rg: regex parse error:/,
  );
  const nothing = fakeProcesses({ rg: 'missing', grep: 'missing' });
  await assert.rejects(
    new ExecutorSearch(nothing.processes).findText({ pattern: 'x' }, { folder: '/p' }, { maxResults: 5, onMatch: () => undefined }),
    /neither ripgrep \(rg\) nor grep/,
  );
});

test('file search: rg --files, fuzzily filtered by the query, bounded', async () => {
  const { processes } = fakeProcesses({ rg: { stdout: '/p/src/main.ts\n/p/src/util.ts\n/p/notes.txt\n' } });
  const r = await new ExecutorSearch(processes).findFiles('srcts', { folder: '/p' }, { maxResults: 1 });
  assert.deepEqual(r, { paths: ['/p/src/main.ts'], limitHit: true });
});
