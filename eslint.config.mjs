// Lint = docs/style.md §11 plus the layer rules of docs/architecture.md ("Layers"): a break of the
// import direction is a red CI, not a review comment. test/unit/lint.test.ts proves every rule.
import { statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import eslintConfigPrettier from 'eslint-config-prettier/flat';
import tseslint from 'typescript-eslint';

const ROOT = import.meta.dirname;

// Each layer and the layers it may import (type imports included), always through the layer's
// index (src/<layer>/index.ts, its API); a file never imports its own layer's index. Keep in step
// with the table in docs/architecture.md. A folder under src/ that is not listed here is an error of its own.
const LAYERS = {
  util: [],
  protocol: ['util'],
  rpc: ['protocol', 'util'],
  client: ['rpc', 'protocol', 'util'],
  server: ['rpc', 'protocol', 'util'],
  mcp: ['client', 'rpc', 'protocol', 'util'],
  core: ['client', 'rpc', 'protocol', 'util'],
  vscode: ['core', 'mcp', 'client', 'rpc', 'protocol', 'util'],
  cli: ['core', 'server', 'client', 'rpc', 'protocol', 'util'],
};
// Test folders that run without VS Code: any layer but src/vscode, and no `vscode` at all.
const PLAIN_TESTS = ['unit', 'integration', 'helpers'];
const DOC = 'docs/architecture.md, "Layers"';

const repoPath = (abs) => relative(ROOT, abs).split(sep).join('/');
/** Whether a resolved repo path is a layer's index: `src/<layer>`, `src/<layer>/index` (with or without extension). */
const isLayerIndex = (path) => /^src\/[^/]+(\/index(\.[cm]?[jt]s)?)?$/.test(path);
/** A resolved specifier as the file it names: `src/client/types.ts`, `src/mcp/config/index.ts`. */
function fileOf(path) {
  if (/\.[cm]?[jt]s$/.test(path)) return path;
  return statSync(resolve(ROOT, path), { throwIfNoEntry: false })?.isDirectory() ? `${path}/index.ts` : `${path}.ts`;
}

/** Where a repo-relative path sits: { src, layer } under src/ (layer undefined outside a known one), { test } for test/<folder>/…. */
function zoneOf(path) {
  const [top, second] = path.split('/');
  if (top === 'src') return { src: true, layer: second in LAYERS ? second : undefined };
  if (top === 'test') return { test: second };
  return {};
}

/** The literal specifier of an import-like node, or null when it is computed. */
function literalSource(node) {
  if (node?.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node?.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

// Resolves every specifier (static, export-from, import(), require(), import x = require(), import('…').T)
// against the file's own path, so `../vscode/x` is a layer and `vscode` is the package, whatever the depth.
const importsRule = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const from = zoneOf(repoPath(context.filename));
    if (!from.layer && !from.src && !PLAIN_TESTS.includes(from.test)) return {};
    const here = from.layer ? `src/${from.layer}` : from.src ? 'src' : `test/${from.test}`;

    function check(node, spec, typeOnly, dynamic) {
      if (spec === null) {
        if (from.src)
          context.report({
            node,
            message: `${here}: a computed import()/require() cannot be checked against the layers; use a string literal (${DOC})`,
          });
        return;
      }
      const report = (message) => context.report({ node, message: `${message} (${DOC})` });
      if (spec === 'vscode' || spec.startsWith('vscode/')) {
        if (from.layer === 'vscode') return;
        if (from.test) return report(`test/${from.test} runs without VS Code: no import of 'vscode'`);
        if (!typeOnly) return report(`only src/vscode imports 'vscode' at runtime${dynamic ? '' : '; use `import type`'}`);
        return;
      }
      if (!spec.startsWith('.')) return;
      const target = repoPath(resolve(dirname(context.filename), spec));
      const to = zoneOf(target);
      if (from.src && to.test) return report(`src/ never imports test/`);
      if (to.src && !to.layer) return report(`'${spec}' is not in a known layer of src/`);
      if (!to.layer || (from.src && !from.layer)) return;
      if (from.test) {
        if (to.layer === 'vscode') report(`test/${from.test} runs without VS Code: no import of src/vscode`);
        return;
      }
      if (to.layer !== from.layer && !LAYERS[from.layer].includes(to.layer)) {
        const may = LAYERS[from.layer].length ? LAYERS[from.layer].join(', ') : 'no other layer';
        report(`src/${from.layer} must not import src/${to.layer}; it may import ${may}`);
      } else if (to.layer !== from.layer && !isLayerIndex(target)) {
        report(
          `src/${from.layer} imports ${fileOf(target)}: import src/${to.layer} through its index (src/${to.layer}/index.ts is the layer's API)`,
        );
      } else if (to.layer === from.layer && isLayerIndex(target) && !isLayerIndex(repoPath(context.filename).replace(/\.ts$/, ''))) {
        report(
          `${repoPath(context.filename)} imports its own layer's index: import the file itself (the index imports the layer's files, so this is a cycle)`,
        );
      }
    }

    const isTypeDecl = (node) =>
      node.importKind === 'type' ||
      (node.specifiers.length > 0 && node.specifiers.every((s) => s.type === 'ImportSpecifier' && s.importKind === 'type'));
    return {
      ImportDeclaration: (node) => check(node, node.source.value, isTypeDecl(node), false),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value, node.exportKind === 'type', false),
      ExportAllDeclaration: (node) => check(node, node.source.value, node.exportKind === 'type', false),
      TSImportEqualsDeclaration: (node) =>
        node.moduleReference.type === 'TSExternalModuleReference' &&
        check(node, literalSource(node.moduleReference.expression), node.importKind === 'type', false),
      TSImportType: (node) => check(node, literalSource(node.argument?.literal ?? node.argument), true, false),
      ImportExpression: (node) => check(node, literalSource(node.source), false, true),
      CallExpression: (node) =>
        node.callee.type === 'Identifier' &&
        node.callee.name === 'require' &&
        node.arguments.length === 1 &&
        check(node, literalSource(node.arguments[0]), false, true),
    };
  },
};

