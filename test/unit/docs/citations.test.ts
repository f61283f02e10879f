/**
 * Every document the repository cites exists in it (docs/style.md §13: comments cite repository
 * files, never documents a clone does not have). Scans code, scripts, benchmarks, tests and docs for
 * `*.md` names and Markdown links, and resolves each the way a reader would: relative to the citing
 * Markdown file for a link, else from the repository root, else in `docs/`.
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
