#!/usr/bin/env node
// Would moving the blocking spawn() off the server's main thread shorten a burst (issue 26 item 1)?
// 64 starts at once, each costing the main thread --work-ms of its own work (the request, the
// FIFOs, the notifications: ~1 ms per start in the server's profile), alternating round by round:
//   spawn   plain: 64 spawn() in one turn, no work (the benchmark's baseline)
//   main    the work, then spawn() on the main thread, one per turn (as the server does today)
//   worker  the work on the main thread; spawn() in a worker_thread, which reports each close
// and then one start at a time, alternating: spawn() on the main thread against through the worker.
// Not product code.   node bench/spawnOverlap.mjs [--rounds 10] [--work-ms 1]
import { spawn } from 'node:child_process';
import os from 'node:os';
import { Worker } from 'node:worker_threads';

const argv = process.argv.slice(2);
const value = (name, def) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def);
const ROUNDS = value('--rounds', 10);
const WORK_MS = value('--work-ms', 1);
const WIDTH = 64;
const now = () => performance.now();
/** @type {import('node:child_process').SpawnOptionsWithStdioTuple<'ignore', 'pipe', 'pipe'>} */
const OPTS = { stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: '/tmp', env: { PATH: '/usr/bin:/bin' } };

function spawnClosed() {
  return new Promise((resolve, reject) => {
    const c = spawn('/bin/echo', ['hello'], OPTS);
    c.stdout.resume();
    c.stderr.resume();
    c.once('error', reject);
    c.once('close', resolve);
  });
}

const busy = (ms) => {
  const end = now() + ms;
  while (now() < end);
};
const turn = () => new Promise((r) => setImmediate(r));

const WORKER = `
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const opts = ${JSON.stringify(OPTS)};
parentPort.on('message', (id) => {
  const c = spawn('/bin/echo', ['hello'], opts);
  c.stdout.resume();
  c.stderr.resume();
  c.once('close', () => parentPort.postMessage(id));
});`;

async function main() {
  const worker = new Worker(WORKER, { eval: true });
  const waiting = new Map();
  worker.on('message', (id) => waiting.get(id)?.());
  let nextId = 0;
  const variants = {
    spawn: () => Promise.all(Array.from({ length: WIDTH }, spawnClosed)),
    main: async () => {
      const all = [];
      for (let i = 0; i < WIDTH; i++) {
        await turn();
        busy(WORK_MS);
        all.push(spawnClosed());
      }
      return Promise.all(all);
    },
    worker: async () => {
      const all = [];
      for (let i = 0; i < WIDTH; i++) {
        await turn();
        busy(WORK_MS);
        const id = ++nextId;
        all.push(new Promise((resolve) => waiting.set(id, resolve)));
        worker.postMessage(id);
      }
      return Promise.all(all);
    },
  };
  /** @type {Record<string, number[]>} */
  const walls = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const [load0 = NaN] = os.loadavg();
  for (let r = 0; r <= ROUNDS; r++) {
    const names = Object.keys(variants);
    for (let k = 0; k < names.length; k++) {
      const name = /** @type {keyof typeof variants} */ (names[(r + k) % names.length]);
      const t0 = now();
      await variants[name]();
      if (r > 0) walls[name]?.push(now() - t0); // round 0 warms up
    }
  }
  // One start at a time (no work): what the thread hop costs a one-shot.
  /** @type {{ main: number[], worker: number[] }} */
  const one = { main: [], worker: [] };
  for (let r = 0; r < ROUNDS * 20; r++) {
    let t0 = now();
    await spawnClosed();
    one.main.push(now() - t0);
    t0 = now();
    const id = ++nextId;
    await new Promise((resolve) => {
      waiting.set(id, resolve);
      worker.postMessage(id);
    });
    one.worker.push(now() - t0);
  }
  await worker.terminate();
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `${ROUNDS} rounds of ${WIDTH}, ${WORK_MS} ms of main-thread work per start; load ${load0.toFixed(1)} → ${(os.loadavg()[0] ?? NaN).toFixed(1)}`,
  );
  console.log('| variant | wall median ms | ×spawn |');
  console.log('|---|---:|---:|');
  for (const [k, xs] of Object.entries(walls)) console.log(`| ${k} | ${med(xs).toFixed(1)} | ${(med(xs) / med(walls.spawn)).toFixed(2)} |`);
  console.log(
    `one at a time (${one.main.length} each, alternating): spawn→close median on the main thread ${med(one.main).toFixed(2)} ms, through the worker ${med(one.worker).toFixed(2)} ms`,
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
