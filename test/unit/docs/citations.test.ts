/**
 * Every document the repository cites exists in it (docs/style.md §13: comments cite repository
 * files, never documents a clone does not have). Scans code, scripts, benchmarks, tests and docs for
 * `*.md` names and Markdown links, and resolves each the way a reader would: relative to the citing
 * Markdown file for a link, else from the repository root, else in `docs/`. The README and docs/
 * are also held to the code files and tests they cite (below).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';

const root = join(__dirname, '..', '..', '..', '..');
const SCANNED = ['src', 'scripts', 'bench', 'test', 'docs', 'README.md', '.ci'];
const SKIPPED_DIRS = new Set(['node_modules', 'out', 'dist', 'profiles', 'lint-fixtures']);
const EXTENSIONS = /\.(ts|mjs|js|md|json|sh)$|^run$/;
/** Cited names that are not files of ours, by design (a URL's path, another project's file). */
const FOREIGN = /^(https?:|www\.)/;
const SELF = 'test/unit/docs/citations.test.ts';

function* files(p: string): Generator<string> {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return;
  if (st.isFile()) {
    if (EXTENSIONS.test(p.split('/').pop()!)) yield p;
    return;
  }
  for (const name of readdirSync(p).sort()) {
    if (SKIPPED_DIRS.has(name) || name.startsWith('out-') || name.startsWith('.git')) continue;
    yield* files(join(p, name));
  }
}

