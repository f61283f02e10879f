/**
 * The machine set-up (scripts/setup.mjs) that `npm start`, `npm test` and `.ci/run` share. On a
 * machine where it cannot install (no apt-get, or not root) it stops before anything is built, with
 * one message that names the missing packages and the command that installs them. Real processes:
 * the scripts run with a PATH that holds none of the tools (so every tool found through PATH is
 * missing), once as root without apt-get and once as an unprivileged user with apt-get on PATH.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

const REPO = join(__dirname, '..', '..', '..');
const emptyPath = mkdtempSync(join(tmpdir(), 'eb-setup-path-'));
const aptOnly = mkdtempSync(join(tmpdir(), 'eb-setup-apt-'));
symlinkSync('/usr/bin/apt-get', join(aptOnly, 'apt-get'));
chmodSync(aptOnly, 0o755); // nobody must reach it
after(() => {
  rmSync(emptyPath, { recursive: true, force: true });
  rmSync(aptOnly, { recursive: true, force: true });
});

/** Packages whose check goes through PATH: all of them are missing with an empty PATH. */
const THROUGH_PATH = ['bubblewrap', 'ripgrep', 'openssh-client', 'zsh', 'perl-base', 'curl', 'git', 'unzip', 'python3'];

function runScript(script: string, args: string[], path: string, asNobody = false) {
  const node = process.execPath;
  const [file, argv] = asNobody
    ? ['/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', node, join(REPO, script), ...args]]
    : [node, [join(REPO, script), ...args]];
  return spawnSync(file, argv, {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    // Only PATH changes: everything else is the test's own environment.
    env: { ...process.env, PATH: path, HOME: tmpdir() },
  });
}

/** The one message: the reason, a line per missing package, and the install command with exactly those. */
function assertMessage(stderr: string, reason: RegExp) {
  assert.match(stderr, /Exec Bridge needs Debian packages this machine does not have/);
  assert.match(stderr, reason);
  const install = stderr.split('\n').find((l) => l.includes('apt-get install -y'));
  assert.ok(install, stderr);
  const named = install.trim().replace('sudo apt-get install -y ', '').split(' ');
  for (const p of THROUGH_PATH) assert.ok(named.includes(p), `${p} missing from: ${install}`);
  assert.equal(stderr.match(/Exec Bridge needs Debian packages/g)?.length, 1, 'one message');
}

describe('machine set-up: the missing-package message', () => {
  test('no apt-get: setup.mjs names the packages and the command, exit 2', () => {
    const r = runScript('scripts/setup.mjs', ['--for', 'packages'], emptyPath);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assertMessage(r.stderr, /there is no apt-get here/);
    assert.doesNotMatch(r.stdout, /installing Debian packages/);
  });

  test('not root (apt-get on PATH): the same message says root is needed, nothing is installed', () => {
    // As root, setpriv drops to nobody; a developer who is not root is already "not root".
    const asNobody = process.getuid?.() === 0;
    const r = runScript('scripts/setup.mjs', ['--for', 'packages'], aptOnly, asNobody);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assertMessage(r.stderr, /installing them needs root/);
    assert.doesNotMatch(r.stdout, /installing Debian packages/);
  });

  test('npm start stops before it builds or packages anything', () => {
    const before = statSync(join(REPO, 'dist', 'extension.js')).mtimeMs;
    const r = runScript('scripts/start.mjs', ['--check'], emptyPath);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assertMessage(r.stderr, /there is no apt-get here/);
    assert.doesNotMatch(r.stdout, /packaging|installing .* into code-server/);
    assert.equal(statSync(join(REPO, 'dist', 'extension.js')).mtimeMs, before, 'dist/ was not rebuilt');
  });

  test('npm test stops before the build', () => {
    const r = runScript('scripts/test.mjs', ['unit'], emptyPath);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assertMessage(r.stderr, /there is no apt-get here/);
    assert.doesNotMatch(r.stdout, /esbuild|tsc/);
  });

  test('setup.mjs --for test with the code-servers in place exits 0 (it once deadlocked on its own import: exit 13, no word)', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'eb-setup-cache-'));
    try {
      // What an installed code-server leaves: its launcher (ensureCodeServer looks for nothing else).
      const { VSCODE_TARGETS } = (await import(pathToFileURL(join(REPO, 'scripts', 'codeServer.mjs')).href)) as {
        VSCODE_TARGETS: Record<string, { codeServer: string }>;
      };
      for (const t of Object.values(VSCODE_TARGETS)) {
        mkdirSync(join(cache, `code-server-${t.codeServer}`));
        writeFileSync(join(cache, `code-server-${t.codeServer}`, 'launch-code-server'), '#!/bin/sh\n', { mode: 0o755 });
      }
      const r = spawnSync(process.execPath, [join(REPO, 'scripts', 'setup.mjs'), '--for', 'test'], {
        cwd: REPO,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, EXEC_BRIDGE_VSCODE_CACHE: cache },
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /has everything Exec Bridge needs/);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  test('this machine has everything: setup.mjs --for packages exits 0', () => {
    const r = runScript('scripts/setup.mjs', ['--for', 'packages'], process.env.PATH ?? '');
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /has everything Exec Bridge needs/);
  });
});
