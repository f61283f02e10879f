#!/usr/bin/env node
// The resilient client's own figures (issue 3): `node bench/client.mjs` (after `npm run build`).
// Bundles bench/clientBench.ts with esbuild, then runs it as a child (so CPU and RSS are the
// client's alone) against our server and codex exec-server 0.171.0, both on loopback.
import { spawn, spawnSync } from 'node:child_process';
import * as esbuild from 'esbuild';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const outfile = join(root, 'bench/out/clientBench.js');
await esbuild.build({
  entryPoints: [join(root, 'bench/clientBench.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  outfile,
  logLevel: 'warning',
  external: ['node-pty'],
});

function startServer(kind) {
  const [cmd, args] =
    kind === 'ours'
      ? [process.execPath, [join(root, 'dist/cli.js'), 'serve']]
      : [join(root, 'node_modules/.bin/codex'), ['exec-server', '--listen', 'ws://127.0.0.1:0']];
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${kind}: no URL`)), 20000);
    child.stdout.once('data', (d) => {
      clearTimeout(timer);
      const url = /ws:\/\/[0-9.:]+/.exec(d.toString())?.[0];
      const pid = child.pid;
      if (!url || pid === undefined) return reject(new Error(`${kind}: no URL in its first output: ${d}`));
      resolve({ url, stop: () => process.kill(-pid, 'SIGTERM') });
    });
  });
}

const rows = {};
for (const kind of ['ours', 'codex']) {
  const server = await startServer(kind);
  try {
    for (const mode of ['stream', 'recovery']) {
      const r = spawnSync(process.execPath, [outfile, mode, server.url], { encoding: 'utf8', timeout: 180000 });
      if (r.status !== 0) throw new Error(`${kind} ${mode}: ${r.stderr}`);
      rows[`${kind} ${mode}`] = JSON.parse(r.stdout);
    }
  } finally {
    server.stop();
  }
}
const f = (n, d = 1) => Number(n).toFixed(d);
console.log(`| figure | ours | codex exec-server 0.171.0 |\n|---|---:|---:|`);
const line = (label, get) =>
  console.log(`| ${label} | ${get(rows['ours stream'], rows['ours recovery'])} | ${get(rows['codex stream'], rows['codex recovery'])} |`);
line('256 MiB through ExecServerClient: wall (s)', (s) => f(s.wallS, 2));
line('… throughput (MiB/s)', (s) => f(s.mibPerS, 0));
line('… client CPU, user+sys (s)', (s) => f(s.cpuS, 2));
line('… client peak RSS (MiB)', (s) => f(s.maxRssMiB, 0));
line('cut (server reachable): output flowing again, median / max of 8 (ms)', (_, r) => `${f(r.cutMedianMs)} / ${f(r.cutMaxMs)}`);
line('500 ms black-hole healed: output flowing again, median / max of 4 (ms)', (_, r) => `${f(r.healMedianMs)} / ${f(r.healMaxMs)}`);
line('ticks received exactly once, in order', (_, r) => r.exactLines);
