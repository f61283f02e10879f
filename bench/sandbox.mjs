#!/usr/bin/env node
// Sandbox start overhead: how much longer a command takes to start and exit inside the sandbox
// than unsandboxed, as the exec-server plans it (src/server/sandbox, bundled on the fly with
// esbuild). Every variant runs `/bin/true` through spawnSync; the variants are interleaved round by
// round so machine load hits them alike. Linux with bubblewrap only.
//
//   node bench/sandbox.mjs            60 rounds
//   node bench/sandbox.mjs --runs 200
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 60;

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
];

const plans = [];
const planMs = [];
for (const [name, sandbox] of variants) {
  const req = { argv: ['/bin/true'], arg0: null, cwd: ws, env, tty: false, sandbox };
  await planSpawn(req); // warm: the one-time bwrap probe is not part of a start
  const t = performance.now();
  const plan = await planSpawn(req);
  planMs.push(performance.now() - t);
  plan.dispose();
  plans.push({ name, req, times: [] });
}

// CPU time of reaped children (utime+stime of waited-for children, in clock ticks of 10 ms): a
// measure that machine load does not inflate the way wall-clock time is inflated.
const childCpuMs = () => {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
};

for (let round = 0; round < RUNS; round++) {
  for (const v of plans) {
    const t0 = performance.now();
    const c0 = childCpuMs();
    const plan = await planSpawn(v.req); // planning is part of every real start
    const r = spawnSync(plan.file, plan.args, { cwd: plan.cwd, env: plan.env, stdio: 'ignore', timeout: 10_000 });
    v.times.push(performance.now() - t0);
    v.cpu = (v.cpu ?? 0) + childCpuMs() - c0;
    plan.dispose();
    if (r.status !== 0) throw new Error(`${v.name}: exit ${r.status} ${r.error ?? ''}`);
  }
}

const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const base = q(plans[0].times, 0.5);
console.log(`sandbox start overhead: ${RUNS} runs each, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}, ${process.version}, bwrap ${spawnSync('bwrap', ['--version'], { encoding: 'utf8' }).stdout.trim()}\n`);
console.log('| variant | median ms | p90 ms | overhead vs unsandboxed (median) | child CPU ms per start | plan ms |');
console.log('|---|---|---|---|---|---|');
plans.forEach((v, i) => {
  const med = q(v.times, 0.5);
  console.log(`| ${v.name} | ${med.toFixed(2)} | ${q(v.times, 0.9).toFixed(2)} | ${i === 0 ? '—' : `+${(med - base).toFixed(2)}`} | ${(v.cpu / RUNS).toFixed(1)} | ${planMs[i].toFixed(2)} |`);
});
rmSync(tmp, { recursive: true, force: true });
rmSync(ws, { recursive: true, force: true });
