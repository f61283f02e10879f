#!/usr/bin/env node
// Where a one-shot start's time goes (issue 26 item 1): in the same run, alternating round by round,
//   big     `spawn('/bin/true')` from a Node process holding ~--big-mib MiB of live objects
//           (the server's size; its RSS is printed)
//   small   the same from a fresh Node process (what a spawn helper would be)
//   helper  the big process asking a small helper child over a pipe to spawn, and hearing its
//           close back (the helper design's round trip, with its IPC)
//   ours    `process/start` → `process/closed` through our server (dist/cli.js serve), one at a time
//   ours-b  the same through another build (--cli-b; paired old/new runs)
// --trace starts `ours` with bench/spawnTrace.mjs and splits its start → closed into: the request
// until the server's spawn() call, the call itself, the call until the child's 'close', and the
// server's 'close' until the client has `process/closed`.
// Every worker spawns as the servers do: own session (detached), stdin ignored, stdout/stderr piped.
// For big/small/helper: `sync` = the spawn() call itself (fork + the wait for exec), `close` =
// from the call until 'close'. Not product code.
//
//   node bench/spawnCost.mjs [--rounds 8] [--per-round 25] [--big-mib 90] [--cli dist/cli.js]
//                            [--cli-b other/cli.js] [--only ours,ours-b] [--trace]
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import os from 'node:os';
import { Client, launchServer, withTimeout } from './wire.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const value = (name, def) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : def);
const now = () => performance.now();

function rssMiB(pid = process.pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** One spawn as the servers do it; resolves with { sync, close } in ms. */
function spawnOnce() {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn('/bin/true', [], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      cwd: '/tmp',
      env: { PATH: '/usr/bin:/bin' },
    });
    const sync = now() - t0;
    child.stdout.resume();
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', () => resolve({ sync, close: now() - t0 }));
  });
}

// ---------- workers ----------

/** Keeps ~mib MiB of live V8 objects (small objects and strings, as a server's heap holds). */
function grow(mib) {
  const keep = [];
  const target = mib * 1024 * 1024;
  for (let bytes = 0; bytes < target; bytes += 200) keep.push({ a: bytes, b: `s${bytes}`, c: [bytes, bytes + 1] });
  return keep;
}

