#!/usr/bin/env node
// Issue 26 item 2: `exec-bridge run` streaming 256 MiB of a command's stdout into a pipe, against
// plain `child_process.spawn` piping the same command into a pipe, side by side in one run.
//
//   node bench/runPipe.mjs [--rounds N] [--codex] [--client-bundles A.js,B.js] [--transports tcp,unix]
//                          [--profile DIR] [CLI.js ...]
//     (default: 6 rounds of this tree's dist/cli.js; after `node esbuild.config.mjs`)
//   e.g. node bench/runPipe.mjs --rounds 10 /tmp/before/dist/cli.js dist/cli.js   (paired builds)
//
// Each round runs every side once, in an order reversed every round: the spawn baseline (`node -e`
// that spawns `head -c 268435456 /dev/zero` and pipes its stdout into its own stdout), and for each
// build `node <cli.js> run --url <that build's own server> --no-stdin -- head …`, then the same with
// `-- true` (the start alone). With `--client-bundles` (bench/clientBench.ts bundled, one per build),
// also ExecServerClient alone on the same server (it drops the bytes: the client-CPU target of
// issues 16 and 26). With `--codex`, the first build's `run` also goes to a `codex exec-server`
// (base64: codex has no binary frames), for its RSS. Every stdout is a real pipe (a FIFO) that this
// process reads into one reused buffer and counts; a run that delivers a byte short fails the bench.
// Figures:
//   - stream MiB/s: 256 MiB over the time from the first byte to the end of the pipe at the reader
//     (the start of node and the connect are item 3's, bench/cliStart.mjs); wall: spawn → exit.
//   - client CPU: user + sys of the `node` process itself (a preload reads process.resourceUsage()
//     at its exit and writes it to fd 3); "stream" = the run's minus its start's in the same round.
//     The spawn baseline's `head` is its child and not counted.
//   - server CPU: /proc/<pid>/stat of the server around each run; server RSS sampled every 10 ms
//     (/proc/<pid>/status VmRSS), the peak over the side's runs.
// With --profile DIR every client (and server) runs under `node --cpu-prof --cpu-prof-dir DIR`.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { launchServer, withTimeout } from './wire.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const BYTES = 256 * 1024 * 1024;
const argv = process.argv.slice(2);
/** @param {string} name */
const opt = (name) => (argv.includes(name) ? argv.splice(argv.indexOf(name), 2)[1] : undefined);
/** @param {string} name */
const flag = (name) => (argv.includes(name) ? (argv.splice(argv.indexOf(name), 1), true) : false);
const ROUNDS = Number(opt('--rounds') ?? 6);
const PROFILE = opt('--profile');
const CODEX = flag('--codex');
/** Our servers on loopback TCP (the default, as `run --bundled` starts it) and/or a Unix socket (ws+unix:). */
const TRANSPORTS = (opt('--transports') ?? 'tcp').split(',');
const CLIENT_BUNDLES = opt('--client-bundles')?.split(',') ?? [];
const builds = (argv.length ? argv : [join(ROOT, 'dist', 'cli.js')]).map((p) => resolve(p));
const dir = mkdtempSync(join(tmpdir(), 'eb-run-pipe-'));
const token = join(dir, 'token');
writeFileSync(token, randomBytes(16).toString('hex'), { mode: 0o600 });
const preload = join(dir, 'usage.cjs');
writeFileSync(
  preload,
  `process.on('exit', () => { const u = process.resourceUsage(); try { require('fs').writeSync(3, JSON.stringify({ cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6, maxRssMiB: u.maxRSS / 1024 }) + '\\n'); } catch {} });\n`,
);
const profArgs = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', resolve(PROFILE)] : [];
if (PROFILE) mkdirSync(PROFILE, { recursive: true });
const HEAD = ['head', '-c', String(BYTES), '/dev/zero'];
const SPAWN_PIPE = `const c = require('child_process').spawn('head', ${JSON.stringify(HEAD.slice(1))}, { stdio: ['ignore', 'pipe', 'inherit'] }); c.stdout.pipe(process.stdout); c.on('close', (code) => (process.exitCode = code));`;

/** @typedef {{ pid: number | undefined, url: string, stop(): Promise<void> }} Server */
/**
 * @typedef {{ wallMs: number, streamMs: number, cpuS: number, maxRssMiB: number, startCpuS?: number,
 *   serverCpuS: number, serverRssBefore: number, serverPeakMiB: number }} Result
 */

/** @param {number | undefined} pid */
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in ticks of 10 ms
  } catch {
    return NaN;
  }
}
/** @param {number | undefined} pid */
function rssMiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

let fifoNo = 0;
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);
/**
 * A real pipe (a FIFO opened at both ends and unlinked; Node has no pipe(2)) whose read end we read
 * into one reused buffer: the reader allocates nothing and costs every side the same little.
 */
