/**
 * The per-user daemon and its relay, as real processes: `serve --listen unix:PATH`, many relays
 * (`exec-bridge connect`) started at once reach one daemon, a killed relay detaches only its own
 * connection and the client resumes through a new one, and the daemon exits when idle.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ExecServerClient, stdioConnector, websocketConnector } from '../../src/client';
import { isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { copyBundle } from '../helpers/sshd';
import { gather, numberedLines } from './clientHelpers';

const dirs: string[] = [];
const bundleDir = mkdtempSync(join(tmpdir(), 'eb-daemon-cli-'));
const CLI_JS = copyBundle(bundleDir);
dirs.push(bundleDir);
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'eb-daemon-'));
  dirs.push(d);
  return d;
}

/** Daemons (`cli.js daemon run`) whose environment names this runtime dir. */
function daemonsIn(runtimeDir: string): number[] {
  return liveProcesses()
    .filter((p) => {
      try {
        const cmd = procFile(p.pid, 'cmdline').split('\0');
        return (
          cmd.includes('daemon') && cmd.includes('run') && procFile(p.pid, 'environ').includes(`EXEC_BRIDGE_RUNTIME_DIR=${runtimeDir}\0`)
        );
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

function stopDaemons(runtimeDir: string): void {
  for (const pid of daemonsIn(runtimeDir)) process.kill(pid, 'SIGKILL');
}

after(() => {
  for (const d of dirs) {
    stopDaemons(join(d, 'run'));
    rmSync(d, { recursive: true, force: true });
  }
});

/** A shell script printing `pid $$`, lines 1..1000, waiting for a line on `fifo`, lines 1001..2000, `pid $$`. */
function gatedScript(fifo: string): string[] {
  return [
    'bash',
    '-c',
    `mkfifo ${fifo}; echo "pid $$"; for ((i=1;i<=1000;i++)); do echo "line $i"; done; read -r _ < ${fifo}; for ((i=1001;i<=2000;i++)); do echo "line $i"; done; echo "pid $$"`,
  ];
}

describe('serve --listen unix:PATH', () => {
  test('a 0600 socket; the token rule applies', async () => {
    const d = tempDir();
    const sock = join(d, 'sock');
    writeFileSync(join(d, 'token'), 'sekrit\n', { mode: 0o600 });
    const child = spawn(process.execPath, [CLI_JS, 'serve', '--listen', `unix:${sock}`, '--token-file', join(d, 'token')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      const url = line.toString().trim();
      assert.equal(url, `ws+unix:${sock}:/`);
      assert.equal(statSync(sock).mode & 0o777, 0o600);
      const client = await ExecServerClient.connect({ connector: websocketConnector(url, 'sekrit') });
      assert.ok(client.sessionId);
      client.dispose();
      await assert.rejects(ExecServerClient.connect({ connector: websocketConnector(url, 'wrong'), deadlineMs: 0 }), /HTTP 401/);
      await assert.rejects(ExecServerClient.connect({ connector: websocketConnector(url), deadlineMs: 0 }), /HTTP 401/);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});

describe('daemon and relay', () => {
  function relayEnv(runtimeDir: string): NodeJS.ProcessEnv {
    return { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtimeDir };
  }

  test('six relays started at once reach one daemon', async () => {
    const run = join(tempDir(), 'run');
    const relays: ChildProcess[] = [];
    const pids = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const r = spawn(process.execPath, [CLI_JS, 'connect', '--ready-line'], { env: relayEnv(run), stdio: ['pipe', 'pipe', 'pipe'] });
        relays.push(r);
        let out = '';
        r.stdout!.setEncoding('utf8');
        r.stdout!.on('data', (d: string) => (out += d));
        await until(() => /EB-READY (\d+)\n/.exec(out)?.[1], 20_000, 'a ready line');
        return Number(/EB-READY (\d+)\n/.exec(out)![1]);
      }),
    );
    assert.equal(new Set(pids).size, 1, `one daemon pid, got ${pids.join(' ')}`);
    assert.deepEqual(daemonsIn(run), [pids[0]]);
    const key = readdirDaemon(run);
    assert.equal(statSync(join(run, key)).mode & 0o777, 0o700);
    assert.equal(statSync(join(run, key, 'token')).mode & 0o777, 0o600);
    assert.equal(statSync(join(run, key, 'sock')).mode & 0o777, 0o600);
    for (const r of relays) r.stdin!.end();
    await Promise.all(relays.map((r) => (r.exitCode === null ? once(r, 'exit') : undefined)));
  });

  test('a killed relay detaches only its connection; the client resumes through a new relay', async () => {
    const d = tempDir();
    const run = join(d, 'run');
    const connector = stdioConnector(process.execPath, [CLI_JS, 'connect'], { env: relayEnv(run) });
    const a = await ExecServerClient.connect({ connector, keepalive: false });
    const b = await ExecServerClient.connect({ connector, keepalive: false });
    const bStates: string[] = [];
    b.onDidChangeState((s) => bStates.push(s.kind));
    const daemon = daemonsIn(run);
    assert.equal(daemon.length, 1);
    const fifo = join(d, 'go');
    const h = await a.startProcess({ argv: gatedScript(fifo), cwd: d });
    const out = gather(h);
    await out.until((s) => s.includes('line 1000\n'));
    const pid = Number(/^pid (\d+)/.exec(out.text())![1]);
    // a's relay: a child of ours running `connect`, the first of the two.
    const relays = liveProcesses().filter((p) => p.ppid === process.pid && procFile(p.pid, 'cmdline').includes('\0connect'));
    assert.equal(relays.length, 2);
    const aRelay = relays.sort((x, y) => x.pid - y.pid)[0]!.pid;
    const lost = until(() => a.state.kind === 'recovering', 10_000, 'a to notice');
    process.kill(aRelay, 'SIGKILL');
    await lost;
    assert.ok(isAlive(pid), 'the command keeps running on the daemon');
    writeFileSync(fifo, 'go\n');
    await until(() => a.state.kind === 'connected', 20_000, 'a to resume');
    const done = await h.completion;
    assert.equal(done.exitCode, 0);
    assert.equal(out.text(), `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`);
    assert.deepEqual(daemonsIn(run), daemon, 'same daemon');
    assert.deepEqual(bStates, [], 'the other client never noticed');
    const echo = await b.startProcess({ argv: ['echo', 'still here'], cwd: d });
    const bo = gather(echo);
    await echo.completion;
    assert.equal(bo.text(), 'still here\n');
    a.dispose();
    b.dispose();
  });

  test('a frozen relay (SIGSTOP) is noticed by the relay keepalive; the client resumes through a new relay', async () => {
    const d = tempDir();
    const run = join(d, 'run');
    const connector = stdioConnector(process.execPath, [CLI_JS, 'connect'], { env: relayEnv(run) });
    // A relay that is slow to answer on a busy machine is not a frozen one: a generous keepalive
    // (a SIGSTOPped relay never answers, however long we wait).
    const client = await ExecServerClient.connect({ connector, keepalive: { intervalMs: 500, timeoutMs: 3_000 }, deadlineMs: 60_000 });
    const [relay] = liveProcesses().filter((p) => p.ppid === process.pid && procFile(p.pid, 'cmdline').includes('\0connect'));
    assert.ok(relay);
    try {
      const fifo = join(d, 'go');
      const h = await client.startProcess({ argv: gatedScript(fifo), cwd: d });
      const out = gather(h);
      await out.until((s) => s.includes('line 1000\n'));
      process.kill(relay.pid, 'SIGSTOP');
      writeFileSync(fifo, 'go\n');
      await until(() => client.state.kind === 'recovering', 20_000, 'keepalive to notice the frozen relay');
      await until(() => client.state.kind === 'connected', 55_000, 'resume through a new relay');
      await h.completion;
      const pid = /^pid (\d+)/.exec(out.text())![1];
      assert.equal(out.text(), `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`);
    } finally {
      process.kill(relay.pid, 'SIGKILL');
      client.dispose();
    }
  });

  test('the daemon exits when it has had no connection and no session for its idle time', async () => {
    const run = join(tempDir(), 'run');
    const connector = stdioConnector(process.execPath, [CLI_JS, 'connect', '--idle-exit-ms', '200', '--session-ttl-ms', '200'], {
      env: relayEnv(run),
    });
    // Asks no TTL of its own: the daemon's default (200 ms) applies to its session.
    const c = await ExecServerClient.connect({ connector, keepalive: false, sessionTtlMs: null });
    const [pid] = daemonsIn(run);
    assert.ok(pid);
    const key = readdirDaemon(run);
    c.dispose();
    await until(() => !isAlive(pid), 10_000, 'the daemon to exit');
    assert.throws(() => readFileSync(join(run, key, 'state.json')), /ENOENT/);
    assert.throws(() => readFileSync(join(run, key, 'token')), /ENOENT/);
  });
});

function readdirDaemon(run: string): string {
  const names = readdirSync(run);
  const d = names.filter((n) => n.startsWith('daemon-'));
  assert.equal(d.length, 1, `one daemon dir in ${names.join(' ')}`);
  return d[0]!;
}