/** `docs/x.md`, `x.md §3`, `[text](../docs/x.md#anchor)`: the cited paths of one file, with where they resolve from. */
function citations(text: string, isMarkdown: boolean): Array<{ path: string; link: boolean }> {
  const out: Array<{ path: string; link: boolean }> = [];
  if (isMarkdown) for (const m of text.matchAll(/\]\(([^)\s#]+\.md)(?:#[^)]*)?\)/g)) out.push({ path: m[1]!, link: true });
  const prose = isMarkdown ? text.replace(/\]\([^)]*\)/g, ']') : text;
  for (const m of prose.matchAll(/(?<![\w/.:-])((?:\.\.?\/)?[\w-]+(?:\/[\w.-]+)*\.md)\b/g)) out.push({ path: m[1]!, link: false });
  return out;
}

function resolves(path: string, from: string, link: boolean): boolean {
  if (FOREIGN.test(path)) return true;
  const candidates = link ? [join(dirname(from), path)] : [join(root, path), join(root, 'docs', path), join(dirname(from), path)];
  return candidates.some((c) => existsSync(c));
}

test('every *.md file that code, scripts, tests and docs cite exists in the repository', () => {
  const missing: string[] = [];
  let checked = 0;
  for (const top of SCANNED) {
    for (const file of files(join(root, top))) {
      if (relative(root, file) === SELF) continue; // its examples of missing files are meant to be missing
      const text = readFileSync(file, 'utf8');
      for (const { path, link } of citations(text, file.endsWith('.md'))) {
        checked++;
        if (!resolves(path, file, link)) missing.push(`${relative(root, file)} cites ${path}`);
      }
    }
  }
  assert.ok(checked > 100, `only ${checked} citations found: is the scan looking in the right place?`);
  assert.deepEqual(missing, []);
});

test('the scan finds a missing citation (so the test above can fail)', () => {
  const found = citations('see docs/nowhere.md §2 and [this](./gone.md#x)', true);
  assert.deepEqual(found, [
    { path: './gone.md', link: true },
    { path: 'docs/nowhere.md', link: false },
  ]);
  assert.equal(resolves('docs/nowhere.md', join(root, 'README.md'), false), false);
  assert.equal(resolves('docs/architecture.md', join(root, 'README.md'), false), true);
});

/**
 * The pages we write for readers (README.md, docs/*.md) also cite code: `src/…`, `test/…`,
 * `scripts/…` paths (a `.ts`/`.mjs` extension may be left out; `{a,b}` and `*` as a shell would
 * expand them), a layer's files as `core/x.ts`, images under `docs/` and `media/`, and test files
 * by their bare name (`interop.test.ts`). A file that moved or was
 * renamed leaves such a citation behind; code and tests are not scanned for these, since their
 * `src/a.ts` is often a path of a test's own fixture.
 */
const PAGES = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`),
];
/** Paths the pages show as examples of what a user sees, not as files of ours. */
const EXAMPLES = new Set(['src/file.ts']);

function codeCitations(text: string): { paths: string[]; testNames: string[] } {
  const paths = [...text.matchAll(/(?<![\w/.:$-])((?:src|test|scripts|bench|docs|media|\.ci)\/[\w./{},*-]*[\w}*])/g)].map((m) => m[1]!);
  // `core/x.ts` in a page is `src/core/x.ts` (architecture.md writes a layer's files so).
  for (const m of text.matchAll(/(?<![\w/.@-])((?:util|protocol|rpc|client|server|mcp|core|vscode|cli)\/[\w./-]*\.ts)\b/g))
    paths.push(`src/${m[1]!}`);
  const testNames = [...text.matchAll(/(?<![\w/.*}-])([\w-]+\.(?:test|ui)\.ts)\b/g)].map((m) => m[1]!);
  return { paths, testNames };
}

/** `a/{b,c}/d` as `a/b/d` and `a/c/d`. */
function braces(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1]!.split(',').flatMap((alt) => braces(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length)));
}

/** Whether some file or folder is at `path` from the root (each segment may hold `*`), with or without a code extension. */
function existsInRepo(path: string): boolean {
  const segments = path.split('/');
  const walk = (dir: string, i: number): boolean => {
    const segment = segments[i]!;
    const last = i === segments.length - 1;
    const names = segment.includes('*')
      ? readdirSync(dir, { withFileTypes: true })
          .filter((d) => new RegExp(`^${segment.replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`).test(d.name))
          .map((d) => d.name)
      : last
        ? ['', '.ts', '.mjs'].map((ext) => segment + ext)
        : [segment];
    return names.some((name) => {
      const p = join(dir, name);
      if (last) return existsSync(p);
      return statSync(p, { throwIfNoEntry: false })?.isDirectory() === true && walk(p, i + 1);
    });
  };
  return walk(root, 0);
}

function testFileNames(dir: string, into = new Set<string>()): Set<string> {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (d.isDirectory()) testFileNames(join(dir, d.name), into);
    else into.add(d.name);
  }
  return into;
}

function staleCodeCitations(text: string, testNames: Set<string>): string[] {
  const found = codeCitations(text);
  const stale = found.paths.filter((p) => !EXAMPLES.has(p) && !braces(p).every(existsInRepo));
  return [...stale, ...found.testNames.filter((n) => !testNames.has(n))];
}

test('every src/, test/ and scripts/ path and every test file the README and docs/ cite exists', () => {
  const names = testFileNames(join(root, 'test'));
  const stale: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    const text = readFileSync(join(root, page), 'utf8');
    const found = codeCitations(text);
    checked += found.paths.length + found.testNames.length;
    stale.push(...staleCodeCitations(text, names).map((c) => `${page} cites ${c}`));
  }
  assert.ok(checked > 200, `only ${checked} code citations found: is the scan looking in the right place?`);
  assert.deepEqual(stale, []);
});

test('the code-citation scan finds a moved test, a missing file and an unknown test name', () => {
  const names = testFileNames(join(root, 'test'));
  const text = [
    'Tests: `test/unit/core/terminalRun.test.ts`, `test/integration/core/terminalRun.test.ts`,',
    '`test/{unit,integration}/core/terminalReplayRange.test.ts`, `test/{unit,integration}/core/terminalRun.test.ts`,',
    'src/client/sshConnector, `src/client/nowhere.ts`, `test/integration/mcp*.test.ts`, `test/integration/zz*.test.ts`,',
    '`interop.test.ts` and `nowhere.test.ts`; a printed path: `src/file.ts(12,5)`; `core/terminalRun.ts`, `core/nowhere.ts`.',
  ].join('\n');
  assert.deepEqual(staleCodeCitations(text, names), [
    'test/unit/core/terminalRun.test.ts',
    'test/{unit,integration}/core/terminalRun.test.ts',
    'src/client/nowhere.ts',
    'test/integration/zz*.test.ts',
    'src/core/nowhere.ts',
    'nowhere.test.ts',
  ]);
});

/**
 * A symbol the pages place in a file of `src/` — `` `src/x.ts` (`a`, `b`) ``, `` `A` (`core/x.ts`) ``,
 * `` (`a`, `src/x.ts`) `` — is defined there (a declaration or a member, not only an import): a
 * function that moved to a file of its own leaves such a citation behind.
 */
const LAYER_FILE = String.raw`(?:src\/)?(?:util|protocol|rpc|client|server|mcp|core|vscode|cli)\/[\w./-]+\.ts`;
const SYMBOL = String.raw`[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?(?:\(\))?`;
/** Names the pages give as another project's, beside our file that holds the shape. */
const FOREIGN_SYMBOLS = new Set(['FileSystemSandboxContext']);

function symbolCitations(text: string): Array<{ file: string; symbol: string }> {
  const out: Array<{ file: string; symbol: string }> = [];
  const file = (f: string): string => (f.startsWith('src/') ? f : `src/${f}`);
  const list = new RegExp(String.raw`\`(${LAYER_FILE})\` \(((?:\`${SYMBOL}\`(?:, | and | or |\/)?)+)[),;:]`, 'g');
  for (const m of text.matchAll(list)) {
    for (const s of m[2]!.matchAll(new RegExp(`\`(${SYMBOL})\``, 'g'))) out.push({ file: file(m[1]!), symbol: s[1]! });
  }
  for (const m of text.matchAll(new RegExp(String.raw`\`(${SYMBOL})\` \(\`(${LAYER_FILE})\`[),;:]`, 'g'))) {
    out.push({ file: file(m[2]!), symbol: m[1]! });
  }
  for (const m of text.matchAll(new RegExp(String.raw`\(\`(${SYMBOL})\`, \`(${LAYER_FILE})\`\)`, 'g'))) {
    out.push({ file: file(m[2]!), symbol: m[1]! });
  }
  return out.filter((c) => !FOREIGN_SYMBOLS.has(c.symbol));
}

function definedIn(file: string, symbol: string): boolean {
  const path = join(root, file);
  if (!existsSync(path)) return false;
  const name = symbol.replace(/\(\)$/, '').split('.').pop()!.replace(/\$/g, '\\$');
  const declaration = String.raw`(?:function\*?|class|const|let|var|interface|type|enum)\s+${name}\b`;
  const member = String.raw`^\s*(?:(?:public|private|protected|static|readonly|async|get|set|override)\s+)*${name}\s*[(<=:?]`;
  return new RegExp(`${declaration}|${member}`, 'm').test(readFileSync(path, 'utf8'));
}

test('every symbol the README and docs/ place in a src/ file is defined in that file', () => {
  const stale: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    for (const { file, symbol } of symbolCitations(readFileSync(join(root, page), 'utf8'))) {
      checked++;
      if (!definedIn(file, symbol)) stale.push(`${page} places ${symbol} in ${file}`);
    }
  }
  assert.ok(checked > 10, `only ${checked} symbol citations found: is the scan looking in the right place?`);
  assert.deepEqual(stale, []);
});

test('the symbol scan finds a symbol cited in a file that only imports it', () => {
  const text =
    'bwrap gets it with `--setenv` (`hostLaunchEnv`, `src/server/sandbox/planner.ts`); `attachNewest` (`core/terminalReplayRange.ts`).';
  const found = symbolCitations(text);
  assert.deepEqual(found, [
    { file: 'src/core/terminalReplayRange.ts', symbol: 'attachNewest' },
    { file: 'src/server/sandbox/planner.ts', symbol: 'hostLaunchEnv' },
  ]);
  assert.deepEqual(
    found.map((c) => definedIn(c.file, c.symbol)),
    [true, false],
  );
  assert.equal(definedIn('src/server/sandbox/hostLaunchEnv.ts', 'hostLaunchEnv'), true);
});
