// SSH executor figures (issues 11 and 26), run by bench/ssh.mjs: a real sshd on 127.0.0.1 (the
// tests' helper). PHASES (default "roundtrip,connect"):
//  - roundtrip (issue 26 item 3): paired reps, one row each, of a plain `ssh host true`, a run
//    without sharing (ControlMaster=no: the path before issue 26), our cold
//    `exec-bridge run --ssh host -- true` (no master; the daemon up), the same run again at once
//    (warm: the master and its forward up), the extension's first connect (a new connector in this
//    already running Node; no master), the same with no local record of the daemon (a machine that
//    never connected), and the floor of a warm run: `exec-bridge run --url` straight to the
//    daemon's socket (no ssh at all). Ratios are per pair, to `ssh host true` of the same pair.
//    BASE_CLI=<another build's dist/cli.js>: that build's cold, warm and floor rows too, the two
//    builds taking turns at going first (paired before/after in one run).
//  - connect (issue 11): first connect with the upload into an empty remote home, connect with the
//    bundle installed, and cut → output flowing again; a fresh sshd per rep.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecServerClient } from '../src/client';
import { parseSshTarget, sshArgs, sshConnector } from '../src/client/sshConnector';
import { forgetRecord, masterPidOf, runSsh, shareDirFor, type ShareDir } from '../src/client/sshShare';
import { isAlive } from '../test/helpers/procs';
import { bundleFor, localUname } from '../src/client/sshBootstrap';
import { FaultProxy } from '../test/helpers/faultProxy';
import { copyBundle, NODE_PTY_DIR, startSshd, type Sshd } from '../test/helpers/sshd';

const REPS = Number(process.env.REPS ?? 5);
const PHASES = (process.env.PHASES ?? 'roundtrip,connect').split(',');
/** Another build's dist/cli.js (e.g. the commit before a change): its cold, warm and floor rows alternate with ours. */
const BASE_CLI = process.env.BASE_CLI;

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)}, n=${s.length})`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Wall time of a process to its exit (bounded: a hung one fails the bench). */
function timed(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(performance.now() - t0);
      else reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')} exited ${code}: ${err}`));
    });
  });
}

/** The argv of `exec-bridge run --ssh target … -- true` with `cli`, plus ssh options. */
const runSshArgs = (cli: string, target: string, opts: string[]) => [
  cli,
  'run',
  '--ssh',
  target,
  ...opts.flatMap((o) => ['--ssh-option', o]),
  '--no-stdin',
  '--',
  'true',
];

