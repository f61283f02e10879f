#!/usr/bin/env node
// Side-by-side benchmark: our exec-server (dist/cli.js serve) vs the real `codex exec-server`
// (npm @openai/codex, pinned) vs plain child_process.spawn / node-pty, in ONE run on one machine,
// so that the issue's targets can be checked as ratios (see bench/RESULTS.md).
//
//   npm run bench                      build, run every phase, print markdown: issue 26's targets
//                                      first (bench/targets.mjs), then each phase's tables
//   node bench/run.mjs --write         …and replace the generated part of bench/RESULTS.md (every
//                                      phase only: not with --phases or --only)
//   node bench/run.mjs --quick         fewer iterations (a smoke run, not for RESULTS.md)
//   node bench/run.mjs --only ours     one side (ours|codex|spawn), e.g. with --profile
//   node bench/run.mjs --phases stream  some of: oneshot,parallel,echo,stream,readfile (the three
//                                      sides), spool, sandbox, runpipe, roundtrip, vscode
//   node bench/run.mjs --phases spool   only the output spool's figures (ours; bench/spoolBench.ts)
//   node bench/run.mjs --phases sandbox  only the sandboxed start against the unsandboxed one
//                                      (bench/sandbox.mjs, 40 rounds, 10 with --quick; needs bwrap)
//   node bench/run.mjs --phases runpipe  only `exec-bridge run` into a pipe against spawn into a pipe
//                                      (bench/runPipe.mjs: 6 alternating rounds, 3 with --quick; with
//                                      ExecServerClient and a codex server beside them)
//   node bench/run.mjs --phases roundtrip  only `exec-bridge run --ssh` against `ssh host true`
//                                      (bench/ssh.mjs's PHASES=roundtrip, 5 reps, 3 with --quick;
//                                      at most 6 minutes; left out, saying so, without /usr/sbin/sshd)
//   node bench/run.mjs --phases vscode  only the real VS Code's figures (scripts/vscode-test.mjs, the
//                                      newest target): activation, and `yes | head -c 200M` (32M with
//                                      --quick) in our terminal and in VS Code's own, side by side
//   node bench/run.mjs --profile       start our server under `node --cpu-prof` (bench/profiles/)
//   node bench/run.mjs --cli X.js --client-bundle Y.js   another build of our server / of clientBench
//                                      (paired before/after runs of two bundles, alternating)
//
// The client speaks the raw wire protocol over `ws` (one JSON-RPC message per frame, no
// "jsonrpc" member): it decodes base64 output to count bytes but keeps nothing, so the client is
// not the bottleneck. Every loop has a fixed count and every wait a timeout.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureRoundTrips, measureRunPipe, measureSandbox, measureVscode } from './subBenches.mjs';
import { fmt, issue26Targets, percentile } from './targets.mjs';
import { Client, launchServer, PATH_ENV, withTimeout } from './wire.mjs';

const require = createRequire(import.meta.url);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const argValue = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const CLI = argValue('--cli') ?? join(ROOT, 'dist', 'cli.js');
const CODEX = join(ROOT, 'node_modules', '.bin', 'codex');
const STREAM_BYTES = 256 * 1024 * 1024;
const READ_FILE_BYTES = 64 * 1024 * 1024;
const READ_FILE = join(os.tmpdir(), `exec-bridge-bench-${process.pid}.bin`);
/** ExecServerClient (src/client) bundled for the figures taken through our real client. */
const CLIENT_BENCH = argValue('--client-bundle') ?? join(ROOT, 'bench', 'out', 'clientBench.js');
/** The output spool's figures (bench/spoolBench.ts, bundled by the run). */
const SPOOL_BENCH = join(ROOT, 'bench', 'out', 'spoolBench.js');

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
const PHASES = new Set((value('--phases') ?? 'oneshot,parallel,echo,stream,readfile,spool,sandbox,runpipe,roundtrip,vscode').split(','));
/** The phases that compare the three sides (the spool's figures are ours alone). */
const SIDE_PHASES = ['oneshot', 'parallel', 'echo', 'stream', 'readfile'];

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

