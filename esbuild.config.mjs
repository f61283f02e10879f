// The bundles, from one config (docs/style.md §12):
//  - dist/extension.js: the VS Code extension, `vscode` external.
//  - dist/cli.js: the command line's dispatcher (src/cli/main.ts), a few KB, and beside it
//    dist/cli/<bundle>.js, one per src/cli/bundles/<bundle>.ts: the dispatcher loads the one its
//    command needs (src/cli/commands.ts), so a start compiles one command's code, not every
//    command's (docs/architecture.md, "The command line"). Each is whole (no code shared between
//    them: Node 20 loads CommonJS, and esbuild splits only ES modules). No `vscode` in any of them,
//    so a stray import of it fails this build.
// node-pty is a native addon: it stays external and ships in node_modules.
import * as esbuild from 'esbuild';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

const watch = process.argv.includes('--watch');
/**
 * zod's `locales` namespace (its error messages in ~40 languages, re-exported by `zod` and
 * `zod/v4/core`) as an empty module: a third of `run`'s bundle (368 KB of 1.08 MB) that every
 * start compiled, and nothing of ours or the MCP SDK's uses it (`z.config(z.locales.xx())`). The
 * English messages, zod's default, come from `locales/en.js`, which stays.
 * @type {esbuild.Plugin}
 */
const noZodLocales = {
  name: 'no-zod-locales',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'empty' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({ contents: 'export {};' }));
  },
};

/** @satisfies {esbuild.BuildOptions} */
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  external: ['node-pty'],
  plugins: [noZodLocales],
  // Prefer ES modules where a package has both: jsonc-parser's UMD "main" uses a dynamic require
  // that a bundle cannot resolve ("Cannot find module './impl/format'").
  mainFields: ['module', 'main'],
  // The executor reports it in environment/info (`executorVersion`).
  define: { __EXEC_BRIDGE_VERSION__: JSON.stringify(JSON.parse(readFileSync('package.json', 'utf8')).version) },
};

const bundles = readdirSync('src/cli/bundles')
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.slice(0, -3));
// A bundle no longer built must not stay behind (and ship in the VSIX).
for (const f of existsSync('dist/cli') ? readdirSync('dist/cli') : [])
  if (!bundles.some((b) => f === `${b}.js` || f === `${b}.js.map`)) rmSync(`dist/cli/${f}`, { force: true });
const builds = [
  {
    ...common,
    entryPoints: ['src/cli/main.ts'],
    outfile: 'dist/cli.js',
    banner: { js: '#!/usr/bin/env node' },
    // The bundles it loads (src/cli/main.ts) stay files of their own, beside it.
    external: [...common.external, './cli/*'],
  },
  { ...common, entryPoints: bundles.map((b) => `src/cli/bundles/${b}.ts`), outdir: 'dist/cli' },
  { ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js', external: [...common.external, 'vscode'] },
];

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
