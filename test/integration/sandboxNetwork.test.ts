/**
 * The managed network (allow-list through the executor's proxy) against real bubblewrap, a real
 * proxy and the real in-sandbox bridge. Two HTTP servers on the host's 127.0.0.1, one allow-listed
 * by its literal address and port: a proxied client reaches it and is refused the other, naming it;
 * anything that ignores the proxy finds no way out; host unix sockets stay unreachable. Loopback only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { spawn as ptySpawn } from 'node-pty';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { SandboxPlanner, type SandboxedSpawnPlan } from '../../src/server/sandbox';
import { BRIDGE_SOCKET_DIR, LAUNCHER_ENV_PREFIX } from '../../src/server/sandbox/netBridge';

const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', LANG: 'C.UTF-8' };
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-net-')));
const ws = join(base, 'ws');

interface Ran {
  code: number;
  out: string;
  plan: SandboxedSpawnPlan;
}

/** Spawns a pipe plan as the runner does (the launch without a shell, its files as fds 3…). */
function runPlan(plan: SandboxedSpawnPlan, timeoutMs = 20_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const launch = plan.pipeLaunch ?? { file: plan.file, args: plan.args, files: [] };
    assert.equal(launch.files.length, 0, 'the managed network passes no filter file: the launcher carries it');
    const child = spawn(launch.file, launch.args, { cwd: plan.cwd, env: plan.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => chunks.push(d));
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`timed out: ${Buffer.concat(chunks).toString()}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? 128 + (signal ? 9 : 0), out: Buffer.concat(chunks).toString(), plan });
    });
  });
}

describe('managed network (Linux)', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  const planner = new SandboxPlanner();
  let allowed: HttpServer;
  let other: HttpServer;
  let unixServer: Server;
  let allowedPort = 0;
  let otherPort = 0;
  const unixPath = join(base, 'host.sock');
  let unixHits = 0;

  const plan = (argv: string[], allow: string[], deny: string[] = [], extra: { tty?: boolean; env?: Record<string, string> } = {}) =>
    planner.plan({
      argv,
      cwd: ws,
      env: { ...ENV, ...extra.env },
      tty: extra.tty ?? false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }),
      managedNetwork: { allow, deny },
    });
  const run = async (script: string, allow: string[], deny: string[] = []) => runPlan(await plan(['/bin/sh', '-c', script], allow, deny));

  before(async () => {
    mkdirSync(ws, { recursive: true });
    const listen = async (s: HttpServer) => {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return (s.address() as AddressInfo).port;
    };
    allowed = createHttpServer((_q, r) => r.end('hello from the allowed server\n'));
    other = createHttpServer((_q, r) => r.end('hello from the other server\n'));
    allowedPort = await listen(allowed);
    otherPort = await listen(other);
    unixServer = createServer((s) => {
      unixHits++;
      s.end('unix-reached\n');
    });
    await new Promise<void>((r) => unixServer.listen(unixPath, r));
  });

  after(() => {
    planner.close();
    allowed?.close();
    other?.close();
    unixServer?.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('curl through the proxy env reaches the allowed server and is refused the other, which is named', async () => {
    const ok = await run(`curl -sS --max-time 10 http://127.0.0.1:${allowedPort}/`, [`127.0.0.1:${allowedPort}`]);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /hello from the allowed server/);

    const refused = await run(`curl -sS -f --max-time 10 http://127.0.0.1:${otherPort}/; echo "exit=$?"`, [`127.0.0.1:${allowedPort}`]);
    assert.match(refused.out, /403/);
    assert.doesNotMatch(refused.out, /hello from the other server/);
    // HTTPS goes through CONNECT: the refusal names the destination too.
    const connect = await run(
      `curl -sS --max-time 10 --proxytunnel -x "$HTTPS_PROXY" http://127.0.0.1:${otherPort}/ 2>&1; echo "exit=$?"`,
      [`127.0.0.1:${allowedPort}`],
    );
    assert.match(connect.out, /403/);
    assert.doesNotMatch(connect.out, /hello from the other server/);
  });

  test('a refused destination is a sandbox denial that names the host', async () => {
    const r = await run(`curl -sS -f --max-time 10 http://127.0.0.1:${otherPort}/`, [`127.0.0.1:${allowedPort}`]);
    assert.notEqual(r.code, 0);
    const verdict = r.plan.classify(r.code, [Buffer.from(r.out)]);
    assert.deepEqual(verdict, { denied: true, kind: 'network', evidence: `the sandbox blocked 127.0.0.1:${otherPort}` });
  });

  test('SOCKS5 (ALL_PROXY, socks5h) follows the same lists', async () => {
    const ok = await run(`curl -sS --max-time 10 -x "$ALL_PROXY" http://127.0.0.1:${allowedPort}/`, [`127.0.0.1:${allowedPort}`]);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /hello from the allowed server/);
    const no = await run(`curl -sS --max-time 10 -x "$ALL_PROXY" http://127.0.0.1:${otherPort}/; echo "exit=$?"`, [
      `127.0.0.1:${allowedPort}`,
    ]);
    assert.doesNotMatch(no.out, /hello from the other server/);
    assert.doesNotMatch(no.out, /exit=0/);
  });

  test('the deny-list wins over the allow-list', async () => {
    const r = await run(`curl -sS --max-time 10 http://127.0.0.1:${allowedPort}/`, ['127.0.0.1'], [`127.0.0.1:${allowedPort}`]);
    assert.match(r.out, /deny-list/);
    assert.doesNotMatch(r.out, /hello from the allowed server/);
  });

  test('a permitted name that resolves to loopback is refused unless the literal is listed', async () => {
    // NO_PROXY sends localhost to the sandbox's own loopback; --noproxy '' makes curl ask the proxy.
    const r = await run(`curl -sS --max-time 10 --noproxy '' http://localhost:${allowedPort}/`, ['localhost']);
    assert.match(r.out, /resolves to 127\.0\.0\.1/);
    assert.doesNotMatch(r.out, /hello from the allowed server/);
    const listed = await run(`curl -sS --max-time 10 --noproxy '' http://localhost:${allowedPort}/`, [
      'localhost',
      `127.0.0.1:${allowedPort}`,
    ]);
    assert.match(listed.out, /hello from the allowed server/);
  });

  test('a raw TCP connect that ignores the proxy env finds nothing, and names do not resolve', async () => {
    const js = `
      const net = require('node:net');
      const s = net.connect(${allowedPort}, '127.0.0.1');
      s.on('connect', () => { console.log('RAW-CONNECTED'); process.exit(0); });
      s.on('error', (e) => { console.log('raw:', e.code);
        require('node:dns').lookup('example.com', (e2) => { console.log('dns:', e2 && e2.code); process.exit(3); }); });`;
    const r = await runPlan(await plan([process.execPath, '-e', js], [`127.0.0.1:${allowedPort}`]));
    assert.doesNotMatch(r.out, /RAW-CONNECTED/);
    assert.match(r.out, /raw: ECONNREFUSED/); // the sandbox's own loopback: nothing listens there
    assert.match(r.out, /dns: E(AI_AGAIN|NOTFOUND|CONNREFUSED)/);
  });

  test("a host unix socket, and the proxy's own socket, stay unreachable (no unix socket can be made)", async () => {
    const js = `
      const net = require('node:net');
      let left = 2;
      for (const p of [${JSON.stringify(unixPath)}, ${JSON.stringify(`${BRIDGE_SOCKET_DIR}/proxy.sock`)}]) {
        const s = net.connect(p);
        s.on('data', (d) => console.log('REACHED', p, String(d)));
        s.on('error', (e) => { console.log('unix:', p, e.code); if (--left === 0) process.exit(0); });
      }`;
    const r = await runPlan(await plan([process.execPath, '-e', js], [`127.0.0.1:${allowedPort}`]));
    assert.doesNotMatch(r.out, /REACHED/);
    assert.equal((r.out.match(/unix: .* EPERM/g) ?? []).length, 2, r.out);
    assert.equal(unixHits, 0);
    // The same request without a managed network (the network simply off) is refused as before.
  });

  test('the bridge cannot be reached into: its /proc/PID/mem does not open and ptrace is refused', async () => {
    const js = `
      const fs = require('node:fs');
      const pids = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p) && +p !== process.pid);
      const bridge = pids.find((p) => { try { return fs.readFileSync('/proc/' + p + '/cmdline', 'latin1').startsWith('/usr/bin/perl'); } catch { return false; } });
      if (!bridge) { console.log('NO-BRIDGE'); process.exit(2); }
      try { fs.openSync('/proc/' + bridge + '/mem', 'r'); console.log('MEM-OPENED'); } catch (e) { console.log('mem:', e.code); }`;
    const r = await runPlan(await plan([process.execPath, '-e', js], [`127.0.0.1:${allowedPort}`]));
    assert.doesNotMatch(r.out, /MEM-OPENED|NO-BRIDGE/);
    assert.match(r.out, /mem: E(ACCES|PERM)/);
    const pt = await run('perl -e \'require "syscall.ph" if 0; $r = syscall(101, 16, 1, 0, 0); print "ptrace=$r err=", $!+0, "\\n"\'', [
      `127.0.0.1:${allowedPort}`,
    ]);
    if (process.arch === 'x64') assert.match(pt.out, /ptrace=-1 err=1\b/);
  });

  test('a PTY start (the launcher without extra fds) gets the bridge and the filter too', async () => {
    const p = await plan(
      ['/bin/sh', '-c', `curl -sS http://127.0.0.1:${allowedPort}/ && [ -t 0 ] && echo TTY-OK`],
      [`127.0.0.1:${allowedPort}`],
      [],
      { tty: true },
    );
    const term = ptySpawn(p.file, p.args, { cwd: p.cwd, env: p.env, cols: 80, rows: 24 });
    const chunks: Buffer[] = [];
    term.onData((d) => chunks.push(Buffer.from(d)));
    const code = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`pty run timed out: ${Buffer.concat(chunks).toString()}`)), 20_000);
      term.onExit((e) => {
        clearTimeout(t);
        resolve(e.exitCode);
      });
    });
    const text = Buffer.concat(chunks).toString();
    assert.match(text, /hello from the allowed server/);
    assert.match(text, /TTY-OK/);
    assert.equal(code, 0, text);
  });

  test('one snapshot: the proxy env and the sandbox allowance come together, or neither does', async () => {
    const withNet = await plan(['/bin/true'], [`127.0.0.1:${allowedPort}`], [], { env: { HTTP_PROXY: 'http://127.0.0.1:1' } });
    const launch = withNet.pipeLaunch!.args;
    // The launcher gets the command's env with every name prefixed (netBridge.ts) and restores it.
    const env = Object.fromEntries(
      Object.entries(withNet.env).map(([k, v]) => [
        k.startsWith(LAUNCHER_ENV_PREFIX) ? k.slice(LAUNCHER_ENV_PREFIX.length) : `unprefixed ${k}`,
        v,
      ]),
    );
    const port = Number(new URL(env.HTTP_PROXY!).port);
    for (const k of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy']) assert.equal(env[k], `http://127.0.0.1:${port}`);
    assert.equal(env.ALL_PROXY, `socks5h://127.0.0.1:${port}`);
    // The bridge listens on exactly that port and relays to the socket bound into the sandbox.
    const perl = launch.indexOf('/usr/bin/perl');
    assert.ok(perl > 0, 'the launcher runs in front of the command');
    assert.deepEqual(launch.slice(perl + 9, perl + 12), ['1', String(port), `${BRIDGE_SOCKET_DIR}/proxy.sock`]);
    assert.ok(launch.includes(BRIDGE_SOCKET_DIR));
    assert.ok(!launch.includes('--seccomp'), 'the filter is applied by the launcher, after the bridge is up');

    const without = await planner.plan({
      argv: ['/bin/true'],
      cwd: ws,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }),
    });
    assert.equal(without.env.HTTP_PROXY, undefined);
    assert.equal(without.env.ALL_PROXY, undefined);
    assert.ok(!without.pipeLaunch!.args.includes(BRIDGE_SOCKET_DIR));
    assert.ok(!without.pipeLaunch!.args.includes('/usr/bin/perl'));

    // A list that cannot be parsed gives neither: the start is refused.
    await assert.rejects(plan(['/bin/true'], ['http://nope/']), /managed network/);
    // Nor does a sandbox with the network on (the proxy would not be the only way out).
    await assert.rejects(
      planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env: ENV,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws), network: true }),
        managedNetwork: { allow: ['127.0.0.1'] },
      }),
      /network restricted/,
    );
  });
});