/** A field of /proc/<pid>/status in MiB: VmHWM (peak resident set) or VmRSS (now). */
function statusMiB(pid, field = 'VmHWM') {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}
const peakRssMiB = (pid) => statusMiB(pid, 'VmHWM');

/**
 * Runs `work` while sampling a server's resident set every 10 ms; adds the server's CPU time for
 * it (`serverCpuS`) and its RSS before (`rssBeforeMiB`) and at the peak (`serverPeakMiB`).
 */
async function sampled(pid, work) {
  const cpu0 = cpuSeconds(pid);
  const before = statusMiB(pid, 'VmRSS');
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, statusMiB(pid, 'VmRSS'))), 10);
  try {
    const r = await work();
    peak = Math.max(peak, statusMiB(pid, 'VmRSS'));
    return { ...r, serverCpuS: cpuSeconds(pid) - cpu0, rssBeforeMiB: before, serverPeakMiB: peak };
  } finally {
    clearInterval(timer);
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

/** 64 at once, rounds of: wall per round, and each process's own start→closed time (`each`). */
async function serverParallel(client, cfg = PARALLEL) {
  const walls = [];
  const each = [];
  const start = now();
  for (let r = 0; more(cfg, r, start); r++) {
    const t0 = now();
    const runs = [];
    const lat = [];
    for (let i = 0; i < cfg.width; i++)
      runs.push(
        client.run(uid('par'), ['/bin/echo', 'hello']).then((b) => {
          lat.push(now() - t0);
          return b;
        }),
      );
    const bytes = await withTimeout(Promise.all(runs), 60_000, '64 parallel processes');
    if (bytes.some((b) => b !== 6)) throw new Error(`parallel: unexpected output sizes ${bytes}`);
    if (r >= cfg.warmup) {
      walls.push(now() - t0);
      each.push(...lat);
    }
  }
  return Object.assign(walls, { each });
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
  const each = [];
  const start = now();
  for (let r = 0; more(PARALLEL, r, start); r++) {
    const t0 = now();
    const runs = [];
    const lat = [];
    for (let i = 0; i < PARALLEL.width; i++) runs.push(spawnOnce('/bin/echo', ['hello']).then(() => lat.push(now() - t0)));
    await withTimeout(Promise.all(runs), 60_000, 'spawn 64 parallel');
    if (r >= PARALLEL.warmup) {
      walls.push(now() - t0);
      each.push(...lat);
    }
  }
  return Object.assign(walls, { each });
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

/** A worker's result: the JSON of the last line it wrote. @param {string} out */
function lastJsonLine(out) {
  return JSON.parse(out.trim().split('\n').pop() ?? '');
}

async function stream(kind, url) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--stream-worker', kind, url ?? ''], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await withTimeout(once(child, 'exit'), 150_000, `${kind} stream worker`);
  if (code !== 0) throw new Error(`${kind} stream worker failed (${code})`);
  const r = lastJsonLine(out);
  if (r.bytes !== STREAM_BYTES) throw new Error(`${kind} stream: got ${r.bytes} bytes, expected ${STREAM_BYTES}`);
  return r;
}

/** Runs bench/clientBench.ts (ExecServerClient) in a child process; its JSON line. */
async function clientWorker(mode, url, extra) {
  const child = spawn(process.execPath, [CLIENT_BENCH, mode, url, ...(extra ? [extra] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await withTimeout(once(child, 'exit'), 150_000, `client ${mode}`);
  if (code !== 0) throw new Error(`client ${mode} failed (${code})`);
  return lastJsonLine(out);
}

async function buildClientBench(name = 'clientBench', outfile = CLIENT_BENCH) {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(ROOT, 'bench', `${name}.ts`)],
    bundle: true,
    platform: 'node',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    external: ['node-pty'],
  });
}

/** The output spool's figures: bench/spoolBench.ts in a child process (it starts servers of its own). */
async function measureSpool() {
  phase('spool: detached cost, replay, TTL edges…');
  await buildClientBench('spoolBench', SPOOL_BENCH);
  const child = spawn(process.execPath, [SPOOL_BENCH, CLI, ...(QUICK ? ['quick'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await withTimeout(once(child, 'exit'), 600_000, 'spool bench');
  if (code !== 0) throw new Error(`spool bench failed (${code})`);
  phase(' done\n');
  return lastJsonLine(out);
}

/** The spool's tables: medians of the rounds, ratios within this run. */
function spoolReport(r) {
  const med = (xs) => percentile(xs, 50);
  const side = (spool) => r.costs.filter((c) => c.spool === spool);
  const perMiB = (cs, key) => med(cs.map((c) => c[key] / c.mib));
  const cost = [true, false].map((spool) => {
    const cs = side(spool);
    return `| ${spool ? 'spool (asked)' : 'no spool'} | ${cs.length} | ${fmt(med(cs.map((c) => c.wallS)), 2)} | ${fmt(perMiB(cs, 'cpuS') * 1000, 2)} | ${cs.map((c) => fmt(c.rssGrowthMiB, 1)).join(', ')} | ${fmt(med(cs.map((c) => c.diskMiB)), 1)} |`;
  });
  const mib = r.costs[0]?.mib;
  const ratio = perMiB(side(true), 'cpuS') / perMiB(side(false), 'cpuS');
  const rp = r.replays;
  const names = {
    attach: 'spool → ExecServerClient.attachProcess (no credit window)',
    rawPages: 'spool → raw `process/read` pages (2 MiB, base64 JSON)',
    window: 'in-memory window → raw `process/read` (1 MiB, read again and again)',
    catServer: '`cat` of a 48 MiB file, live through the server → ExecServerClient',
    catLocal: 'plain `cat` of that file, piped to the bench',
  };
  const replay = Object.entries(names).map(
    ([k, label]) =>
      `| ${label} | ${fmt(med(rp[k]), 0)} | ${rp[k].map((v) => fmt(v, 0)).join(', ')} | ${fmt(med(rp[k]) / med(rp.catLocal), 2)}× |`,
  );
  const edge = r.ttls.edge ?? [];
  // Each trial: when the resume was really sent (from the end the server told), and what it got.
  const sign = (v) => `${v > 0 ? '+' : ''}${fmt(v, 0)}`;
  const byOffset = [...new Set(edge.map((e) => e.offsetMs))].map((off) => {
    const es = edge.filter((e) => e.offsetMs === off);
    const trials = es.map(
      (e) => `${e.outcome === 'resumed' ? 'R' : e.outcome === 'expired' ? 'E' : e.outcome} ${sign(off + e.sentLateMs)}`,
    );
    return `| resume aimed at ${sign(off)} ms from the end of a 1 s TTL | resumed ${es.filter((e) => e.outcome === 'resumed').length}/${es.length} | ${trials.join(', ')} |`;
  });
  const one = (label, e) => e && `| ${label} | ${e.outcome} | answered TTL ${e.ttlAnswered ?? 'none (not asked)'} |`;
  const ttl = [
    ...byOffset,
    one('TTL 600 000 ms asked, `--max-session-ttl-ms 1500`: resume 50 ms before the cap', r.ttls.cap?.[0]),
    one('… 50 ms after the cap', r.ttls.cap?.[1]),
    one('codex-style client (asks no TTL: the default 30 s): resume 100 ms before', r.ttls.codexStyle?.[0]),
    one('… 100 ms after', r.ttls.codexStyle?.[1]),
  ].filter(Boolean);
  return [
    `| ${mib} MiB printed detached (\`head -c\` of /dev/zero), fresh server each | rounds | wall s (median) | server CPU ms per MiB (median) | server RSS growth MiB (each round) | on disk MiB |`,
    '|---|---:|---:|---:|---|---:|',
    ...cost,
    '',
    `Server CPU per MiB, spool / no spool: ${fmt(ratio, 2)}×.`,
    '',
    '| read 48 MiB back | MiB/s (median) | rounds | vs plain `cat` |',
    '|---|---:|---|---:|',
    ...replay,
    '',
    '| TTL edge | outcome | each trial: R resumed / E expired, at the ms it was really sent |',
    '|---|---|---|',
    ...ttl,
  ].join('\n');
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
    const pid = server.workerPid();
    if (PHASES.has('stream')) {
      // CPU per byte says more than wall time on a busy shared machine.
      phase(' 256 MiB stream (wire client)…');
      r.stream = await sampled(pid, () => stream(kind, server.url));
      phase(' (ExecServerClient)…');
      const c = await sampled(pid, () => clientWorker('stream', server.url));
      if (c.bytes !== undefined && c.bytes !== STREAM_BYTES) throw new Error(`client stream: ${c.bytes} bytes`);
      r.clientStream = { ...c, ms: c.wallS * 1000, clientCpuS: c.cpuS, rssMiB: c.maxRssMiB };
      await sleep(1000);
      r.rssAfterStreamMiB = statusMiB(pid, 'VmRSS');
      if (PHASES.has('parallel')) {
        phase(' 64-parallel after the streams…');
        const after = await Client.connect(server.url);
        r.parallelAfter = await serverParallel(after, { ...PARALLEL, warmup: 0 });
        after.close();
      }
    }
    if (PHASES.has('readfile')) {
      phase(' 64 MiB readFile…');
      r.readFile = await sampled(pid, () => clientWorker('readfile', server.url, READ_FILE)).catch((e) => ({
        error: String(e.message ?? e),
      }));
    }
    r.serverPeakRssMiB = peakRssMiB(pid);
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
  if (PHASES.has('readfile')) {
    phase(' 64 MiB fs.readFile…');
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = now();
      const b = await readFile(READ_FILE);
      times.push(now() - t0);
      if (b.length !== READ_FILE_BYTES) throw new Error('readFile size');
    }
    r.readFile = { wallS: percentile(times, 50) / 1000 };
  }
  phase(' done\n');
  return r;
}

const LOAD_AT_START = os.loadavg()[0];
/** The 1-minute load average every 10 s of the run (a long run on a shared machine sees it move). */
const loads = [LOAD_AT_START ?? NaN];
setInterval(() => loads.push(os.loadavg()[0] ?? NaN), 10_000).unref();

/** The run's conditions, written above its tables. */
function runInfo(totalMs) {
  return [
    `- command: \`npm run bench\` (= \`node esbuild.config.mjs && node bench/run.mjs\`)${QUICK ? ' with --quick' : ''}`,
    `- date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; whole run ${fmt(totalMs / 1000, 0)} s`,
    `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'cpu'}, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB RAM, ${os.type()} ${os.release()}, node ${process.version}`,
    `- load average (1 min) at start ${fmt(LOAD_AT_START, 1)}, at end ${fmt(os.loadavg()[0], 1)}, ${fmt(Math.min(...loads), 1)}–${fmt(Math.max(...loads), 1)} over the run`,
    `- shared machine: other work may run at the same time; compare ratios from one run, not absolute numbers across runs`,
  ];
}

function report(results) {
  const sides = ['ours', 'codex', 'spawn'].filter((k) => results[k]);
  const label = { ours: 'ours (dist/cli.js serve)', codex: 'codex exec-server 0.171.0', spawn: 'child_process.spawn / node-pty' };
  const withN = (values, cfg, d) => fmt(percentile(values, 50), d) + (values.length < cfg.n ? ` (n=${values.length})` : '');
  const row = (name, f, key) =>
    key && !sides.every((k) => results[k][key]) ? undefined : `| ${name} | ${sides.map((k) => f(results[k])).join(' | ')} |`;
  const mibs = (s) => STREAM_BYTES / (1024 * 1024) / (s.ms / 1000);
  const { ours, codex, spawn: base } = results;
  const lines = [
    `| metric | ${sides.map((k) => label[k]).join(' | ')} |`,
    `|---|${sides.map(() => '---:').join('|')}|`,
    row(`one-shot \`/bin/true\` start→closed p50 (ms, n=${ONESHOT.n})`, (r) => withN(r.oneShot, ONESHOT, 2), 'oneShot'),
    row('one-shot p95 (ms)', (r) => fmt(percentile(r.oneShot, 95)), 'oneShot'),
    row(`64 parallel \`/bin/echo\` wall, median of ${PARALLEL.n} rounds (ms)`, (r) => withN(r.parallel, PARALLEL, 1), 'parallel'),
    row('64 parallel wall, worst round (ms)', (r) => fmt(Math.max(...r.parallel), 1), 'parallel'),
    row('64 parallel: each process start→closed, p50 (ms)', (r) => fmt(percentile(r.parallel.each, 50), 1), 'parallel'),
    row('64 parallel: each process, p95 (ms)', (r) => fmt(percentile(r.parallel.each, 95), 1), 'parallel'),
    row(
      '64 parallel wall right after the streams, median (ms)',
      (r) => (r.parallelAfter ? withN(r.parallelAfter, PARALLEL, 1) : '—'),
      'parallel',
    ),
    row(`PTY echo round trip p50 (ms, n=${ECHO.n})`, (r) => withN(r.echo, ECHO, 3), 'echo'),
    row('PTY echo p95 (ms)', (r) => fmt(percentile(r.echo, 95), 3), 'echo'),
    row('server RSS before / after the streams (MiB)', (r) =>
      r.stream?.rssBeforeMiB === undefined ? '—' : `${fmt(r.stream.rssBeforeMiB, 0)} / ${fmt(r.rssAfterStreamMiB, 0)}`,
    ),
    row('server peak RSS over the run (MiB)', (r) => (r.serverPeakRssMiB === undefined ? '—' : fmt(r.serverPeakRssMiB, 0))),
  ];
  // The streams: one row per server × client.
  const streams = [];
  const srow = (name, s) =>
    s &&
    streams.push(
      `| ${name} | ${fmt(mibs(s), 0)} | ${fmt(s.ms / 1000, 2)} | ${s.serverCpuS === undefined ? '—' : fmt(s.serverCpuS, 2)} | ${fmt(s.clientCpuS, 2)} | ${fmt(s.rssMiB, 0)} | ${s.serverPeakMiB === undefined ? '—' : `${fmt(s.rssBeforeMiB, 0)} → ${fmt(s.serverPeakMiB, 0)}`} |`,
    );
  srow('ours ↔ ExecServerClient (binary frames)', ours?.clientStream);
  srow('ours ↔ codex-style wire client (base64)', ours?.stream);
  srow('codex ↔ ExecServerClient (base64: codex ignores the ask)', codex?.clientStream);
  srow('codex ↔ codex-style wire client (base64)', codex?.stream);
  srow('plain spawn, piped', base?.stream);
  const files = [];
  const frow = (name, f) =>
    f &&
    files.push(
      f.error
        ? `| ${name} | failed: ${f.error.slice(0, 120)} | | |`
        : `| ${name} | ${fmt(f.wallS * 1000, 0)} | ${fmt(READ_FILE_BYTES / 2 ** 20 / f.wallS, 0)} | ${f.cpuS === undefined ? '—' : fmt(f.cpuS, 2)} |`,
    );
  frow('ours ↔ ExecServerClient.readFile', ours?.readFile);
  frow('codex ↔ ExecServerClient.readFile', codex?.readFile);
  frow('local fs.promises.readFile (median of 5)', base?.readFile);

  const targets = [];
  const t = (name, value, ok) => targets.push([name, value, ok]);
  const ratio = (a, b) => a / b;
  if (ours?.oneShot && base?.oneShot) {
    const r1 = percentile(ours.oneShot, 50) / percentile(base.oneShot, 50);
    t(`one-shot p50 ours / spawn ≤ 2×`, `${fmt(r1)}×`, r1 <= 2);
  }
  if (ours?.echo) {
    const e = percentile(ours.echo, 50);
    t(`PTY echo p50 ours ≤ 2 ms`, `${fmt(e, 3)} ms`, e <= 2);
  }
  if (ours?.clientStream && codex?.stream && base?.stream) {
    const vsCodex = ratio(mibs(ours.clientStream), Math.max(mibs(codex.stream), mibs(codex.clientStream ?? codex.stream)));
    const vsSpawn = ratio(mibs(ours.clientStream), mibs(base.stream));
    t(`256 MiB ours ↔ our client (binary) / codex (its faster client) ≥ 3×`, `${fmt(vsCodex)}×`, vsCodex >= 3);
    t(`256 MiB ours ↔ our client (binary) / plain spawn ≥ 0.5×`, `${fmt(vsSpawn)}×`, vsSpawn >= 0.5);
  }
  if (codex?.clientStream && codex?.stream) {
    const r = ratio(mibs(codex.clientStream), mibs(codex.stream));
    t(`256 MiB our client ↔ codex / codex-style client ↔ codex ≥ 1.0×`, `${fmt(r)}×`, r >= 1);
  }
  if (ours?.stream && codex?.stream) {
    const r = ratio(mibs(ours.stream), mibs(codex.stream));
    t(`256 MiB codex-style client ↔ ours / ↔ codex (base64) ≥ 1.0×`, `${fmt(r)}×`, r >= 1);
  }
  if (ours?.clientStream) {
    const c = ours.clientStream.clientCpuS;
    t(`client CPU per 256 MiB (ExecServerClient, binary) ≤ 0.21 s (0.3× of 0.71 s)`, `${fmt(c)} s`, c <= 0.213);
  }
  if (ours?.stream && codex?.stream) {
    const peakOurs = Math.max(ours.stream.serverPeakMiB, ours.clientStream?.serverPeakMiB ?? 0);
    const peakCodex = Math.max(codex.stream.serverPeakMiB, codex.clientStream?.serverPeakMiB ?? 0);
    const r = peakOurs / peakCodex;
    t(`server peak RSS during the streams ours / codex ≤ 1.3×`, `${fmt(r)}× (${fmt(peakOurs, 0)} / ${fmt(peakCodex, 0)} MiB)`, r <= 1.3);
  }
  if (ours?.parallel && base?.parallel) {
    const r4 = percentile(ours.parallel, 50) / percentile(base.parallel, 50);
    t(`64-parallel wall ours / spawn ≤ 1.5×`, `${fmt(r4)}×`, r4 <= 1.5);
    const r5 = percentile(ours.parallel.each, 50) / percentile(base.parallel.each, 50);
    t(`64-parallel per-process p50 ours / spawn ≤ 1.5×`, `${fmt(r5)}×`, r5 <= 1.5);
  }
  if (ours?.parallelAfter && ours?.parallel) {
    const r6 = percentile(ours.parallelAfter, 50) / percentile(ours.parallel, 50);
    t(`64-parallel wall right after the 256 MiB streams / fresh (same server) ≤ 1.1×`, `${fmt(r6)}×`, r6 <= 1.1);
  }
  if (ours?.readFile && codex?.readFile && base?.readFile) {
    const ok = !ours.readFile.error;
    const vsCodex = ok && !codex.readFile.error ? codex.readFile.wallS / ours.readFile.wallS : NaN;
    const vsLocal = ok ? base.readFile.wallS / ours.readFile.wallS : NaN;
    t(`64 MiB readFile through the client ours / codex ≥ 3×`, `${fmt(vsCodex)}×`, vsCodex >= 3);
    t(`64 MiB readFile through the client ours / local fs.readFile ≥ 0.3×`, `${fmt(vsLocal)}×`, vsLocal >= 0.3);
  }
  return [
    ...lines.filter(Boolean),
    '',
    ...(streams.length
      ? [
          '| 256 MiB stdout stream | MiB/s | s | server CPU s | client CPU s | client peak RSS MiB | server RSS before → peak MiB |',
          '|---|---:|---:|---:|---:|---:|---:|',
          ...streams,
          '',
        ]
      : []),
    ...(files.length ? ['| 64 MiB file | ms | MiB/s | client CPU s |', '|---|---:|---:|---:|', ...files, ''] : []),
    '| earlier target (issue 16) | measured | met |',
    '|---|---:|:---:|',
    ...targets.map(([name, v, ok]) => `| ${name} | ${v} | ${ok ? 'yes' : '**no**'} |`),
  ].join('\n');
}

async function main() {
  if (argv[0] === '--stream-worker') {
    await streamWorker(argv[1], argv[2]);
    process.exit(0);
  }
  const only = value('--only');
  const t0 = now();
  if (!value('--client-bundle')) await buildClientBench();
  if (PHASES.has('readfile')) writeFileSync(READ_FILE, Buffer.alloc(READ_FILE_BYTES, 'exec-bridge'));
  const results = {};
  // One side at a time, so that they don't compete for the two cores.
  const sides = SIDE_PHASES.some((p) => PHASES.has(p));
  if (sides && (!only || only === 'spawn')) results.spawn = await measureSpawn();
  if (sides && (!only || only === 'ours')) results.ours = await measureServer('ours');
  if (sides && (!only || only === 'codex')) results.codex = await measureServer('codex');
  rmSync(READ_FILE, { force: true });
  const spool = PHASES.has('spool') && (!only || only === 'ours') ? await measureSpool() : undefined;
  const sub = { root: ROOT, quick: QUICK, phase, cli: CLI, clientBundle: CLIENT_BENCH };
  // A sub-bench that fails costs its own rows ("not measured"), not the run's other figures; the run still fails.
  const failed = [];
  const subPhase = (name, measure) =>
    PHASES.has(name) && !only
      ? measure(sub).catch((e) => {
          process.stderr.write(`\n${name} failed: ${e?.message ?? e}\n`);
          failed.push(name);
          return undefined;
        })
      : undefined;
  const sandbox = await subPhase('sandbox', measureSandbox);
  const runPipe = await subPhase('runpipe', measureRunPipe);
  const roundTrips = await subPhase('roundtrip', measureRoundTrips);
  const vscode = await subPhase('vscode', measureVscode);
  const targets = issue26Targets({ results, roundTrips, runPipe, sandbox, vscode });
  const md = [
    runInfo(now() - t0).join('\n'),
    '### Issue 26: every target, from this run',
    targets,
    sides ? `### The three sides\n\n${report(results)}` : '',
    spool ? spoolReport(spool) : '',
    sandbox?.text ?? '',
    runPipe?.text ?? '',
    roundTrips?.text ?? '',
    vscode?.text ?? '',
  ]
    .filter(Boolean)
    .join('\n\n');
  process.stdout.write(md + '\n');
  if (failed.length) {
    process.stderr.write(`failed phases: ${failed.join(', ')} (their rows say "not measured"; nothing written)\n`);
    process.exit(1);
  }
  if (flag('--write') && (value('--phases') || only))
    process.stderr.write('--write rewrites the whole run: not written (some phases left out)\n');
  else if (flag('--write')) {
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
