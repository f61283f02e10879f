#!/usr/bin/env node
// Side-by-side benchmark: our exec-server (dist/cli.js serve) vs the real `codex exec-server`
// (npm @openai/codex, pinned) vs plain child_process.spawn / node-pty, in ONE run on one machine,
// so that the targets can be checked as ratios (see bench/RESULTS.md).
//
//   npm run bench                      build, run everything, print a markdown table
//   node bench/run.mjs --write         …and replace the generated part of bench/RESULTS.md
//   node bench/run.mjs --quick         fewer iterations (a smoke run, not for RESULTS.md)
//   node bench/run.mjs --only ours     one side (ours|codex|spawn), e.g. with --profile
//   node bench/run.mjs --phases stream  some of: oneshot,parallel,echo,stream
//   node bench/run.mjs --profile       start our server under `node --cpu-prof` (bench/profiles/)
//
// The client speaks the raw wire protocol over `ws` (one JSON-RPC message per frame, no
// "jsonrpc" member): it decodes base64 output to count bytes but keeps nothing, so the client is
// not the bottleneck. Every loop has a fixed count and every wait a timeout.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, launchServer, PATH_ENV, withTimeout } from './wire.mjs';

const require = createRequire(import.meta.url);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const CODEX = join(ROOT, 'node_modules', '.bin', 'codex');
const STREAM_BYTES = 256 * 1024 * 1024;

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const QUICK = flag('--quick');
// Each phase also has a time budget (after at least `min` measured iterations), so that a slow
// side on a busy machine cannot stretch the run far beyond ~3 minutes; the table shows the n used.
const ONESHOT = { warmup: QUICK ? 5 : 20, n: QUICK ? 30 : 200, min: 30, budgetMs: 20_000 };
// No newline is ever sent, so the line discipline echoes each byte and cat stays silent; the
// canonical line (≤ 4096 bytes) never fills with 220 bytes.
const ECHO = { warmup: QUICK ? 5 : 20, n: QUICK ? 30 : 200, min: 30, budgetMs: 10_000 };
const PARALLEL = { width: 64, warmup: 1, n: QUICK ? 3 : 10, min: 3, budgetMs: 25_000 };

/** Loop condition: more iterations wanted, and (still under the minimum or within the budget). */
function more(cfg, i, start) {
  return i < cfg.warmup + cfg.n && (i < cfg.warmup + cfg.min || now() - start < cfg.budgetMs);
}
const value = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const PHASES = new Set((value('--phases') ?? 'oneshot,parallel,echo,stream').split(','));

// ---------- small utilities ----------

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let phaseStart = 0;
/** Progress on stderr: each phase with the time the previous one took. */
function phase(text) {
  const t = now();
  process.stderr.write(phaseStart ? ` (${((t - phaseStart) / 1000).toFixed(1)}s) ${text}` : text);
  phaseStart = text.endsWith('\n') ? 0 : t;
}

function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// ---------- servers ----------

async function startServer(kind) {
  const profileDir = join(ROOT, 'bench', 'profiles');
  let cmd;
  let args;
  if (kind === 'ours') {
    const node = flag('--profile') ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
    if (flag('--profile')) mkdirSync(profileDir, { recursive: true });
    [cmd, args] = [process.execPath, [...node, CLI, 'serve', '--listen', 'ws://127.0.0.1:0']];
  } else {
    [cmd, args] = [CODEX, ['exec-server', '--listen', 'ws://127.0.0.1:0']];
  }
  const { url, child, stop } = await launchServer(kind, cmd, args, flag('--profile') ? 30_000 : 5000);
  return {
    kind,
    url,
    child,
    // The process doing the work: codex's npm bin is a node wrapper around the native binary.
    workerPid() {
      if (kind === 'ours') return child.pid;
      try {
        const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
        return kids[0] || child.pid;
      } catch {
        return child.pid;
      }
    },
    stop,
  };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in seconds. */
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime, in clock ticks
  } catch {
    return NaN;
  }
}

