/**
 * The unit stage's guard (test/helpers/unitGuard.ts, preloaded by scripts/test.mjs): a unit test
 * that starts a process, a server or a worker fails with the rule's message. One fixture file
 * starts one of each (and cleans up); run by the real test runner it passes without the guard and
 * fails case by case with it, so the guard alone makes the difference.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const GUARD = join(__dirname, '..', 'helpers', 'unitGuard.js');
/** The rule, as docs/style.md §15 states it (not imported: loading the guard here would install it). */
const RULE = 'unit tests start no process or server: move this test to test/integration (docs/style.md)';
const dir = mkdtempSync(join(tmpdir(), 'eb-unit-guard-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Each case: its name, what the guard names, and the fixture's code for it (awaits its own cleanup). */
const CASES: { name: string; refused: string; body: string }[] = [
  { name: 'spawn', refused: 'child_process.spawn', body: "await once(cp.spawn('true'), 'exit');" },
  { name: 'spawnSync', refused: 'child_process.spawnSync', body: "cp.spawnSync('true');" },
  { name: 'exec', refused: 'child_process.exec', body: "await new Promise((r) => cp.exec('true', r));" },
  { name: 'execSync', refused: 'child_process.execSync', body: "cp.execSync('true');" },
  { name: 'execFile', refused: 'child_process.execFile', body: "await new Promise((r) => cp.execFile('true', r));" },
  { name: 'execFileSync', refused: 'child_process.execFileSync', body: "cp.execFileSync('true');" },
  { name: 'fork', refused: 'child_process.fork', body: "await once(cp.fork(EXIT), 'exit');" },
  {
    name: 'spawn imported by name',
    refused: 'child_process.spawn',
    body: "const { spawn } = await import('node:child_process'); await once(spawn('true'), 'exit');",
  },
  { name: 'node-pty', refused: 'node-pty spawn', body: "await new Promise((r) => pty.spawn('true', [], {}).onExit(r));" },
  { name: 'net', refused: 'net.Server.listen', body: "await close(net.createServer().listen(0, '127.0.0.1'));" },
  { name: 'http', refused: 'net.Server.listen', body: "await close(http.createServer().listen(0, '127.0.0.1'));" },
  { name: 'https', refused: 'net.Server.listen', body: "await close(https.createServer().listen(0, '127.0.0.1'));" },
  {
    name: 'ws',
    refused: 'net.Server.listen',
    body: "const wss = new ws.WebSocketServer({ port: 0, host: '127.0.0.1' }); await once(wss, 'listening'); await new Promise((r) => wss.close(r));",
  },
  {
    name: 'dgram',
    refused: 'dgram.Socket.bind',
    body: "const s = dgram.createSocket('udp4'); await new Promise((r) => s.bind(0, '127.0.0.1', r)); s.close();",
  },
  { name: 'worker', refused: 'worker_threads.Worker', body: "await once(new wt.Worker('', { eval: true }), 'exit');" },
];

function fixture(): string {
  const exit = join(dir, 'exit.js');
  writeFileSync(exit, 'process.exit(0);\n');
  const file = join(dir, 'starts.test.js');
  writeFileSync(
    file,
    [
      "const { test } = require('node:test');",
      "const { once } = require('node:events');",
      "const cp = require('node:child_process');",
      "const net = require('node:net');",
      "const http = require('node:http');",
      "const https = require('node:https');",
      "const dgram = require('node:dgram');",
      "const wt = require('node:worker_threads');",
      `const pty = require(${JSON.stringify(require.resolve('node-pty'))});`,
      `const ws = require(${JSON.stringify(require.resolve('ws'))});`,
      `const EXIT = ${JSON.stringify(exit)};`,
      "const close = async (server) => { await once(server, 'listening'); await new Promise((r) => server.close(r)); };",
      "test('pure: reads a file and connects to nothing', () => require('node:fs').readFileSync(__filename));",
      ...CASES.map((c) => `test(${JSON.stringify(c.name)}, async () => { ${c.body} });`),
      '',
    ].join('\n'),
  );
  return file;
}

/** `node [--import guard] --test file` as the unit stage runs it; its exit code and TAP report. */
function runTests(file: string, guarded: boolean): Promise<{ code: number | null; out: string }> {
  // Not a child of this test file's runner: without NODE_TEST_CONTEXT it runs as a top-level runner.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const args = [...(guarded ? ['--import', GUARD] : []), '--test', '--test-reporter=tap', '--test-timeout=60000', file];
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

const file = fixture();

test('without the guard the fixture passes: every case starts and cleans up', async () => {
  const r = await runTests(file, false);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, new RegExp(`^# pass ${CASES.length + 1}$`, 'm'), r.out);
});

test('with the guard each start fails with the rule, naming what it tried; the pure case passes', async () => {
  const r = await runTests(file, true);
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^ok 1 - pure: reads a file and connects to nothing$/m);
  assert.match(r.out, new RegExp(`^# fail ${CASES.length}$`, 'm'), r.out);
  // TAP: each case's `not ok` with its error below it, up to the next case.
  const reports = r.out.split(/^(?=(?:not )?ok \d+ - )/m);
  for (const c of CASES) {
    const report = reports.find((p) => p.startsWith(`not ok `) && p.split('\n')[0]!.endsWith(` - ${c.name}`));
    assert.ok(report, `${c.name}: no failure reported\n${r.out}`);
    assert.ok(report.includes(`${RULE} (${c.refused}`), `${c.name}: ${report}`);
  }
});