function pipeReader() {
  const path = join(dir, `fifo${++fifoNo}`);
  execFileSync('mkfifo', ['-m', '600', path]);
  const ours = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const childFd = openSync(path, constants.O_WRONLY);
  unlinkSync(path);
  const r = { bytes: 0, bad: 0, first: 0, last: 0, childFd, ended: Promise.resolve() };
  const options = {
    fd: ours,
    readable: true,
    writable: false,
    onread: {
      buffer: READ_BUFFER,
      /** @param {number} n */
      callback: (n) => {
        if (r.bytes === 0) r.first = performance.now();
        r.bytes += n;
        // Every byte of /dev/zero is 0: check the ends of each read (cheap), not all.
        if (READ_BUFFER[0] !== 0 || READ_BUFFER[n - 1] !== 0) r.bad++;
        return true;
      },
    },
  };
  const socket = new Socket(/** @type {import('node:net').SocketConstructorOpts} */ (options));
  r.ended = once(socket, 'end').then(() => void (r.last = performance.now()));
  return r;
}

/**
 * One client process with its stdout into a pipe we read: its figures, and the server's around it.
 * @param {string[]} args @param {Server | undefined} server @param {number} expect
 * @returns {Promise<Result>}
 */
async function measure(args, server, expect) {
  const pipe = pipeReader();
  const child = spawn(process.execPath, ['--require', preload, ...profArgs, ...args], {
    stdio: ['ignore', pipe.childFd, 'inherit', 'pipe'],
    cwd: '/tmp',
  });
  closeSync(pipe.childFd);
  const t0 = performance.now();
  let usage = '';
  child.stdio[3]?.on('data', (d) => (usage += d));
  const pid = server?.pid;
  const cpu0 = cpuSeconds(pid);
  const rss0 = rssMiB(pid);
  let peak = rss0;
  const timer = pid ? setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 10) : undefined;
  try {
    const [code] = await withTimeout(once(child, 'close'), 180_000, args.join(' '));
    if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}`);
    await withTimeout(pipe.ended, 10_000, 'the end of the pipe');
  } finally {
    clearInterval(timer);
  }
  const { bytes, bad, first, last } = pipe;
  if (bytes !== expect || bad) throw new Error(`${args.join(' ')}: ${bytes} bytes (${bad} bad reads), expected ${expect}`);
  const u = JSON.parse(usage.trim().split('\n').pop() ?? '{}');
  return {
    wallMs: performance.now() - t0,
    streamMs: bytes ? last - first : 0,
    cpuS: u.cpuS,
    maxRssMiB: u.maxRssMiB,
    serverCpuS: cpuSeconds(pid) - cpu0,
    serverRssBefore: rss0,
    serverPeakMiB: Math.max(peak, rssMiB(pid)),
  };
}

/**
 * bench/clientBench.ts (ExecServerClient, binary frames, the bytes dropped) on one server.
 * @param {string} bundle @param {Server} server @returns {Promise<Result>}
 */
async function clientBench(bundle, server) {
  const child = spawn(process.execPath, [bundle, 'stream', server.url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const cpu0 = cpuSeconds(server.pid);
  const rss0 = rssMiB(server.pid);
  let peak = rss0;
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(server.pid))), 10);
  try {
    const [code] = await withTimeout(once(child, 'exit'), 180_000, 'clientBench stream');
    if (code !== 0) throw new Error(`clientBench exited ${code}`);
  } finally {
    clearInterval(timer);
  }
  const r = JSON.parse(out.trim().split('\n').pop() ?? '{}');
  return {
    wallMs: r.wallS * 1000,
    streamMs: r.wallS * 1000,
    cpuS: r.cpuS,
    maxRssMiB: r.maxRssMiB,
    serverCpuS: cpuSeconds(server.pid) - cpu0,
    serverRssBefore: rss0,
    serverPeakMiB: Math.max(peak, rssMiB(server.pid)),
  };
}

let serverNo = 0;
/** @param {string} cli @param {string} transport @returns {Promise<Server>} */
async function startOurs(cli, transport) {
  const unix = transport === 'unix';
  const sock = join(dir, `s${++serverNo}`);
  const listen = unix ? `unix:${sock}` : 'ws://127.0.0.1:0';
  const s = await launchServer(
    'ours',
    process.execPath,
    [...profArgs, cli, 'serve', '--listen', listen, '--token-file', token],
    30_000,
    unix,
  );
  return { url: s.url, pid: s.child.pid, stop: s.stop };
}
/** clientBench presents no token: its side gets a server of its own without one (loopback, this user). @param {string} cli @returns {Promise<Server>} */
async function startOursNoToken(cli) {
  const s = await launchServer('ours', process.execPath, [...profArgs, cli, 'serve', '--listen', 'ws://127.0.0.1:0'], 30_000);
  return { url: s.url, pid: s.child.pid, stop: s.stop };
}
/** @returns {Promise<Server>} */
async function startCodex() {
  const s = await launchServer('codex', join(ROOT, 'node_modules', '.bin', 'codex'), ['exec-server', '--listen', 'ws://127.0.0.1:0']);
  // The npm bin is a node wrapper around the native binary: measure the binary.
  let pid = s.child.pid;
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    pid = kids[0] || pid;
  } catch {
    // the wrapper itself
  }
  return { url: s.url, pid, stop: s.stop };
}

/** @param {string} cli @param {string} url @param {string | undefined} tok @param {string[]} cmd */
const runArgs = (cli, url, tok, cmd) => [cli, 'run', '--url', url, ...(tok ? ['--token-file', tok] : []), '--no-stdin', '--', ...cmd];

/** @param {number[]} xs */
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
/** @param {number} v */
const f = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '—');
/** @param {Result} x */
const mibs = (x) => BYTES / 2 ** 20 / (x.streamMs / 1000);

/** @type {Server[]} */
const servers = [];
try {
  /** @type {Array<{ name: string, run: () => Promise<Result> }>} */
  const sides = [{ name: 'spawn → pipe', run: () => measure(['-e', SPAWN_PIPE], undefined, BYTES) }];
  for (const [i, cli] of builds.entries()) {
    const tag = builds.length > 1 ? ` [${i}] ${cli}` : '';
    for (const transport of TRANSPORTS) {
      const s = await startOurs(cli, transport);
      servers.push(s);
      sides.push({
        name: `run → pipe${tag}${TRANSPORTS.length > 1 || transport !== 'tcp' ? ` (${transport})` : ''}`,
        run: async () => {
          const r = await measure(runArgs(cli, s.url, token, HEAD), s, BYTES);
          const t = await measure(runArgs(cli, s.url, token, ['true']), s, 0);
          return { ...r, startCpuS: t.cpuS };
        },
      });
    }
    const bundle = CLIENT_BUNDLES[i];
    if (bundle) {
      const s = await startOursNoToken(cli);
      servers.push(s);
      sides.push({ name: `ExecServerClient, bytes dropped${tag}`, run: () => clientBench(bundle, s) });
    }
  }
  if (CODEX) {
    const c = await startCodex();
    servers.push(c);
    const cli = builds[0] ?? '';
    sides.push({ name: 'run → pipe, codex server (base64)', run: () => measure(runArgs(cli, c.url, undefined, HEAD), c, BYTES) });
  }
  /** @type {Map<string, Result[]>} */
  const rows = new Map(sides.map((s) => [s.name, []]));
  const loads = [];
  for (let r = 0; r < ROUNDS; r++) {
    loads.push(loadavg()[0] ?? NaN);
    for (const s of r % 2 ? [...sides].reverse() : sides) {
      const x = await s.run();
      rows.get(s.name)?.push(x);
      process.stderr.write(`${r} ${s.name}: ${f(x.streamMs / 1000, 3)} s, CPU ${f(x.cpuS)} s, server ${f(x.serverCpuS)} s\n`);
    }
  }
  loads.push(loadavg()[0] ?? NaN);
  const base = rows.get('spawn → pipe') ?? [];
  console.log(`\n${ROUNDS} rounds, load average (1 min) ${f(Math.min(...loads), 1)}–${f(Math.max(...loads), 1)}\n`);
  console.log(
    '| 256 MiB `head -c` into a pipe | stream MiB/s, median (each round) | / spawn, median of the rounds | wall s | client CPU s (start alone; stream = run − start) | server CPU s | server RSS before → peak MiB | client peak RSS MiB |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  /** For bench/run.mjs's table of targets: per side, the medians it judges by. */
  const figures = {};
  for (const s of sides) {
    const xs = rows.get(s.name) ?? [];
    const ratio = med(xs.map((x, i) => mibs(x) / mibs(base[i] ?? x)));
    const start = xs.every((x) => x.startCpuS !== undefined)
      ? ` (${f(med(xs.map((x) => x.startCpuS ?? NaN)))}; stream ${f(med(xs.map((x) => x.cpuS - (x.startCpuS ?? NaN))))})`
      : '';
    const cells = [
      s.name,
      `${f(med(xs.map(mibs)), 0)} (${xs.map((x) => f(mibs(x), 0)).join(', ')})`,
      f(ratio),
      f(med(xs.map((x) => x.wallMs / 1000))),
      `${f(med(xs.map((x) => x.cpuS)))}${start}`,
      f(med(xs.map((x) => x.serverCpuS))),
      xs[0]?.serverPeakMiB === undefined || Number.isNaN(xs[0].serverPeakMiB)
        ? '—'
        : `${f(med(xs.map((x) => x.serverRssBefore)), 0)} → ${f(Math.max(...xs.map((x) => x.serverPeakMiB)), 0)}`,
      f(med(xs.map((x) => x.maxRssMiB)), 0),
    ];
    console.log(`| ${cells.join(' | ')} |`);
    figures[s.name] = {
      ratioToSpawn: ratio,
      clientCpuS: med(xs.map((x) => x.cpuS)),
      streamCpuS: xs.every((x) => x.startCpuS !== undefined) ? med(xs.map((x) => x.cpuS - (x.startCpuS ?? NaN))) : undefined,
      serverPeakMiB: Math.max(...xs.map((x) => x.serverPeakMiB)),
    };
  }
  console.log(`\nbench-json: ${JSON.stringify(figures)}`);
} finally {
  for (const s of servers) await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