/** Peak resident set (VmHWM) of a process, in MiB. */
function peakRssMiB(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

// ---------- measurements: servers ----------

let seqNo = 0;
const uid = (p) => `${p}-${++seqNo}`;

async function serverOneShot(client) {
  const times = [];
  const start = now();
  for (let i = 0; more(ONESHOT, i, start); i++) {
    const t0 = now();
    await withTimeout(client.run(uid('true'), ['/bin/true']), 10_000, 'one-shot /bin/true');
    if (i >= ONESHOT.warmup) times.push(now() - t0);
  }
  return times;
}

async function serverParallel(client) {
  const walls = [];
  const start = now();
  for (let r = 0; more(PARALLEL, r, start); r++) {
    const t0 = now();
    const runs = [];
    for (let i = 0; i < PARALLEL.width; i++) runs.push(client.run(uid('par'), ['/bin/echo', 'hello']));
    const bytes = await withTimeout(Promise.all(runs), 60_000, '64 parallel processes');
    if (bytes.some((b) => b !== 6)) throw new Error(`parallel: unexpected output sizes ${bytes}`);
    if (r >= PARALLEL.warmup) walls.push(now() - t0);
  }
  return walls;
}

/** Writes a byte until one is echoed (bounded: 20 tries of 500 ms), then lets stragglers pass. */
async function syncEcho(arm, write) {
  for (let i = 0; i < 20; i++) {
    const echoed = new Promise((resolve) => arm(resolve));
    await write(i);
    const ok = await withTimeout(echoed, 500, 'first echo').then(
      () => true,
      () => false,
    );
    if (ok) {
      await sleep(50);
      arm(() => undefined);
      return;
    }
  }
  throw new Error('the pty never echoed');
}

async function serverEcho(client) {
  const id = uid('echo');
  let waiter;
  const closed = client.run(id, ['cat'], { tty: true }, () => {
    const w = waiter;
    waiter = undefined;
    w?.();
  });
  const times = [];
  try {
    // Until the child has set up its terminal a byte may go unechoed: sync on a first echo.
    await syncEcho(
      (resolve) => (waiter = resolve),
      (i) => client.call('process/write', { processId: id, chunk: 'YQ==', writeId: `sync${i}` }),
    );
    const start = now();
    for (let i = 0; more(ECHO, i, start); i++) {
      const echoed = new Promise((resolve) => (waiter = resolve));
      const t0 = now();
      const answered = client.call('process/write', { processId: id, chunk: 'YQ==', writeId: `w${i}` });
      await withTimeout(echoed, 5000, 'pty echo');
      const t1 = now();
      await withTimeout(answered, 5000, 'write answer');
      if (i >= ECHO.warmup) times.push(t1 - t0);
    }
  } finally {
    await client.call('process/terminate', { processId: id });
    await withTimeout(closed, 5000, 'echo process close').catch(() => undefined);
  }
  return times;
}

// ---------- measurements: plain spawn / node-pty ----------

function spawnOnce(file, args) {
  return new Promise((resolve, reject) => {
    // As the servers do: own process group, stdout/stderr piped, stdin from /dev/null.
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: PATH_ENV, cwd: '/tmp' });
    let bytes = 0;
    child.stdout.on('data', (d) => (bytes += d.length));
    child.stderr.on('data', (d) => (bytes += d.length));
    child.once('error', reject);
    child.once('close', () => resolve(bytes));
  });
}

async function spawnOneShot() {
  const times = [];
  const start = now();
  for (let i = 0; more(ONESHOT, i, start); i++) {
    const t0 = now();
    await withTimeout(spawnOnce('/bin/true', []), 10_000, 'spawn /bin/true');
    if (i >= ONESHOT.warmup) times.push(now() - t0);
  }
  return times;
}

async function spawnParallel() {
  const walls = [];
  const start = now();
  for (let r = 0; more(PARALLEL, r, start); r++) {
    const t0 = now();
    const runs = [];
    for (let i = 0; i < PARALLEL.width; i++) runs.push(spawnOnce('/bin/echo', ['hello']));
    await withTimeout(Promise.all(runs), 60_000, 'spawn 64 parallel');
    if (r >= PARALLEL.warmup) walls.push(now() - t0);
  }
  return walls;
}

async function ptyEcho() {
  const pty = require('node-pty');
  const term = pty.spawn('cat', [], { cols: 80, rows: 24, cwd: '/tmp', env: { ...PATH_ENV, TERM: 'xterm-256color' } });
  let waiter;
  term.onData(() => {
    const w = waiter;
    waiter = undefined;
    w?.();
  });
  const times = [];
  try {
    await syncEcho(
      (resolve) => (waiter = resolve),
      () => term.write('a'),
    );
    const start = now();
    for (let i = 0; more(ECHO, i, start); i++) {
      const echoed = new Promise((resolve) => (waiter = resolve));
      const t0 = now();
      term.write('a');
      await withTimeout(echoed, 5000, 'node-pty echo');
      if (i >= ECHO.warmup) times.push(now() - t0);
    }
  } finally {
    term.kill('SIGKILL');
  }
  return times;
}

// ---------- the 256 MiB stream, in a separate process so its peak RSS is its own ----------

