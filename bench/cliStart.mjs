#!/usr/bin/env node
// The cost of a CLI start (issue 26 item 3): `node <cli.js> run --url <our server's unix socket>
// --no-stdin -- true`, wall time and CPU (user + sys of the child, from sh's `times`, 10 ms ticks),
// for one or more builds taking turns (paired, the order reversed every round), beside
// `node -e 0`. The server is this tree's dist/cli.js serve, started here on a socket in a 0700
// directory with a 0600 token.
//
//   node bench/cliStart.mjs [N] [CLI.js]...   (default: 25 rounds of dist/cli.js; after the build)
//   e.g. node bench/cliStart.mjs 25 /tmp/before/dist/cli.js dist/cli.js
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { withTimeout } from './wire.mjs';

const root = new URL('..', import.meta.url).pathname;
const [n = '25', ...clis] = process.argv.slice(2);
const builds = ['node -e 0', ...(clis.length ? clis : [join(root, 'dist', 'cli.js')])];
const dir = mkdtempSync(join(tmpdir(), 'eb-cli-start-'));
const token = join(dir, 'token');
writeFileSync(token, randomBytes(16).toString('hex'), { mode: 0o600 });
const server = spawn(
  process.execPath,
  [join(root, 'dist', 'cli.js'), 'serve', '--listen', `unix:${join(dir, 's')}`, '--token-file', token],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);

/** One start to its exit: wall and CPU in ms (bounded: a hung one fails the bench). */
async function start(build) {
  const args =
    build === 'node -e 0'
      ? ['-e', '0']
      : [build, 'run', '--url', `ws+unix:${join(dir, 's')}:/`, '--token-file', token, '--no-stdin', '--', 'true'];
  const t0 = performance.now();
  const child = spawn('sh', ['-c', '"$@"; times', 'sh', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await withTimeout(once(child, 'exit'), 60_000, build);
  const wall = performance.now() - t0;
  if (code !== 0) throw new Error(`${build} exited ${code}`);
  // `times`: the shell's own line, then its children's: "0m0.120s 0m0.030s".
  const m = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(out);
  if (!m) throw new Error(`no times in ${JSON.stringify(out)}`);
  return { wall, cpu: (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000 };
}

try {
  const [line] = await withTimeout(once(server.stdout, 'data'), 30_000, 'serve');
  if (!String(line).startsWith('ws+unix:')) throw new Error(`serve said ${line}`);
  /** @type {Map<string, { wall: number[], cpu: number[] }>} */
  const rows = new Map(builds.map((b) => [b, { wall: [], cpu: [] }]));
  /** @type {number[]} */
  const loads = [];
  for (let i = 0; i < Number(n); i++) {
    loads.push(loadavg()[0] ?? 0);
    for (const b of i % 2 ? [...builds].reverse() : builds) {
      const r = await start(b);
      rows.get(b)?.wall.push(r.wall);
      rows.get(b)?.cpu.push(r.cpu);
    }
  }
  /** @param {number[]} xs */
  const med = (xs) => ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN).toFixed(0);
  /** @param {number[]} xs */
  const min = (xs) => Math.min(...xs).toFixed(0);
  console.log(`\n${n} rounds, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (1 min)\n`);
  console.log('| start | wall, median (min) | CPU user+sys, median (min) |');
  console.log('|---|---|---|');
  for (const [b, { wall, cpu }] of rows) console.log(`| \`${b}\` | ${med(wall)} ms (${min(wall)}) | ${med(cpu)} ms (${min(cpu)}) |`);
} finally {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
