// Lint = style.md §11 plus the layering zones of architecture.md: a break of the import
// direction is a red CI, not a review comment.
import tseslint from 'typescript-eslint';

const layer = (folder, forbidden, extra = []) => ({
  files: [`src/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          ...forbidden.map((f) => ({ group: [`**/${f}`, `**/${f}/**`], message: `src/${folder} must not import src/${f} (architecture.md: imports point down the layer list)` })),
          { group: ['**/test/**'], message: 'src/ never imports test/' },
          ...extra,
        ],
        paths: folder === 'vscode' ? [] : [{ name: 'vscode', allowTypeImports: true, message: 'only src/vscode imports vscode at runtime' }],
      },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '**/*.mjs', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
    },
  },
  layer('util', ['protocol', 'rpc', 'client', 'server', 'mcp', 'core', 'vscode', 'cli']),
  layer('protocol', ['rpc', 'client', 'server', 'mcp', 'core', 'vscode', 'cli']),
  layer('rpc', ['client', 'server', 'mcp', 'core', 'vscode', 'cli']),
  layer('client', ['server', 'mcp', 'core', 'vscode', 'cli']),
  layer('server', ['client', 'mcp', 'core', 'vscode', 'cli']),
  layer('mcp', ['server', 'core', 'vscode', 'cli']),
  layer('core', ['server', 'vscode', 'cli']),
  layer('vscode', ['server', 'cli']),
  layer('cli', ['mcp', 'core', 'vscode']),
);