function usage(cpu0) {
  const u = process.cpuUsage(cpu0);
  return { clientCpuS: (u.user + u.system) / 1e6, rssMiB: process.resourceUsage().maxRSS / 1024 };
}

async function streamWorker(kind, url) {
  const t0 = now();
  const cpu0 = process.cpuUsage();
  let bytes;
  if (kind === 'spawn') {
    bytes = await withTimeout(spawnOnce('head', ['-c', String(STREAM_BYTES), '/dev/zero']), 120_000, 'spawn stream');
  } else {
    const client = await Client.connect(url);
    const t1 = now();
    bytes = await withTimeout(client.run('stream', ['head', '-c', String(STREAM_BYTES), '/dev/zero']), 120_000, `${kind} stream`);
    client.close();
    process.stdout.write(JSON.stringify({ bytes, ms: now() - t1, ...usage(cpu0) }) + '\n');
    return;
  }
  process.stdout.write(JSON.stringify({ bytes, ms: now() - t0, ...usage(cpu0) }) + '\n');
}

async function stream(kind, url) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--stream-worker', kind, url ?? ''], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await withTimeout(once(child, 'exit'), 150_000, `${kind} stream worker`);
  if (code !== 0) throw new Error(`${kind} stream worker failed (${code})`);
  const r = JSON.parse(out.trim().split('\n').pop());
  if (r.bytes !== STREAM_BYTES) throw new Error(`${kind} stream: got ${r.bytes} bytes, expected ${STREAM_BYTES}`);
  return r;
}

// ---------- the run ----------

async function measureServer(kind) {
  const server = await startServer(kind);
  try {
    const client = await Client.connect(server.url);
    const r = {};
    phase(`${kind}:`);
    if (PHASES.has('oneshot')) {
      phase(' one-shot…');
      r.oneShot = await serverOneShot(client);
    }
    if (PHASES.has('parallel')) {
      phase(' 64-parallel…');
      r.parallel = await serverParallel(client);
    }
    if (PHASES.has('echo')) {
      phase(' pty echo…');
      r.echo = await serverEcho(client);
    }
    client.close();
    if (PHASES.has('stream')) {
      phase(' 256 MiB stream…');
      const cpu0 = cpuSeconds(server.workerPid());
      r.stream = await stream(kind, server.url);
      // CPU per byte says more than wall time on a busy shared machine.
      r.stream.serverCpuS = cpuSeconds(server.workerPid()) - cpu0;
    }
    r.serverPeakRssMiB = peakRssMiB(server.workerPid());
    phase(' done\n');
    return r;
  } finally {
    await server.stop();
  }
}

async function measureSpawn() {
  const r = {};
  phase('spawn:');
  if (PHASES.has('oneshot')) {
    phase(' one-shot…');
    r.oneShot = await spawnOneShot();
  }
  if (PHASES.has('parallel')) {
    phase(' 64-parallel…');
    r.parallel = await spawnParallel();
  }
  if (PHASES.has('echo')) {
    phase(' node-pty echo…');
    r.echo = await ptyEcho();
  }
  if (PHASES.has('stream')) {
    phase(' 256 MiB stream…');
    r.stream = await stream('spawn');
  }
  phase(' done\n');
  return r;
}

const LOAD_AT_START = os.loadavg()[0];
const fmt = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');

