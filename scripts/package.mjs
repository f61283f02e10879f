#!/usr/bin/env node
// `npm run package`: one VSIX per platform (`vsce package --target`), each carrying node-pty's
// native build for its own platform, plus the builds the SSH bootstrap uploads to a host
// (dist/native/<platform>-<arch>/: linux-x64, darwin-x64, darwin-arm64). Natives come from the
// npm package (prebuilds/ for darwin and win32) and from the node-gyp build of this machine
// (build/Release: node-pty ships no Linux prebuild), so linux-x64 needs a linux-x64 packager.
// Also writes exec-bridge.vsix, the VSIX of this machine's platform (npm start installs it).
//
// Usage: node scripts/package.mjs [--target T]... [--out-dir DIR]   (after `node esbuild.config.mjs`)
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const pty = join(root, 'node_modules', 'node-pty');
const here = `${process.platform}-${process.arch}`;
const argv = process.argv.slice(2);
const opt = (name) => argv.flatMap((a, i) => (a === name ? [argv[i + 1] ?? fail(`${name} needs a value`)] : []));
const outDir = opt('--out-dir')[0] ?? root;

/** Where node-pty's files for a platform are, relative to the node-pty folder (null: not available here). */
function ownNative(target) {
  if (target.startsWith('linux-')) return target === here && existsSync(join(pty, 'build', 'Release', 'pty.node')) ? 'build/Release' : null;
  return existsSync(join(pty, 'prebuilds', target)) ? `prebuilds/${target}` : null;
}
const ALL = ['linux-x64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];
const wanted = opt('--target').length ? opt('--target') : ALL.filter((t) => ownNative(t));
for (const t of wanted) if (!ALL.includes(t)) fail(`unknown target ${t} (one of ${ALL.join(', ')})`);
for (const t of wanted) if (!ownNative(t)) fail(`no node-pty build for ${t} here (linux-x64 is built by npm ci on a linux-x64 machine)`);

// node-pty runs spawn-helper on macOS; the npm package has it 0644, and VS Code keeps a VSIX's modes.
for (const t of ALL) {
  const helper = join(pty, ownNative(t) ?? 'none', 'spawn-helper');
  if (existsSync(helper)) chmodSync(helper, 0o755);
}

// The builds an SSH host may get (a remote runs Linux or macOS).
const REMOTE = ['linux-x64', 'darwin-x64', 'darwin-arm64'];
const nativeDir = join(root, 'dist', 'native');
rmSync(nativeDir, { recursive: true, force: true });
const remotes = [];
for (const t of REMOTE) {
  const from = ownNative(t);
  if (!from) continue;
  mkdirSync(join(nativeDir, t), { recursive: true });
  for (const f of ['pty.node', 'spawn-helper']) if (existsSync(join(pty, from, f))) copyFileSync(join(pty, from, f), join(nativeDir, t, f));
  remotes.push(t);
}
if (!remotes.includes('linux-x64')) console.warn('[package] warning: no linux-x64 node-pty build here: Linux hosts get no PTYs');

/** The base allow-list without its per-platform part, plus this target's natives. */
function ignoreFileFor(target) {
  const own = ownNative(target) ?? fail(`no node-pty build for ${target} here`);
  const base = readFileSync(join(root, '.vscodeignore'), 'utf8')
    .split('\n')
    .filter((l) => own === 'build/Release' || !l.startsWith('!node_modules/node-pty/build/'))
    .join('\n');
  const natives = (own === 'build/Release' ? [] : readdirSync(join(pty, own)))
    .filter((f) => !f.endsWith('.pdb'))
    .map((f) => `!node_modules/node-pty/${own}/${f}${f === 'conpty' ? '/**' : ''}`);
  return [base, ...natives, ...remotes.map((t) => `!dist/native/${t}/*`), ''].join('\n');
}

const tmp = join(tmpdir(), `exec-bridge-package-${process.pid}`);
mkdirSync(tmp, { recursive: true });
mkdirSync(outDir, { recursive: true });
try {
  for (const target of wanted) {
    const ignore = join(tmp, `${target}.vscodeignore`);
    writeFileSync(ignore, ignoreFileFor(target));
    const out = join(outDir, `exec-bridge-${target}.vsix`);
    const r = spawnSync(
      'npx',
      [
        'vsce',
        'package',
        '--target',
        target,
        '--ignoreFile',
        ignore,
        '--allow-missing-repository',
        '--skip-license',
        '--no-rewrite-relative-links',
        '--out',
        out,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    if (r.status !== 0) fail(`vsce package --target ${target} failed:\n${r.stdout}${r.stderr}`);
    console.log(`[package] ${out}`);
    if (target === here) copyFileSync(out, join(outDir, 'exec-bridge.vsix'));
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

/** @returns {never} */
function fail(message) {
  console.error(`[package] ${message}`);
  process.exit(1);
}