async function worker(kind, mib) {
  globalThis.kept = grow(mib);
  let helper;
  let helperLines;
  if (kind === 'helper') {
    helper = spawn(process.execPath, [fileURLToPath(import.meta.url), '--worker', 'helperChild', '0'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    helperLines = createInterface({ input: helper.stdout })[Symbol.asyncIterator]();
    await helperLines.next(); // ready
  }
  const rl = createInterface({ input: process.stdin });
  process.stdout.write(JSON.stringify({ ready: true, rss: rssMiB() }) + '\n');
  for await (const line of rl) {
    const { n } = JSON.parse(line);
    const out = [];
    for (let i = 0; i < n; i++) {
      if (helper && helperLines) {
        const t0 = now();
        helper.stdin.write('go\n');
        const r = JSON.parse((await helperLines.next()).value);
        out.push({ sync: r.sync, close: now() - t0 });
      } else out.push(await spawnOnce());
    }
    process.stdout.write(JSON.stringify({ out, rss: rssMiB() }) + '\n');
  }
  helper?.stdin.end();
}

// ---------- orchestrator ----------

function startWorker(kind, mib) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--worker', kind, String(mib)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    kind,
    child,
    async ready() {
      return JSON.parse((await withTimeout(lines.next(), 60_000, `${kind} ready`)).value);
    },
    async run(n) {
      child.stdin.write(JSON.stringify({ n }) + '\n');
      return JSON.parse((await withTimeout(lines.next(), 60_000, `${kind} run`)).value);
    },
    stop() {
      child.stdin.end();
    },
  };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

async function main() {
  if (argv[0] === '--worker') {
    // The helper child answers one spawn per 'go' line.
    if (argv[1] === 'helperChild') {
      const rl = createInterface({ input: process.stdin });
      process.stdout.write('ready\n');
      for await (const _ of rl) process.stdout.write(JSON.stringify(await spawnOnce()) + '\n');
      return;
    }
    return worker(argv[1], Number(argv[2]));
  }
  const rounds = Number(value('--rounds', 8));
  const per = Number(value('--per-round', 25));
  const bigMib = Number(value('--big-mib', 90));
  const only = value('--only')?.split(',');
  const wanted = (k) => !only || only.includes(k);
  const trace = argv.includes('--trace');
  const traceOut = join(os.tmpdir(), `spawn-trace-${process.pid}.json`);
  const [load0 = NaN] = os.loadavg();
  const workers = ['big', 'small', 'helper'].filter(wanted).map((k) => startWorker(k, k === 'small' ? 0 : bigMib));
  const rss = {};
  for (const w of workers) rss[w.kind] = (await w.ready()).rss;
  const servers = [];
  for (const [kind, cli] of [
    ['ours', value('--cli', join(ROOT, 'dist', 'cli.js'))],
    ['ours-b', value('--cli-b')],
  ]) {
    if (!cli || !wanted(kind)) continue;
    const pre = trace && kind === 'ours' ? ['--import', pathToFileURL(join(ROOT, 'bench', 'spawnTrace.mjs')).href] : [];
    process.env.SPAWN_TRACE_OUT = traceOut;
    const server = await launchServer(kind, process.execPath, [...pre, cli, 'serve', '--listen', 'ws://127.0.0.1:0']);
    servers.push({ kind, server, client: await Client.connect(server.url) });
  }
  let id = 0;
  const abs = () => performance.timeOrigin + now();
  const viaServer = (client) => async (n) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const t0 = abs();
      await withTimeout(client.run(`t${++id}`, ['/bin/true']), 10_000, 'ours');
      const t1 = abs();
      out.push({ close: t1 - t0, t0, t1 });
    }
    return { out };
  };
  const variants = [
    ...workers.map((w) => ({ kind: w.kind, run: (n) => w.run(n) })),
    ...servers.map((s) => ({ kind: s.kind, run: viaServer(s.client) })),
  ];
  /** @type {Record<string, any[]>} */
  const samples = Object.fromEntries(variants.map((v) => [v.kind, []]));
  for (const v of variants) await v.run(5); // warm-up
  for (let r = 0; r < rounds; r++) {
    // Rotate the order each round so that no variant always follows the same one.
    for (let k = 0; k < variants.length; k++) {
      const v = /** @type {(typeof variants)[number]} */ (variants[(r + k) % variants.length]);
      const res = await v.run(per);
      samples[v.kind]?.push(...res.out);
      if (res.rss) rss[v.kind] = res.rss;
    }
  }
  let traced;
  for (const s of servers) {
    const pid = /** @type {number} */ (s.server.child.pid);
    rss[s.kind] = rssMiB(pid);
    if (trace && s.kind === 'ours') {
      process.kill(pid, 'SIGUSR2');
      for (let i = 0; i < 50 && !traced; i++) {
        await new Promise((r) => setTimeout(r, 20));
        try {
          traced = JSON.parse(readFileSync(traceOut, 'utf8'));
        } catch {
          traced = undefined;
        }
      }
      rmSync(traceOut, { force: true });
    }
    s.client.close();
    await s.server.stop();
  }
  for (const w of workers) w.stop();
  const [load1 = NaN] = os.loadavg();
  const base = samples.small?.length
    ? pct(
        samples.small.map((s) => s.close),
        50,
      )
    : NaN;
  console.log(`rounds ${rounds} × ${per} per variant; load ${load0.toFixed(1)} → ${load1.toFixed(1)}; node ${process.version}`);
  console.log('| variant | RSS MiB | spawn() call p50 ms | start→close p50 ms | p95 ms | ×small |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const v of variants) {
    const s = samples[v.kind] ?? [];
    const sync =
      s[0].sync === undefined
        ? '—'
        : pct(
            s.map((x) => x.sync),
            50,
          ).toFixed(2);
    const c50 = pct(
      s.map((x) => x.close),
      50,
    );
    const c95 = pct(
      s.map((x) => x.close),
      95,
    );
    console.log(`| ${v.kind} | ${rss[v.kind].toFixed(0)} | ${sync} | ${c50.toFixed(2)} | ${c95.toFixed(2)} | ${(c50 / base).toFixed(2)} |`);
  }
  if (traced) breakdown(samples.ours, traced);
}

/** Each traced start: the client's times matched with the server's spawn() of /bin/true in between. */
function breakdown(client, rows) {
  const calls = rows.filter((r) => r.file === '/bin/true' && r.close !== undefined);
  /** @type {Record<'request' | 'call' | 'child' | 'notify', number[]>} */
  const parts = { request: [], call: [], child: [], notify: [] };
  for (const c of client) {
    const row = calls.find((r) => r.at >= c.t0 && r.at <= c.t1);
    if (!row) continue;
    parts.request.push(row.at - c.t0);
    parts.call.push(row.sync);
    parts.child.push(row.close - row.sync);
    parts.notify.push(c.t1 - (row.at + row.close));
  }
  console.log(`\nours, split (${parts.request.length} starts matched):`);
  console.log('| part | p25 ms | p50 ms | p75 ms |');
  console.log('|---|---:|---:|---:|');
  const names = {
    request: 'request sent → server calls spawn()',
    call: 'spawn() call (fork, child until exec)',
    child: 'spawn() returned → child closed (its run, exit, pipes)',
    notify: "server's 'close' → client has process/closed",
  };
  for (const [k, xs] of Object.entries(parts))
    console.log(`| ${names[k]} | ${pct(xs, 25).toFixed(2)} | ${pct(xs, 50).toFixed(2)} | ${pct(xs, 75).toFixed(2)} |`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