async function roundTrips(work: string): Promise<void> {
  const sshd = await startSshd();
  const cli = copyBundle(join(work, 'rt'));
  const target = `root@127.0.0.1:${sshd.port}`;
  const opts = sshd.clientOptions;
  const share = shareDirFor('ssh', parseSshTarget(target), opts) as ShareDir;
  const key = bundleFor(cli, null, localUname()).version;
  const sshTrue = ['-T', ...opts.flatMap((o) => ['-o', o]), '-p', String(sshd.port), 'root@127.0.0.1', 'true'];
  // ControlMaster=no: no sharing, the way every run went before issue 26 (the Node bootstrap and relay on the remote).
  const unsharedArgs = runSshArgs(cli, target, [...opts, 'ControlMaster=no']);
  const runArgs = runSshArgs(cli, target, opts);
  const baseArgs = BASE_CLI ? runSshArgs(BASE_CLI, target, opts) : undefined;
  const mux = (op: string) =>
    runSsh(
      'ssh',
      sshArgs(parseSshTarget(target), [...opts, `ControlPath=${share.ctl}`], undefined, false, ['-O', op]),
      process.env,
      10_000,
    );
  /** Ends our master and waits (bounded) until its process is gone, so that its teardown is not measured with the next row. */
  const exitMaster = async () => {
    const pid = masterPidOf(await mux('check'));
    await mux('exit');
    for (let i = 0; i < 500 && ((pid !== undefined && isAlive(pid)) || existsSync(share.ctl)); i++)
      await new Promise((r) => setTimeout(r, 10));
  };
  const connectOnce = async () => {
    const t0 = performance.now();
    const c = await ExecServerClient.connect({
      connector: sshConnector({ target, sshOptions: opts, cliPath: cli, nodePtyDir: NODE_PTY_DIR }),
      attemptTimeoutMs: 60_000,
    });
    const ms = performance.now() - t0;
    c.dispose();
    return ms;
  };
  const rows: Record<string, number[]> = { ssh: [], unshared: [], cold: [], warm: [], ext: [], extNoRecord: [], floor: [] };
  if (baseArgs) Object.assign(rows, { baseCold: [], baseWarm: [], baseFloor: [] });
  const loads: number[] = [];
  try {
    // Install and start the daemon (not measured), then one run that records it; the same for the base build.
    for (const args of [runArgs, runArgs, ...(baseArgs ? [baseArgs, baseArgs] : [])]) await timed(process.execPath, args);
    const daemonDir = join(sshd.runtimeDir, `daemon-${key}`);
    const url = ['--url', `ws+unix:${join(daemonDir, 'sock')}:/`, '--token-file', join(daemonDir, 'token'), '--no-stdin', '--', 'true'];
    /** Cold then warm, then the floor (our daemon's socket, whichever build is the client): one build's rows. */
    const build = async (args: string[], floorCli: string, prefix: '' | 'base') => {
      const k = (name: string) => (prefix ? `${prefix}${name[0]!.toUpperCase()}${name.slice(1)}` : name);
      await exitMaster();
      rows[k('cold')]!.push(await timed(process.execPath, args));
      rows[k('warm')]!.push(await timed(process.execPath, args));
      rows[k('floor')]!.push(await timed(process.execPath, [floorCli, 'run', ...url]));
    };
    for (let r = 0; r < REPS; r++) {
      loads.push(loadavg()[0]!);
      rows.ssh!.push(await timed('ssh', sshTrue));
      rows.unshared!.push(await timed(process.execPath, unsharedArgs));
      // With a base build, the two take turns at going first.
      const order: [string[], string, '' | 'base'][] = [[runArgs, cli, '']];
      if (baseArgs) order[r % 2 ? 'unshift' : 'push']([baseArgs, BASE_CLI!, 'base']);
      for (const [args, floorCli, prefix] of order) await build(args, floorCli, prefix);
      await exitMaster();
      rows.ext!.push(await connectOnce());
      await exitMaster();
      forgetRecord(share, key);
      rows.extNoRecord!.push(await connectOnce());
    }
  } finally {
    await exitMaster();
    await sshd.stop();
    rmSync(share.dir, { recursive: true, force: true });
  }
  report(rows, loads);
}

function report(rows: Record<string, number[]>, loads: number[]): void {
  const ratio = (k: string) => {
    const rs = rows[k]!.map((v, i) => v / rows.ssh![i]!);
    const s = [...rs].sort((a, b) => a - b);
    return `${median(rs).toFixed(2)}× (${s[0]!.toFixed(2)}–${s.at(-1)!.toFixed(2)})`;
  };
  const line = (label: string, k: string, target = '') => {
    if (rows[k]) console.log(`| ${label} | ${median(rows[k]!).toFixed(0)} ms | ${k === 'ssh' ? '1' : ratio(k)} | ${target} |`);
  };
  console.log(
    `\nSSH round trips: ${REPS} paired reps, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (1 min)\n`,
  );
  console.log('| | median | ratio to `ssh host true` (median of pairs, min–max) | target |');
  console.log('|---|---|---|---|');
  line('`ssh host true`', 'ssh');
  line('`exec-bridge run --ssh host -- true` without sharing (`ControlMaster=no`: the path before issue 26)', 'unshared');
  line('`exec-bridge run --ssh host -- true`, cold (no master, daemon up)', 'cold', '≤ 1.3×');
  line(`… the base build (${BASE_CLI})`, 'baseCold');
  line('the same within a minute (warm: master and forward up)', 'warm', '≤ 0.3×');
  line('… the base build', 'baseWarm');
  line("extension's first connect (new connector, no master, daemon up)", 'ext', '≤ 1.2×');
  line('… on a machine that never connected (no local record: `-O forward` after)', 'extNoRecord');
  line('floor of a warm run: `exec-bridge run --url` to the daemon socket, no ssh', 'floor');
  line('… the base build as the client', 'baseFloor');
  console.log('\nraw (ms, per rep):');
  for (const [k, v] of Object.entries(rows)) console.log(`  ${k}: ${v.map((x) => x.toFixed(0)).join(' ')}`);
  // For bench/run.mjs's table of targets: each row's median ratio to `ssh host true` (per pair).
  const ratios = Object.fromEntries(Object.keys(rows).map((k) => [k, median(rows[k]!.map((v, i) => v / rows.ssh![i]!))]));
  console.log(`\nbench-json: ${JSON.stringify(ratios)}`);
}

