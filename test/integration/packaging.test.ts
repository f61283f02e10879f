/**
 * `npm run package` (scripts/package.mjs, after the build): one VSIX per target, each with
 * node-pty's native files for its own platform and nothing of another's, plus the builds the SSH
 * bootstrap uploads to a host (dist/native/). The binaries are checked by their headers (ELF,
 * Mach-O, PE machine), so a file of the wrong platform under the right name fails too.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { COMMAND_BUNDLES } from '../../src/cli/commands';

const REPO = join(__dirname, '..', '..', '..');
const out = mkdtempSync(join(tmpdir(), 'eb-package-test-'));
const TARGETS = ['linux-x64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'] as const;
type Target = (typeof TARGETS)[number];

/** What a native file's header says it is: `linux-x64`, `darwin-arm64`, `win32-x64`, … */
function binaryPlatform(b: Buffer): string {
  if (b.readUInt32BE(0) === 0x7f454c46)
    return `linux-${({ 0x3e: 'x64', 0xb7: 'arm64' } as Record<number, string>)[b.readUInt16LE(18)] ?? '?'}`;
  if (b.readUInt32LE(0) === 0xfeedfacf)
    return `darwin-${({ 0x01000007: 'x64', 0x0100000c: 'arm64' } as Record<number, string>)[b.readUInt32LE(4)] ?? '?'}`;
  if (b.toString('latin1', 0, 2) === 'MZ') {
    const pe = b.readUInt32LE(0x3c);
    if (b.toString('latin1', pe, pe + 4) === 'PE\0\0')
      return `win32-${({ 0x8664: 'x64', 0xaa64: 'arm64' } as Record<number, string>)[b.readUInt16LE(pe + 4)] ?? '?'}`;
  }
  return 'unknown';
}

interface Entry {
  name: string;
  mode: string;
}

function entries(vsix: string): Entry[] {
  // zipinfo: "-rwxr-xr-x  6.3 unx  50480 bl defN 26-Dec-01 11:15 extension/…"
  return execFileSync('zipinfo', [vsix], { encoding: 'utf8', maxBuffer: 16 << 20 })
    .split('\n')
    .map((l) => /^([-dlrwx]{10})\s.*\s(\S+)$/.exec(l))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ mode: m[1]!, name: m[2]! }));
}

const file = (vsix: string, name: string) => execFileSync('unzip', ['-p', vsix, name], { maxBuffer: 64 << 20 });

describe('npm run package: per-platform VSIXs', () => {
  // Six vsce runs: minutes on a busy 2-core machine (the suite's 120 s default is per test).
  before(
    () => {
      const r = spawnSync(process.execPath, [join(REPO, 'scripts', 'package.mjs'), '--out-dir', out], { cwd: REPO, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    },
    { timeout: 900_000 },
  );
  after(() => rmSync(out, { recursive: true, force: true }));

  const own: Record<Target, string[]> = {
    'linux-x64': ['build/Release/pty.node'],
    'darwin-x64': ['prebuilds/darwin-x64/pty.node', 'prebuilds/darwin-x64/spawn-helper'],
    'darwin-arm64': ['prebuilds/darwin-arm64/pty.node', 'prebuilds/darwin-arm64/spawn-helper'],
    'win32-x64': [
      'pty.node',
      'conpty.node',
      'conpty_console_list.node',
      'winpty-agent.exe',
      'winpty.dll',
      'conpty/OpenConsole.exe',
      'conpty/conpty.dll',
    ].map((f) => `prebuilds/win32-x64/${f}`),
    'win32-arm64': [
      'pty.node',
      'conpty.node',
      'conpty_console_list.node',
      'winpty-agent.exe',
      'winpty.dll',
      'conpty/OpenConsole.exe',
      'conpty/conpty.dll',
    ].map((f) => `prebuilds/win32-arm64/${f}`),
  };

  for (const target of TARGETS) {
    test(`${target}: its own node-pty natives, no other platform's, and the SSH hosts' builds`, () => {
      const vsix = join(out, `exec-bridge-${target}.vsix`);
      const list = entries(vsix);
      const names = new Set(list.map((e) => e.name));
      assert.match(file(vsix, 'extension.vsixmanifest').toString(), new RegExp(`TargetPlatform="${target}"`));
      for (const f of ['extension/dist/extension.js', 'extension/dist/cli.js', 'extension/node_modules/node-pty/lib/index.js'])
        assert.ok(names.has(f), f);
      // Every bundle the dispatcher (dist/cli.js) can load, and no source map.
      for (const b of new Set(Object.values(COMMAND_BUNDLES))) assert.ok(names.has(`extension/dist/cli/${b}.js`), `dist/cli/${b}.js`);
      assert.deepEqual(
        list.filter((e) => e.name.endsWith('.map')).map((e) => e.name),
        [],
      );
      if (target.startsWith('win32')) assert.ok(names.has('extension/node_modules/node-pty/lib/worker/conoutSocketWorker.js'));
      const natives = list.filter(
        (e) => e.name.startsWith('extension/node_modules/node-pty/') && /\.(node|exe|dll)$|spawn-helper$/.test(e.name),
      );
      assert.deepEqual(natives.map((e) => e.name.slice('extension/node_modules/node-pty/'.length)).sort(), [...own[target]].sort());
      for (const e of natives) {
        assert.equal(binaryPlatform(file(vsix, e.name)), target, e.name);
        if (e.name.endsWith('spawn-helper')) assert.equal(e.mode, '-rwxr-xr-x', `${e.name} must be executable`);
      }
      assert.ok(!list.some((e) => e.name.endsWith('.pdb')), 'no debug symbols');
      // What an SSH host gets, whatever the editor's platform.
      const remote = list.filter((e) => e.name.startsWith('extension/dist/native/'));
      assert.deepEqual(remote.map((e) => e.name.slice('extension/dist/native/'.length)).sort(), [
        'darwin-arm64/pty.node',
        'darwin-arm64/spawn-helper',
        'darwin-x64/pty.node',
        'darwin-x64/spawn-helper',
        'linux-x64/pty.node',
      ]);
      for (const e of remote) {
        assert.equal(binaryPlatform(file(vsix, e.name)), e.name.split('/')[3], e.name);
        if (e.name.endsWith('spawn-helper')) assert.equal(e.mode, '-rwxr-xr-x', `${e.name} must be executable`);
      }
    });
  }

  test("exec-bridge.vsix is this machine's", () => {
    const here = `${process.platform}-${process.arch}`;
    assert.deepEqual(readFileSync(join(out, 'exec-bridge.vsix')), readFileSync(join(out, `exec-bridge-${here}.vsix`)));
  });
});
