// Two bundles from one config (docs/style.md §12):
//  - dist/extension.js: the VS Code extension, `vscode` external.
//  - dist/cli.js: the exec-server and the `run` command line; no `vscode` at all, so a stray
//    import of it fails this build.
// node-pty is a native addon: it stays external and ships in node_modules.
import * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';

const watch = process.argv.includes('--watch');
/** @satisfies {esbuild.BuildOptions} */
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  external: ['node-pty'],
  // Prefer ES modules where a package has both: jsonc-parser's UMD "main" uses a dynamic require
  // that a bundle cannot resolve ("Cannot find module './impl/format'").
  mainFields: ['module', 'main'],
  // The executor reports it in environment/info (`executorVersion`).
  define: { __EXEC_BRIDGE_VERSION__: JSON.stringify(JSON.parse(readFileSync('package.json', 'utf8')).version) },
};

const builds = [
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  { ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js', external: [...common.external, 'vscode'] },
];

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
