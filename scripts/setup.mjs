#!/usr/bin/env node
// The machine set-up that `npm start`, `npm test` and `.ci/run` share: every Debian package any of
// them starts, then the code-servers (with the Node each needs) that the command will open.
//
//   node scripts/setup.mjs [--for start|test|packages]    (default: test = everything)
//
// As root with apt-get it installs what is missing and says which packages it installs; otherwise
// it stops, before anything is built, with one message naming exactly the missing packages and the
// command that installs them (exit 2). `npm start` and `npm test` call `ensureMachine` first.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Is `name` an executable on PATH (as `command -v` would say, without a shell)? */
export function onPath(name, path = process.env.PATH ?? '') {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this folder
    }
  }
  return false;
}

const chromium = () => process.env.CHROMIUM || '/usr/bin/chromium';

/**
 * Every Debian package a command of ours starts, with what needs it. `has` says whether this
 * machine has it (a command on PATH, or a file the package installs).
 */
export const DEBIAN_PACKAGES = [
  { name: 'bubblewrap', for: 'the sandbox (every sandboxed command, the extension default)', has: (p) => onPath('bwrap', p) },
  { name: 'chromium', for: 'the in-browser check of npm start and the real-VS-Code tests', has: () => existsSync(chromium()) },
  { name: 'ripgrep', for: "code-server's install (seeds @vscode/ripgrep: no GitHub download)", has: (p) => onPath('rg', p) },
  { name: 'libkrb5-dev', for: "code-server's native kerberos module", has: () => existsSync('/usr/include/gssapi/gssapi.h') },
  { name: 'openssh-server', for: 'the SSH executor tests (a real sshd on loopback)', has: () => existsSync('/usr/sbin/sshd') },
  { name: 'openssh-client', for: 'SSH executors (ssh, ssh-keygen)', has: (p) => onPath('ssh', p) && onPath('ssh-keygen', p) },
  { name: 'zsh', for: 'the zsh shell-integration tests', has: (p) => onPath('zsh', p) },
  { name: 'perl-base', for: "the managed network's in-sandbox bridge", has: (p) => onPath('perl', p) },
  { name: 'curl', for: 'the managed-network tests', has: (p) => onPath('curl', p) },
  { name: 'git', for: 'the nested-repository sandbox tests', has: (p) => onPath('git', p) },
  { name: 'unzip', for: 'the packaging tests (zipinfo reads the VSIX)', has: (p) => onPath('zipinfo', p) },
  { name: 'python3', for: "node-pty's build and the keyring sandbox test", has: (p) => onPath('python3', p) },
  {
    name: 'iproute2',
    for: "the MCP tests of servers only the executor reaches (ip: a private network's loopback)",
    // An sbin path, off an unprivileged user's PATH: looked for where Debian puts it.
    has: () => ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].some((f) => existsSync(f)),
  },
];

/** The packages this machine lacks (names, in DEBIAN_PACKAGES order). */
export function missingPackages(path = process.env.PATH ?? '') {
  return DEBIAN_PACKAGES.filter((p) => !p.has(path)).map((p) => p.name);
}

/** The one message for a machine where we cannot install: what is missing, why, and the command. */
export function missingMessage(missing, reason) {
  const why = DEBIAN_PACKAGES.filter((p) => missing.includes(p.name)).map((p) => `  ${p.name.padEnd(15)} ${p.for}`);
  return [
    `Exec Bridge needs Debian packages this machine does not have (${reason}):`,
    ...why,
    'Install them, then run the command again:',
    `  sudo apt-get install -y ${missing.join(' ')}`,
  ].join('\n');
}

/** Installs the missing packages as root with apt-get, or exits 2 with `missingMessage`. */
export function ensurePackages({ log = console.log } = {}) {
  const missing = missingPackages();
  if (missing.length === 0) return [];
  const root = process.getuid?.() === 0;
  const apt = onPath('apt-get');
  if (!root || !apt) {
    console.error(missingMessage(missing, !apt ? 'there is no apt-get here to install them' : 'installing them needs root'));
    process.exit(2);
  }
  log(`installing Debian packages: ${missing.join(' ')} (apt-get, once)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: 20 * 60_000 });
  let r = run(['install', '-y', '-qq', ...missing]);
  // A fresh machine has no package lists yet: update once, then try again.
  if (r.status !== 0) {
    if (run(['update', '-qq']).status !== 0) fail(`apt-get update failed: cannot install ${missing.join(' ')}`);
    r = run(['install', '-y', '-qq', ...missing]);
  }
  const still = missingPackages();
  if (r.status !== 0 || still.length > 0)
    fail(`apt-get install ${missing.join(' ')} failed${still.length ? ` (still missing: ${still.join(' ')})` : ''}`);
  log(`installed: ${missing.join(' ')}`);
  return missing;
}

function fail(message) {
  console.error(`[setup] ✗ ${message}`);
  process.exit(1);
}

/**
 * The set-up for one of our commands: `start` (packages + the newest code-server), `test`
 * (packages + both code-servers, unless `vscode: false`), `packages` (packages only).
 */
export async function ensureMachine(purpose = 'test', { vscode = true, log = (...a) => console.log('[setup]', ...a) } = {}) {
  ensurePackages({ log });
  if (purpose === 'packages' || !vscode) return;
  // Imported only now: codeServer.mjs is the code-server library, loaded once the packages are here.
  const { ensureCodeServer, VSCODE_TARGETS } = await import('./codeServer.mjs');
  const targets = purpose === 'start' ? ['newest'] : selectedTargets(VSCODE_TARGETS);
  for (const t of targets) ensureCodeServer(VSCODE_TARGETS[t].codeServer);
}

/** VSCODE_TARGETS=min|newest|min,newest (default both), as scripts/vscode-test.mjs reads it. */
export function selectedTargets(all, value = process.env.VSCODE_TARGETS) {
  const names = (value || 'min,newest')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names) if (!all[n]) fail(`unknown VSCODE_TARGETS entry "${n}" (min, newest)`);
  return names;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const purpose = argv.includes('--for') ? argv[argv.indexOf('--for') + 1] : 'test';
  if (purpose === undefined || !['start', 'test', 'packages'].includes(purpose)) fail(`--for ${purpose}: expected start, test or packages`);
  // Not a top-level await: codeServer.mjs, which ensureMachine imports, imports this module, and
  // that import waits for this module's evaluation to end (an await here never settled: exit 13).
  ensureMachine(purpose).then(
    () => console.log('[setup] this machine has everything Exec Bridge needs'),
    (e) => fail(e?.stack ?? String(e)),
  );
}