function report(results, totalMs) {
  const sides = ['ours', 'codex', 'spawn'].filter((k) => results[k]);
  const label = { ours: 'ours (dist/cli.js serve)', codex: 'codex exec-server 0.171.0', spawn: 'child_process.spawn / node-pty' };
  const withN = (values, cfg, d) => fmt(percentile(values, 50), d) + (values.length < cfg.n ? ` (n=${values.length})` : '');
  const row = (name, f, key) =>
    key && !sides.every((k) => results[k][key]) ? undefined : `| ${name} | ${sides.map((k) => f(results[k])).join(' | ')} |`;
  const mibs = (s) => STREAM_BYTES / (1024 * 1024) / (s.ms / 1000);
  const lines = [
    `| metric | ${sides.map((k) => label[k]).join(' | ')} |`,
    `|---|${sides.map(() => '---:').join('|')}|`,
    row(`one-shot \`/bin/true\` start→closed p50 (ms, n=${ONESHOT.n})`, (r) => withN(r.oneShot, ONESHOT, 2), 'oneShot'),
    row('one-shot p95 (ms)', (r) => fmt(percentile(r.oneShot, 95)), 'oneShot'),
    row(`64 parallel \`/bin/echo\` wall, median of ${PARALLEL.n} rounds (ms)`, (r) => withN(r.parallel, PARALLEL, 1), 'parallel'),
    row('64 parallel wall, worst round (ms)', (r) => fmt(Math.max(...r.parallel), 1), 'parallel'),
    row(`PTY echo round trip p50 (ms, n=${ECHO.n})`, (r) => withN(r.echo, ECHO, 3), 'echo'),
    row('PTY echo p95 (ms)', (r) => fmt(percentile(r.echo, 95), 3), 'echo'),
    row('256 MiB stdout stream (MiB/s)', (r) => fmt(mibs(r.stream), 0), 'stream'),
    row('256 MiB stream time (s)', (r) => fmt(r.stream.ms / 1000, 2), 'stream'),
    row(
      'server CPU for the stream (s, user+sys)',
      (r) => (r.stream.serverCpuS === undefined ? '—' : fmt(r.stream.serverCpuS, 2)),
      'stream',
    ),
    row('client CPU for the stream (s, user+sys)', (r) => fmt(r.stream.clientCpuS, 2), 'stream'),
    row('client peak RSS during the stream (MiB)', (r) => fmt(r.stream.rssMiB, 0), 'stream'),
    row('server peak RSS over the run (MiB)', (r) => (r.serverPeakRssMiB === undefined ? '—' : fmt(r.serverPeakRssMiB, 0))),
  ];
  const targets = [];
  const { ours, codex, spawn: base } = results;
  if (ours?.oneShot && base?.oneShot) {
    const r1 = percentile(ours.oneShot, 50) / percentile(base.oneShot, 50);
    targets.push([`one-shot p50 ours / spawn ≤ 2×`, `${fmt(r1)}×`, r1 <= 2]);
  }
  if (ours?.stream && codex?.stream) {
    const r2 = mibs(ours.stream) / mibs(codex.stream);
    targets.push([`stream throughput ours / codex ≥ 3×`, `${fmt(r2)}×`, r2 >= 3]);
  }
  if (ours?.echo) {
    const e = percentile(ours.echo, 50);
    targets.push([`PTY echo p50 ours ≤ 2 ms`, `${fmt(e, 3)} ms`, e <= 2]);
  }
  if (ours?.parallel && base?.parallel) {
    const r4 = percentile(ours.parallel, 50) / percentile(base.parallel, 50);
    targets.push([`64-parallel wall ours / spawn ≤ 1.5×`, `${fmt(r4)}×`, r4 <= 1.5]);
  }
  const info = [
    `- command: \`npm run bench\` (= \`node esbuild.config.mjs && node bench/run.mjs\`)${QUICK ? ' with --quick' : ''}`,
    `- date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; whole run ${fmt(totalMs / 1000, 0)} s`,
    `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'cpu'}, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB RAM, ${os.type()} ${os.release()}, node ${process.version}`,
    `- load average (1 min) at start ${fmt(LOAD_AT_START, 1)}, at end ${fmt(os.loadavg()[0], 1)}`,
    `- shared machine: other work may run at the same time; compare ratios from one run, not absolute numbers across runs`,
  ];
  return [
    ...info,
    '',
    ...lines.filter(Boolean),
    '',
    '| target | measured | met |',
    '|---|---:|:---:|',
    ...targets.map(([t, v, ok]) => `| ${t} | ${v} | ${ok ? 'yes' : '**no**'} |`),
  ].join('\n');
}

async function main() {
  if (argv[0] === '--stream-worker') {
    await streamWorker(argv[1], argv[2]);
    process.exit(0);
  }
  const only = value('--only');
  const t0 = now();
  const results = {};
  // One side at a time, so that they don't compete for the two cores.
  if (!only || only === 'spawn') results.spawn = await measureSpawn();
  if (!only || only === 'ours') results.ours = await measureServer('ours');
  if (!only || only === 'codex') results.codex = await measureServer('codex');
  const md = report(results, now() - t0);
  process.stdout.write(md + '\n');
  if (flag('--write')) {
    const path = join(ROOT, 'bench', 'RESULTS.md');
    const begin = '<!-- bench:begin (generated by node bench/run.mjs --write) -->';
    const end = '<!-- bench:end -->';
    let doc;
    try {
      doc = readFileSync(path, 'utf8');
    } catch {
      doc = `# Benchmark results\n\n${begin}\n${end}\n`;
    }
    const i = doc.indexOf(begin);
    const j = doc.indexOf(end);
    doc = i >= 0 && j > i ? doc.slice(0, i + begin.length) + '\n' + md + '\n' + doc.slice(j) : `${doc}\n${begin}\n${md}\n${end}\n`;
    writeFileSync(path, doc);
    process.stderr.write(`wrote ${path}\n`);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${e.stack ?? e}\n`);
    process.exit(1);
  },
);
