/**
 * The layer rules of eslint.config.mjs (docs/architecture.md, "Layers") on the fixtures in
 * test/lint-fixtures. Each fixture names the path it is linted as (`// lint-as: src/core/x.ts`,
 * a virtual file: the rules go by path) and every message it must produce (`// expect: rule: message`);
 * a fixture without `expect` lines must produce none at all. The .mjs fixtures are the plain ES
 * modules of scripts/ and bench/, linted with type information (their typed promise rules).
 */
import { ESLint } from 'eslint';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

function repoRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 10 && !existsSync(join(dir, 'eslint.config.mjs')); i++) dir = dirname(dir);
  assert.ok(existsSync(join(dir, 'eslint.config.mjs')), `no eslint.config.mjs above ${__dirname}`);
  return dir;
}

const ROOT = repoRoot();
const FIXTURES = join(ROOT, 'test', 'lint-fixtures');

// The real config, minus type information: virtual files are in no tsconfig project, so the one
// rule that needs types is off. Everything else (the layer rules included) runs as in `npx eslint`.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: join(ROOT, 'eslint.config.mjs'),
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
});

// The .mjs fixtures keep the typed rules. The config types scripts/ and bench/ with the program of
// tsconfig.scripts.json, which a virtual file is not in; here the project service gives such a file a
// program of its own with that tsconfig's options (allowJs, checkJs, strict).
const typedEslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: join(ROOT, 'eslint.config.mjs'),
  overrideConfig: {
    files: ['**/*.mjs'],
    languageOptions: {
      parserOptions: {
        project: null,
        projectService: { allowDefaultProject: ['scripts/*.mjs', 'bench/*.mjs'], defaultProject: 'tsconfig.scripts.json' },
      },
    },
  },
});

interface Fixture {
  name: string;
  lintAs: string;
  expected: string[];
  text: string;
}

function readFixture(name: string): Fixture {
  const text = readFileSync(join(FIXTURES, name), 'utf8');
  const lintAs = /^\/\/ lint-as: (\S+)$/m.exec(text)?.[1];
  assert.ok(lintAs, `${name}: no "// lint-as:" line`);
  const expected = [...text.matchAll(/^\/\/ expect: (.+)$/gm)].map((m) => m[1]!);
  return { name, lintAs, expected, text };
}

const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.ts') || f.endsWith('.mjs'))
  .sort()
  .map(readFixture);

test('there are fixtures that must fail and fixtures that must pass', () => {
  assert.ok(fixtures.filter((f) => f.expected.length > 0).length >= 10, 'failing fixtures');
  assert.ok(fixtures.filter((f) => f.expected.length === 0).length >= 3, 'passing fixtures');
});

for (const fixture of fixtures) {
  test(`lint fixture ${fixture.name} as ${fixture.lintAs}: ${fixture.expected.length} message(s)`, async () => {
    const linter = fixture.name.endsWith('.mjs') ? typedEslint : eslint;
    const [result] = await linter.lintText(fixture.text, { filePath: join(ROOT, fixture.lintAs) });
    assert.ok(result, 'a lint result');
    const got = result.messages.map((m) => `${m.ruleId ?? '(no rule)'}: ${m.message}`);
    assert.deepEqual(got.sort(), [...fixture.expected].sort());
  });
}