// Every file under src/ belongs to a layer: a new folder (or a file directly in src/) must be added
// to LAYERS and to docs/architecture.md first.
const knownLayerRule = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const path = repoPath(context.filename);
    const zone = zoneOf(path);
    if (!zone.src || zone.layer) return {};
    return {
      Program: (node) =>
        context.report({
          node,
          message: `${path} is not in a known layer (${Object.keys(LAYERS).join(', ')}); add its folder to LAYERS in eslint.config.mjs and to ${DOC}`,
        }),
    };
  },
};

// Size (docs/style.md; issue 25): a file of src/ at most 450 lines, a function at most 100 (blank
// lines and comments not counted). Every file keeps to it today: OVER_SIZE is empty, and a file
// that must grow past it is split instead (an entry here, { 'src/x.ts': { file: N } }, holds a file at
// its size while it waits for that; the list only ever gets shorter).
const SIZE = { file: 450, fn: 100 };
const OVER_SIZE = {};
/** @type {(limits: { file?: number, fn?: number }) => import('eslint').Linter.RulesRecord} */
const sizeRules = (limits) => ({
  'max-lines': ['error', { max: limits.file ?? SIZE.file }],
  'max-lines-per-function': ['error', { max: limits.fn ?? SIZE.fn, skipBlankLines: true, skipComments: true }],
});

// The rules of every file we lint, TypeScript or the plain ES modules of scripts/ and bench/.
/** @type {import('eslint').Linter.RulesRecord} */
const commonRules = {
  '@typescript-eslint/no-floating-promises': [
    'error',
    {
      allowForKnownSafeCalls: [
        {
          from: 'package',
          package: 'node:test',
          name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
        },
      ],
    },
  ],
  '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
  eqeqeq: ['error', 'always'],
};

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'out-*/**', 'node_modules/**', 'test/lint-fixtures/**', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: ROOT } },
    plugins: { layers: { rules: { imports: importsRule, 'known-layer': knownLayerRule } } },
    rules: {
      ...commonRules,
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'layers/imports': 'error',
      'layers/known-layer': 'error',
    },
  },
  // scripts/, bench/ and the root configs are plain ES modules for Node, typed by tsconfig.scripts.json
  // (checkJs, which `npm run typecheck` runs too): the typed promise rules matter most in these async
  // scripts. No layer or size rule: those are for src/.
  {
    files: ['scripts/**/*.mjs', 'bench/**/*.mjs', '*.config.mjs'],
    languageOptions: { parserOptions: { project: './tsconfig.scripts.json', tsconfigRootDir: ROOT } },
    rules: {
      ...commonRules,
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  { files: ['src/**/*.ts'], rules: sizeRules({}) },
  ...Object.entries(OVER_SIZE).map(([file, limits]) => ({ files: [file], rules: sizeRules(limits) })),
  // Formatting is Prettier's (npm test runs `prettier --check`): no lint rule argues with it.
  eslintConfigPrettier,
);
