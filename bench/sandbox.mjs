#!/usr/bin/env node
// Sandbox start overhead: how much longer a command takes to start and exit inside the sandbox
// than unsandboxed. Linux with bubblewrap only. Two parts, variants interleaved round by round so
// machine load hits them alike:
//  1. on the spot: the exec-server's planner (src/server/sandbox, bundled on the fly with esbuild)
//     plans each start and `/bin/true` runs through spawnSync as the server would launch it;
//  2. through the exec-server over the wire (dist/cli.js; `npm run build` first), what a client
//     sees from `process/start` to `process/closed`: a server that builds the next sandbox ahead
//     of time (the default) and one started with --sandbox-prewarm-ms 0. Starts are paced (--pace
//     ms apart, default 50: a person or a build script, not a fork bomb) and the table says how
//     many ran in a sandbox built ahead of time.
//
//   node bench/sandbox.mjs            60 rounds
//   node bench/sandbox.mjs --runs 200 --pace 20
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { Client, launchServer, withTimeout } from './wire.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 60;
const paceArg = process.argv.indexOf('--pace');
const PACE_MS = paceArg > 0 ? Number(process.argv[paceArg + 1]) : 50;

const tmp = mkdtempSync(join(os.tmpdir(), 'exec-bridge-bench-sbx-'));
const bundle = join(tmp, 'sandbox.cjs');
await esbuild.build({
  stdin: {
    contents: "export { planSpawn } from './src/server/sandbox';\nexport { sandboxForPolicy } from './src/protocol/sandbox';\n",
    resolveDir: root,
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  outfile: bundle,
  logLevel: 'warning',
});
const { planSpawn, sandboxForPolicy } = createRequire(import.meta.url)(bundle);

const ws = mkdtempSync(join(os.tmpdir(), 'exec-bridge-bench-ws-'));
const cwd = pathToFileURL(ws).href;
const env = { PATH: '/usr/bin:/bin' };
const variants = [
  ['unsandboxed /bin/true', null],
  ['read-only, network on (bwrap)', sandboxForPolicy({ policy: 'read-only', network: true, cwd })],
  ['read-only, network off (bwrap + seccomp)', sandboxForPolicy({ policy: 'read-only', cwd })],
  ['workspace-write, network off (bwrap + seccomp)', sandboxForPolicy({ policy: 'workspace-write', cwd })],
  // The managed network: the proxy (started once, by the warm-up) and the in-sandbox bridge + filter launcher.
  [
    'workspace-write, managed network (bwrap + bridge + seccomp)',
    sandboxForPolicy({ policy: 'workspace-write', cwd }),
    { allow: ['example.com'] },
  ],
];

/**
 * Per variant: its request, the ms of planning it once, then each measured start's ms and its children's CPU ms.
 * @type {{ name: string, req: object, planMs: number, times: number[], cpu: number }[]}
 */
const plans = [];
for (const [name, sandbox, managedNetwork] of variants) {
  const req = { argv: ['/bin/true'], arg0: null, cwd: ws, env, tty: false, sandbox, ...(managedNetwork ? { managedNetwork } : {}) };
  await planSpawn(req); // warm: the one-time bwrap probe is not part of a start
  const t = performance.now();
  const plan = await planSpawn(req);
  const planMs = performance.now() - t;
  plan.dispose();
  plans.push({ name, req, planMs, times: [], cpu: 0 });
}

// CPU time of reaped children (utime+stime of waited-for children, in clock ticks of 10 ms): a
// measure that machine load does not inflate the way wall-clock time is inflated.
const childCpuMs = () => {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
};

for (let round = 0; round < RUNS; round++) {
  for (const v of plans) {
    const t0 = performance.now();
    const c0 = childCpuMs();
    const plan = await planSpawn(v.req); // planning is part of every real start
    // As the server starts a pipe process: the direct launch, its files as fds 3, 4, …
    const launch = plan.pipeLaunch ?? { file: plan.file, args: plan.args, files: [] };
    const fds = launch.files.map((f) => openSync(f, 'r'));
    const r = spawnSync(launch.file, launch.args, {
      cwd: plan.cwd,
      env: plan.env,
      stdio: ['ignore', 'ignore', 'ignore', ...fds],
      timeout: 10_000,
    });
    fds.forEach((fd) => closeSync(fd));
    v.times.push(performance.now() - t0);
    v.cpu += childCpuMs() - c0;
    plan.dispose();
    if (r.status !== 0) throw new Error(`${v.name}: exit ${r.status} ${r.error ?? ''}`);
  }
}

const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
/** An overhead with its sign (a sandbox built ahead of time can start faster than a plain spawn). @param {number} ms */
const signed = (ms) => `${ms >= 0 ? '+' : ''}${ms.toFixed(2)}`;
// The first variant, unsandboxed, is the base of the overheads.
const base = q(plans[0]?.times ?? [], 0.5);
const header = `${RUNS} runs each, ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)}, ${process.version}, bwrap ${spawnSync('bwrap', ['--version'], { encoding: 'utf8' }).stdout.trim()}`;
console.log(`1. sandbox built on the spot (planner + spawnSync): ${header}\n`);
console.log('| variant | median ms | p90 ms | overhead vs unsandboxed (median) | child CPU ms per start | plan ms |');
console.log('|---|---|---|---|---|---|');
plans.forEach((v, i) => {
  const med = q(v.times, 0.5);
  console.log(
    `| ${v.name} | ${med.toFixed(2)} | ${q(v.times, 0.9).toFixed(2)} | ${i === 0 ? '—' : signed(med - base)} | ${(v.cpu / RUNS).toFixed(1)} | ${v.planMs.toFixed(2)} |`,
  );
});

// ---- 2. through the exec-server ----
const CLI = join(root, 'dist', 'cli.js');
/** A server with these options, and per variant (in the order of `variants`) its measured starts' ms and how many ran warm. */
async function startServer(name, args) {
  const server = await launchServer('ours', process.execPath, [CLI, 'serve', '--listen', 'ws://127.0.0.1:0', ...args]);
  const client = await Client.connect(server.url);
  const rows = variants.map(([variant, sandbox, managedNetwork]) => ({
    variant,
    sandbox,
    managedNetwork,
    times: /** @type {number[]} */ ([]),
    warm: 0,
  }));
  return { name, server, client, rows };
}
const aheadOfTime = await startServer('built ahead of time (default)', ['--verbose']);
const onTheSpot = await startServer('built on the spot (--sandbox-prewarm-ms 0)', ['--sandbox-prewarm-ms', '0']);
const servers = [aheadOfTime, onTheSpot];
let n = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let round = -1; round < RUNS; round++) {
  for (const s of servers) {
    for (const row of s.rows) {
      const { sandbox, managedNetwork } = row;
      const t0 = performance.now();
      const logged = s.server.stderr().length;
      const managed = managedNetwork ? { enforceManagedNetwork: true, managedNetwork } : {};
      await withTimeout(s.client.run(`p${++n}`, ['/bin/true'], { cwd, ...(sandbox ? { sandbox } : {}), ...managed }), 20_000, 'a start');
      if (round >= 0) row.times.push(performance.now() - t0); // round -1 warms up (and builds the first sandboxes)
      await sleep(PACE_MS);
      // The --verbose line of this start (it went out before the pause ended).
      if (round >= 0 && s.server.stderr().slice(logged).includes('running in the waiting sandbox')) row.warm++;
    }
  }
}
// For bench/run.mjs's table of targets: per server and variant, the median ms over its unsandboxed start.
const overheads = Object.fromEntries(
  servers.map((s) => {
    const b = q(s.rows[0]?.times ?? [], 0.5);
    return [s === aheadOfTime ? 'aheadOfTime' : 'onTheSpot', Object.fromEntries(s.rows.map((row) => [row.variant, q(row.times, 0.5) - b]))];
  }),
);
const used = aheadOfTime.server.stderr().split('running in the waiting sandbox').length - 1;
console.log(`\n2. through the exec-server (process/start → process/closed over the wire, starts ${PACE_MS} ms apart): ${header}\n`);
console.log('| variant | server | median ms | p90 ms | overhead vs unsandboxed (median) | ran warm |');
console.log('|---|---|---|---|---|---|');
for (const s of servers) {
  const b = q(s.rows[0]?.times ?? [], 0.5);
  s.rows.forEach((row, i) => {
    const med = q(row.times, 0.5);
    const warm = i === 0 || s === onTheSpot ? '—' : `${row.warm}/${RUNS}`;
    console.log(
      `| ${row.variant} | ${s.name} | ${med.toFixed(2)} | ${q(row.times, 0.9).toFixed(2)} | ${i === 0 ? '—' : signed(med - b)} | ${warm} |`,
    );
  });
}
console.log(
  `\n${used} of ${RUNS * (variants.length - 1)} measured sandboxed starts on the default server ran in a sandbox built ahead of time (the warm-up round builds the first ones).`,
);
console.log(`\nbench-json: ${JSON.stringify(overheads)}`);
for (const s of servers) {
  s.client.close();
  await s.server.stop();
}
rmSync(tmp, { recursive: true, force: true });
rmSync(ws, { recursive: true, force: true });
