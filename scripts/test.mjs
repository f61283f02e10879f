#!/usr/bin/env node
// `npm test`: set up the machine (scripts/setup.mjs: Debian packages, both code-servers), build,
// typecheck + compile tests, typecheck scripts/ and bench/, lint, then every node:test suite (unit,
// then integration), then the extension inside two real VS Codes (scripts/vscode-test.mjs, then
// scripts/vscode-trust-test.mjs).
// The code-servers install, and the integration files that sleep run, beside all of that.
// Usage: npm test [-- unit|integration|vscode|<substring of a test file path>]
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureMachine } from './setup.mjs';

const root = new URL('..', import.meta.url).pathname;
const filter = process.argv.slice(2);
const withVscode = filter.length === 0 || filter.some((x) => x === 'vscode' || x.includes('test/vscode'));
// OUT_DIR lets several people (or helpers) test in one tree without clobbering each other.
// FAST=1 (for iterating only): compile even with type errors elsewhere in the tree, skip lint.
const outDir = process.env.OUT_DIR || 'out';
const fast = process.env.FAST === '1';

// First, before anything is built: every tool a test starts is here (or one message says what to
// install), so no test fails on a missing tool. The code-servers of the vscode stage (a download and
// an npm install, a minute each) install beside the build and the node:test suites, which do not
// use them; the vscode stage waits for them.
await ensureMachine('packages');
const codeServers = withVscode
  ? background('the code-servers of the vscode stage', 'node', ['scripts/setup.mjs', '--for', 'test'])
  : undefined;

function run(cmd, args, opts = {}) {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  const s = ((Date.now() - t0) / 1000).toFixed(1);
  if (r.status !== 0) {
    console.error(`\n✗ ${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}) after ${s}s`);
    process.exit(r.status || 1);
  }
  console.log(`✓ ${cmd} ${args.slice(0, 3).join(' ')} (${s}s)`);
}

function findTests(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

run('node', ['esbuild.config.mjs']);
rmSync(join(root, outDir), { recursive: true, force: true });
if (fast) spawnSync('npx', ['tsc', '-p', '.', '--outDir', outDir], { stdio: 'ignore', cwd: root });
else run('npx', ['tsc', '-p', '.', '--outDir', outDir]);

/**
 * Integration files that mostly sleep (a six-minute network outage): they run in a lane of their
 * own, started as soon as the tests are compiled and waited for at the very end, so they cost the
 * run no wall time beside lint, the suites and the vscode stage, and no CPU while they wait. Their
 * result counts like any other file's.
 */
const SLEEPERS = ['nightOutage.test.js'];
const integrationFiles = selected('integration');
const sleepers = integrationFiles.filter((f) => SLEEPERS.some((n) => f.endsWith(n)));
const lane =
  sleepers.length > 0 && sleepers.length < integrationFiles.length
    ? background(`integration files that sleep: ${sleepers.map((f) => f.split('/').pop()).join(' ')}`, 'node', [
        '--test',
        '--test-timeout=600000',
        ...sleepers,
      ])
    : undefined;
if (!fast && !process.env.SKIP_LINT) {
  // The plain ES modules (scripts/, bench/, the root configs) have a type check of their own.
  run('npx', ['tsc', '-p', 'tsconfig.scripts.json']);
  run('npx', ['eslint', 'src', 'test', 'scripts', 'bench', 'esbuild.config.mjs', 'eslint.config.mjs']);
  // Formatting is Prettier's (docs/style.md §11): `npm run format` fixes what this reports.
  run('npx', ['prettier', '--check', '--log-level', 'warn', '.']);
}

function selected(suite) {
  const files = findTests(join(root, outDir, 'test', suite));
  return filter.length > 0 && !filter.includes(suite) ? files.filter((f) => filter.some((x) => f.includes(x))) : files;
}

for (const suite of ['unit', 'integration']) {
  let files = selected(suite);
  if (lane) files = files.filter((f) => !sleepers.includes(f));
  if (files.length === 0) continue;
  console.log(`\n— ${suite}: ${files.length} files`);
  // The timeout also bounds each file as a whole: an integration file (sshd, packaging, a long
  // outage) may take minutes on a busy 2-core machine.
  const timeout = suite === 'unit' ? 120_000 : 600_000;
  // A unit test starts no process or server (docs/style.md §15): the guard makes each way to start
  // one throw, saying to move the test to test/integration.
  const guard = suite === 'unit' ? ['--import', pathToFileURL(join(root, outDir, 'test', 'helpers', 'unitGuard.js')).href] : [];
  run('node', [...guard, '--test', '--test-concurrency=' + (suite === 'unit' ? '4' : '2'), `--test-timeout=${timeout}`, ...files]);
}

/**
 * Runs `cmd args` in a child of its own beside what follows; `await` on the result resolves when it
 * succeeded and ends the run when it failed. Its output goes to a file, printed when it ends (not
 * interleaved with the suites'; a pipe would fill while spawnSync holds this event loop).
 */
function background(name, cmd, args) {
  const t0 = Date.now();
  const logDir = mkdtempSync(join(tmpdir(), 'eb-test-bg-'));
  const log = join(logDir, 'report.txt');
  const fd = openSync(log, 'w');
  // Its own process group, so that a run that stops early (a failed suite, Ctrl-C) takes all of it
  // along: a SIGTERM to the test runner alone left the night lane's sshd and `run --ssh` clients
  // running for over an hour (seen after two failed runs). What outlives the group is what the
  // product keeps on purpose, a daemon's processes, and those end on their own (bounded loops).
  const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], cwd: root, env: { ...process.env, OUT_DIR: outDir }, detached: true });
  closeSync(fd);
  console.log(`… ${name}: beside the rest; the report comes when it ends`);
  const stop = () => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return; // ended: its group number may be someone else's now
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  };
  process.once('exit', stop).once('SIGINT', () => process.exit(130));
  const finished = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return {
    async done() {
      const status = await finished;
      process.stdout.write(readFileSync(log));
      // Its own duration: the report's last write (its exit is seen only once spawnSync lets go).
      const s = ((statSync(log).mtimeMs - t0) / 1000).toFixed(1);
      rmSync(logDir, { recursive: true, force: true });
      if (status !== 0) {
        console.error(`\n✗ ${name}: ${cmd} ${args.join(' ')} failed (${status}) after ${s}s`);
        process.exit(typeof status === 'number' ? status : 1);
      }
      console.log(`✓ ${name} (${s}s)`);
    },
  };
}

// Last: the extension inside real VS Codes (code-server + chromium; scripts/vscode-test.mjs), then
// executor folders with workspace trust on, as users have it (scripts/vscode-trust-test.mjs; the
// first runs with trust off).
if (withVscode) {
  await codeServers?.done();
  console.log('\n— vscode: extension tests in code-server');
  run('node', ['scripts/vscode-test.mjs'], { env: { ...process.env, OUT_DIR: outDir } });
  run('node', ['scripts/vscode-trust-test.mjs'], { env: { ...process.env, OUT_DIR: outDir } });
}
if (lane) await lane.done();