async function connects(work: string): Promise<void> {
  const cli = copyBundle(join(work, 'bundle'));
  const first: number[] = [];
  const again: number[] = [];
  const reconnect: number[] = [];
  let bytes = 0;
  for (let r = 0; r < REPS; r++) {
    // A fresh sshd (and so an empty remote home) per rep: every first connect uploads.
    const sshd: Sshd = await startSshd();
    const proxy = await FaultProxy.start(sshd.port);
    const target = `root@127.0.0.1:${proxy.port}`;
    const share = shareDirFor('ssh', parseSshTarget(target), sshd.clientOptions) as ShareDir;
    try {
      const mk = () =>
        sshConnector({
          target,
          sshOptions: sshd.clientOptions,
          cliPath: cli,
          nodePtyDir: NODE_PTY_DIR,
          progress: (p) => {
            if (p.step === 'installing') bytes = p.bytes;
          },
        });
      let t0 = performance.now();
      const a = await ExecServerClient.connect({ connector: mk(), attemptTimeoutMs: 60_000 });
      first.push(performance.now() - t0);
      a.dispose();
      t0 = performance.now();
      const client = await ExecServerClient.connect({ connector: mk(), keepalive: false, attemptTimeoutMs: 60_000 });
      again.push(performance.now() - t0);
      // A command printing a line every 10 ms; after the cut, time until a new line arrives.
      const h = await client.startProcess({
        argv: ['sh', '-c', 'i=0; while [ $i -lt 3000 ]; do echo $i; i=$((i+1)); sleep 0.01; done'],
        cwd: '/tmp',
      });
      let lastChunk = 0;
      let waiting: (() => void) | undefined;
      h.onEvent((e) => {
        if (e.type === 'output') {
          lastChunk = performance.now();
          waiting?.();
        }
      });
      await new Promise<void>((r) => (waiting = r));
      const cutAt = performance.now();
      proxy.cut();
      await new Promise<void>((resolve) => {
        waiting = () => {
          if (lastChunk > cutAt && client.state.kind === 'connected') resolve();
        };
      });
      reconnect.push(performance.now() - cutAt);
      await h.terminate();
      client.dispose();
    } finally {
      await proxy.close();
      await sshd.stop();
      rmSync(share.dir, { recursive: true, force: true });
    }
  }
  console.log(`\nupload: ${(bytes / 1e6).toFixed(2)} MB`);
  console.log(`first connect (probe + upload + install + daemon start + initialize): ${stats(first)}`);
  console.log(`connect, bundle installed and daemon up (the shared master of the first + forward + initialize): ${stats(again)}`);
  console.log(`TCP cut under ssh -> output flowing again (a new master + forward + resume): ${stats(reconnect)}`);
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'eb-ssh-bench-'));
  try {
    if (PHASES.includes('roundtrip')) await roundTrips(work);
    if (PHASES.includes('connect')) await connects(work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
