/**
 * The Linux sandbox against the real bubblewrap: `planSpawn` plans, this file spawns the plan the way
 * the exec-server does (child_process, detached = own process group; node-pty for tty), and checks
 * what must work and what must be denied under each policy, plus the escape attempts.
 * Needs `bwrap` (Debian package `bubblewrap`; .ci/run installs it). Linux only.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { spawn as ptySpawn } from 'node-pty';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy, type SandboxIntent } from '../../src/protocol/sandbox';
import { planSpawn, SandboxPlanner, SandboxUnavailableError, type SandboxedSpawnPlan } from '../../src/server/sandbox';
import { keyringOffFilter, SYSCALLS } from '../../src/server/sandbox/seccomp';
import { until } from '../helpers/procs';

const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', LANG: 'C.UTF-8' };

// Outside /tmp on purpose: workspace-write shares /tmp, so "outside the workspace" must be elsewhere.
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-sbx-')));
const ws = join(base, 'ws');
const outside = join(base, 'outside');
const marker = `sbx-${process.pid}-${Date.now()}`;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  output: Buffer[];
  plan: SandboxedSpawnPlan;
}

/** Spawns a plan like the runner does and waits (bounded) for it to end. */
function runPlan(plan: SandboxedSpawnPlan, timeoutMs = 20_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(plan.file, plan.args, { cwd: plan.cwd, env: plan.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: Buffer[] = [];
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => (out.push(d), output.push(d)));
    child.stderr.on('data', (d: Buffer) => (err.push(d), output.push(d)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
      reject(new Error(`timed out: ${plan.args.slice(-3).join(' ')}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      plan.dispose();
      const c = code ?? 128 + (signal ? osConstants.signals[signal] : 0);
      resolve({ code: c, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), output, plan });
    });
  });
}

async function sh(
  intent: Omit<SandboxIntent, 'cwd'> & { cwd?: string },
  script: string,
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Ran> {
  const cwd = opts.cwd ?? ws;
  const plan = await planSpawn({
    argv: ['/bin/sh', '-c', script],
    arg0: null,
    cwd,
    env: { ...ENV, ...opts.env },
    tty: false,
    sandbox: sandboxForPolicy({ cwd: uri(intent.cwd ?? cwd), ...intent }),
  });
  return runPlan(plan);
}

let hostServer: Server;
let hostPort = 0;
let hostConnections = 0;
const unixServers: Server[] = [];
let unixConnections = 0;

before(async () => {
  mkdirSync(ws, { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(ws, 'readme.txt'), 'hello\n');
  spawnSync('git', ['init', '-q', ws]);
  hostServer = createServer((s) => {
    hostConnections++;
    s.end('hi\n');
  });
  await new Promise<void>((r) => hostServer.listen(0, '127.0.0.1', r));
  hostPort = (hostServer.address() as { port: number }).port;
  // Host unix sockets the sandbox can see through its mounts: one in the workspace, one in /tmp.
  for (const p of [join(ws, 'host.sock'), `/tmp/${marker}.sock`]) {
    const s = createServer((c) => {
      unixConnections++;
      c.end('secret\n');
    });
    await new Promise<void>((r) => s.listen(p, r));
    unixServers.push(s);
  }
});

after(async () => {
  hostServer?.close();
  for (const s of unixServers) s.close();
  rmSync(base, { recursive: true, force: true });
});

// On Linux these run always: a missing bubblewrap is a failure (install it; .ci/run does), not a skip.
describe('Linux sandbox (bwrap)', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  test('bubblewrap is installed', () => {
    assert.equal(spawnSync('sh', ['-c', 'command -v bwrap']).status, 0, 'bwrap not found: apt-get install -y bubblewrap');
  });

  test('read-only: reads work, /tmp is private scratch, every write to the host is denied', async () => {
    const hostTmpFile = `/tmp/${marker}-ro`;
    const r = await sh(
      { policy: 'read-only' },
      `cat readme.txt && ls / >/dev/null && head -c 8 /dev/urandom | wc -c && grep -c . /proc/self/status >/dev/null && echo scratch > ${hostTmpFile} && cat ${hostTmpFile} && echo x > /dev/null && echo OK; echo nope > new.txt`,
    );
    assert.match(r.stdout, /hello\n8\nscratch\nOK\n/);
    assert.match(r.stderr, /new\.txt: Read-only file system/);
    assert.equal(r.code, 2);
    assert.equal(existsSync(join(ws, 'new.txt')), false);
    assert.equal(existsSync(hostTmpFile), false, 'the private /tmp never reaches the host');
    assert.equal(r.plan.sandboxType, 'linuxSeccomp');
    assert.deepEqual(r.plan.classify(r.code, r.output), {
      denied: true,
      kind: 'fs',
      evidence: '/bin/sh: 1: cannot create new.txt: Read-only file system',
    });
  });

  test('workspace-write: the workspace and /tmp are writable; outside, .git, .vscode and .codex are not', async () => {
    const hostTmpFile = `/tmp/${marker}-ww`;
    const r = await sh(
      { policy: 'workspace-write' },
      [
        `echo made > made.txt && echo shared > ${hostTmpFile} && git status --short >/dev/null && echo WROTE`,
        `touch ${outside}/x; echo outside=$?`,
        'touch .git/x; echo gitx=$?',
        'echo broken > .git/config; echo gitconfig=$?',
        'rm -rf .git 2>/dev/null; echo gitrm=$?',
        'mv .git g2; echo gitmv=$?',
        'mkdir .codex; echo codex=$?',
        'mkdir -p .vscode/x; echo vscode=$?',
        'git -c user.email=a@b -c user.name=n commit -q --allow-empty -m x; echo commit=$?',
        'exit 3',
      ].join('\n'),
    );
    assert.match(r.stdout, /WROTE\noutside=1\ngitx=1\ngitconfig=2\ngitrm=1\ngitmv=1\ncodex=1\nvscode=1\ncommit=128\n/, r.stderr);
    assert.equal(readFileSync(join(ws, 'made.txt'), 'utf8'), 'made\n');
    assert.equal(readFileSync(hostTmpFile, 'utf8'), 'shared\n');
    rmSync(hostTmpFile);
    assert.equal(existsSync(join(outside, 'x')), false);
    assert.ok(statSync(join(ws, '.git', 'HEAD')).isFile(), '.git is intact');
    assert.doesNotMatch(readFileSync(join(ws, '.git', 'config'), 'utf8'), /broken/);
    // The placeholders for the missing carve-outs were removed from the host afterwards.
    assert.equal(existsSync(join(ws, '.codex')), false);
    assert.equal(existsSync(join(ws, '.vscode')), false);
    assert.equal(r.code, 3);
    const v = r.plan.classify(r.code, r.output);
    assert.equal(v.denied, true);
    assert.equal(v.kind, 'fs');
  });

  test('two exec-servers on one workspace: a placeholder stays while either still uses it, then goes', async () => {
    // Two planners stand for two servers (say, two VS Code windows on one folder). Removing a
    // stub on the host detaches its mount in a running sandbox, so the other server's command
    // could create the protected directory after all: the first one done must not remove it.
    const shared = join(base, 'shared-ws');
    mkdirSync(shared, { recursive: true });
    const [a, b] = [new SandboxPlanner(), new SandboxPlanner()];
    const req = (script: string) => ({
      argv: ['/bin/sh', '-c', script],
      arg0: null,
      cwd: shared,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(shared) }),
    });
    const planA = await a.plan(req('true'));
    const planB = await b.plan(req('sleep 0.6; mkdir .vscode; echo vscode=$?; touch .vscode/x; echo x=$?'));
    assert.ok(planB.args.includes(join(shared, '.vscode')), 'B protects .vscode too');
    const running = runPlan(planB);
    await new Promise((r) => setTimeout(r, 200));
    planA.dispose(); // A is done while B's command runs
    assert.equal(existsSync(join(shared, '.vscode')), true, 'the stub stays while B uses it');
    const r = await running;
    planB.dispose();
    assert.match(r.stdout, /vscode=1\nx=1\n/, r.stderr);
    assert.equal(existsSync(join(shared, '.vscode')), false, 'the last user removed it');
    assert.equal(existsSync(join(shared, '.codex')), false);
    // A claim left by a server that died does not keep a stub (or pretend to be content) forever.
    mkdirSync(join(shared, '.codex'));
    writeFileSync(join(shared, '.codex', '.exec-bridge-claim-999999999-dead'), '');
    const planC = await a.plan(req('true'));
    assert.equal((await runPlan(planC)).code, 0);
    planC.dispose();
    assert.equal(existsSync(join(shared, '.codex')), false);
    // A user's own empty .vscode stays protected (covered read-only) and is left where it was.
    mkdirSync(join(shared, '.vscode'));
    const planD = await a.plan(req('mkdir .vscode/x; echo x=$?'));
    const d = await runPlan(planD);
    planD.dispose();
    assert.match(d.stdout, /x=1/, d.stderr);
    assert.deepEqual(readdirSync(join(shared, '.vscode')), []);
  });

  test('workspace-write: a .git pointer file and its gitdir stay read-only (worktrees, submodules)', async () => {
    // wt/.git points into another writable root (admin), as `git worktree` and submodules do.
    const wt = join(base, 'wt');
    const admin = join(base, 'admin');
    const gitdir = join(admin, 'wtgit');
    mkdirSync(wt, { recursive: true });
    mkdirSync(gitdir, { recursive: true });
    writeFileSync(join(gitdir, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(wt, '.git'), `gitdir: ${gitdir}\n`);
    const plan = await planSpawn({
      argv: [
        '/bin/sh',
        '-c',
        `echo x > .git; echo file=$?; echo x > ${gitdir}/HEAD; echo target=$?; echo ok > w.txt; echo own=$?; echo ok > ${admin}/a.txt; echo admin=$?`,
      ],
      cwd: wt,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(wt), writableRoots: [uri(admin)] }),
    });
    const r = await runPlan(plan);
    assert.match(r.stdout, /file=2\ntarget=2\nown=0\nadmin=0\n/, r.stderr);
    assert.equal(readFileSync(join(gitdir, 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
  });

  test('deny entries hide a directory and a file, even inside a writable root', async () => {
    const secrets = join(ws, 'secrets');
    mkdirSync(secrets, { recursive: true });
    writeFileSync(join(secrets, 'key'), 'k\n');
    writeFileSync(join(ws, 'token.txt'), 't\n');
    const sandbox = {
      permissions: {
        type: 'managed',
        network: 'restricted',
        file_system: {
          type: 'restricted',
          entries: [
            { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
            { path: { type: 'path', path: uri(ws) }, access: 'write' },
            { path: { type: 'path', path: uri(secrets) }, access: 'deny' },
            { path: { type: 'path', path: uri(join(ws, 'token.txt')) }, access: 'deny' },
          ],
        },
      },
      windowsSandboxLevel: 'disabled',
    };
    const plan = await planSpawn({
      argv: ['/bin/sh', '-c', 'cat secrets/key; echo dir=$?; cat token.txt; echo file=$?; echo x > secrets/new; echo write=$?; exit 1'],
      cwd: ws,
      env: ENV,
      tty: false,
      sandbox,
    });
    const r = await runPlan(plan);
    assert.match(r.stdout, /^dir=1\nfile=1\nwrite=2\n$/, r.stderr);
    assert.deepEqual([r.plan.classify(r.code, r.output).kind], ['permission']);
    assert.doesNotMatch(r.stdout, /k\n|t\n/);
    assert.equal(existsSync(join(secrets, 'new')), false);
    rmSync(secrets, { recursive: true });
    rmSync(join(ws, 'token.txt'));
  });

  test('network off: no inet connection, no host unix socket, while unix socketpairs (IPC) still work', async () => {
    const before = { tcp: hostConnections, unix: unixConnections };
    // One node process runs every probe in turn (node start-up dominates on a busy machine).
    const probe = `
      const net = require("net"), dns = require("dns"), cp = require("child_process");
      const attempt = (label, ...args) => new Promise((done) => net.connect(...args)
        .on("connect", () => { console.log(label, "CONNECTED"); done(); })
        .on("error", (e) => { console.log(label, e.code); done(); }));
      (async () => {
        await attempt("tcp", ${hostPort}, "127.0.0.1");
        await attempt("out", 80, "203.0.113.1");
        await attempt("unix", "host.sock");
        await attempt("tmpunix", ${JSON.stringify(`/tmp/${marker}.sock`)});
        await new Promise((done) => dns.lookup("example.com", (e) => { console.log("dns", e && e.code); done(); }));
        const c = cp.spawn(process.execPath, ["-e", "process.send(41)"], { stdio: ["inherit", "inherit", "inherit", "ipc"] });
        c.on("message", (m) => console.log("ipc", m + 1));
      })();`;
    writeFileSync(join(ws, 'probe.js'), probe);
    const r = await sh({ policy: 'workspace-write' }, `${process.execPath} probe.js; ls -l /proc/self/fd`);
    assert.match(r.stdout, /tcp EPERM\nout EPERM\nunix EPERM\ntmpunix EPERM\ndns EAI_AGAIN\nipc 42\n/, r.stderr);
    assert.doesNotMatch(r.stdout, /\.bpf|exec-bridge-sandbox/, 'the seccomp fd does not leak into the command');
    assert.deepEqual({ tcp: hostConnections, unix: unixConnections }, before);
    // The same with the network on reaches the host's loopback.
    const on = await sh(
      { policy: 'workspace-write', network: true },
      `${process.execPath} -e 'require("net").connect(${hostPort},"127.0.0.1").on("data",d=>process.stdout.write(d)).on("error",e=>console.log("tcp",e.code))'`,
    );
    assert.equal(on.stdout, 'hi\n', on.stderr);
    assert.equal(hostConnections, before.tcp + 1);
    const v = r.plan.classify(1, [Buffer.from('connect EPERM 203.0.113.1:80 - Local (undefined:undefined)\n')]);
    assert.deepEqual([v.denied, v.kind], [true, 'network']);
  });

  // The kernel keyrings are not namespaced: a sandboxed command must not read or add to ours.
  // Unsandboxed, keyctl answers and an empty key type is EINVAL; the filter answers EPERM first.
  const keyringProbe = () => {
    const t = SYSCALLS[process.arch]!;
    const [addKey, requestKey, keyctl] = t.keyring;
    const py = [
      'import ctypes, errno',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def call(name, nr, *args):',
      '    ctypes.set_errno(0)',
      '    r = libc.syscall(nr, *args)',
      '    print(name, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])',
      `call("keyctl", ${keyctl}, 0, -3, 0)`,
      `call("add_key", ${addKey}, b"", b"k", b"v", 1, -3)`,
      `call("request_key", ${requestKey}, b"", b"k", None, 0)`,
    ].join('\n');
    writeFileSync(join(ws, 'keyring.py'), py);
    return '/usr/bin/python3 keyring.py';
  };

  test('keyring syscalls (add_key, request_key, keyctl) fail with EPERM, network on and off', async () => {
    const probe = keyringProbe();
    const host = spawnSync('/bin/sh', ['-c', probe], { cwd: ws, encoding: 'utf8' });
    assert.equal(host.stdout, 'keyctl ok\nadd_key EINVAL\nrequest_key EINVAL\n', host.stderr);
    for (const network of [false, true]) {
      const r = await sh({ policy: 'workspace-write', network }, probe);
      assert.equal(r.stdout, 'keyctl EPERM\nadd_key EPERM\nrequest_key EPERM\n', `network ${network ? 'on' : 'off'}: ${r.stderr}`);
    }
  });

  test('the keyring-only filter (for network-on starts) holds under the real kernel and leaves the network alone', async () => {
    const probe = keyringProbe();
    const bpf = join(base, 'keyring.bpf');
    writeFileSync(bpf, keyringOffFilter());
    const fd = openSync(bpf, 'r');
    try {
      // Not spawnSync: the host server answering the connect runs in this process.
      const args = [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--unshare-user',
        '--unshare-pid',
        '--seccomp',
        '3',
        '--chdir',
        ws,
        '/bin/sh',
        '-c',
        `${probe}; ${process.execPath} -e 'require("net").connect(${hostPort},"127.0.0.1").on("data",d=>process.stdout.write(d))'`,
      ];
      const child = spawn('bwrap', args, { stdio: ['ignore', 'pipe', 'pipe', fd] });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await new Promise((r) => child.on('close', r));
      clearTimeout(timer);
      assert.equal(out, 'keyctl EPERM\nadd_key EPERM\nrequest_key EPERM\nhi\n', err);
    } finally {
      closeSync(fd);
    }
  });

  test('escape attempts as root: remount, core_pattern, sysrq, capabilities, nested namespaces', async () => {
    const r = await sh(
      { policy: 'workspace-write' },
      [
        'mount -o remount,bind,rw / 2>/dev/null; echo remount=$?',
        'touch /etc/escape-probe 2>/dev/null; echo etc=$?',
        'test -w /proc/sys/kernel/core_pattern; echo corew=$?',
        'echo "|/bin/false" > /proc/sys/kernel/core_pattern 2>/dev/null; echo core=$?',
        'echo 0 > /proc/sys/vm/swappiness 2>/dev/null; echo sysctl=$?',
        'grep CapEff /proc/self/status',
        'grep NoNewPrivs /proc/self/status',
        'unshare -Ur true 2>/dev/null; echo userns=$?',
        'mount -t tmpfs none .git 2>/dev/null; echo mountgit=$?',
      ].join('\n'),
    );
    assert.match(
      r.stdout,
      /remount=32\netc=1\ncorew=1\ncore=2\nsysctl=2\nCapEff:\s+0000000000000000\nNoNewPrivs:\s+1\nuserns=1\nmountgit=32\n/,
      r.stderr,
    );
    assert.equal(existsSync('/etc/escape-probe'), false);
    assert.doesNotMatch(readFileSync('/proc/sys/kernel/core_pattern', 'utf8'), /false/);
  });

  test('no sandbox can touch the seccomp filter of the next one (shared /tmp, network on or off)', async () => {
    const planner = new SandboxPlanner({});
    const netOff = await planner.plan({
      argv: ['/bin/true'],
      cwd: ws,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }),
    });
    netOff.dispose();
    const dir = planner.stateDirectory;
    const [bpfName] = readdirSync(dir).filter((f) => f.endsWith('.bpf'));
    assert.ok(bpfName, 'the filter file exists');
    const bpfPath = join(dir, bpfName);
    const before = readFileSync(bpfPath);
    for (const network of [true, false]) {
      const plan = await planner.plan({
        argv: [
          '/bin/sh',
          '-c',
          `true > ${bpfPath}; echo trunc=$?; rm -f ${bpfPath}; echo rm=$?; echo x > ${dir}/evil.bpf; echo new=$?; mv ${dir} ${dir}.moved; echo mv=$?`,
        ],
        cwd: ws,
        env: ENV,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(ws) }),
      });
      const r = await runPlan(plan);
      assert.match(r.stdout, /trunc=[12]\nrm=1\nnew=[12]\nmv=1\n/, r.stderr);
    }
    assert.deepEqual(readFileSync(bpfPath), before);
  });

  test('full-access with the network off: the disk is writable, the network is not', async () => {
    const r = await sh(
      { policy: 'full-access' },
      `echo yes > ${outside}/full.txt && echo WROTE; ${process.execPath} -e 'require("net").connect(${hostPort},"127.0.0.1").on("error",e=>console.log(e.code))'`,
    );
    assert.equal(r.stdout, 'WROTE\nEPERM\n', r.stderr);
    assert.equal(readFileSync(join(outside, 'full.txt'), 'utf8'), 'yes\n');
    assert.equal(r.plan.restricted, true);
    // Full access with the network on is no sandbox at all.
    const plan = await planSpawn({
      argv: ['/bin/true'],
      cwd: ws,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'full-access', network: true, cwd: uri(ws) }),
    });
    assert.deepEqual(
      [plan.file, plan.args, plan.sandboxType, plan.restricted, plan.isDenial(1, [Buffer.from('Read-only file system')])],
      ['/bin/true', [], 'none', false, false],
    );
  });

  test('killing the process group leaves no survivor (setsid, nohup, TERM-ignoring children)', async () => {
    const tag = `${Math.floor(Math.random() * 1e6)}.${process.pid % 1000}`;
    const plan = await planSpawn({
      argv: [
        '/bin/sh',
        '-c',
        `sleep 300${tag} & setsid sleep 301${tag} & (trap "" TERM HUP; sleep 302${tag}) & nohup sleep 303${tag} >/dev/null 2>&1 & echo ready; wait`,
      ],
      cwd: ws,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }),
    });
    const child = spawn(plan.file, plan.args, { cwd: plan.cwd, env: plan.env, detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no ready line')), 10_000);
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    // The four sleeps themselves (not bwrap or the shell, whose command lines carry the tag too).
    const survivors = () =>
      readdirSync('/proc').filter((p) => /^\d+$/.test(p) && /^sleep\x0030[0-3]/.test(cmdline(p)) && cmdline(p).includes(tag));
    await until(() => survivors().length === 4, 5_000, 'all four sleeps running');
    const closed = new Promise((r) => child.on('close', r));
    process.kill(-child.pid!, 'SIGKILL');
    await closed;
    plan.dispose();
    await until(() => survivors().length === 0, 5_000, 'no sleep left');
  });

  test('tty: the sandbox runs under a PTY and still judges denials', async () => {
    const plan = await planSpawn({
      argv: ['/bin/sh', '-c', 'test -t 0 && test -t 1 && echo TTY-OK; touch /etc/x'],
      cwd: ws,
      env: ENV,
      tty: true,
      sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) }),
    });
    assert.ok(!plan.args.includes('--new-session'));
    const term = ptySpawn(plan.file, plan.args, { cwd: plan.cwd, env: plan.env, cols: 80, rows: 24 });
    const chunks: Buffer[] = [];
    term.onData((d) => chunks.push(Buffer.from(d)));
    const code = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('pty run timed out')), 15_000);
      term.onExit((e) => {
        clearTimeout(t);
        resolve(e.exitCode);
      });
    });
    plan.dispose();
    const text = Buffer.concat(chunks).toString();
    assert.match(text, /TTY-OK\r\n/);
    assert.equal(code, 1);
    assert.equal(plan.isDenial(code, chunks), true, text);
  });

  test('arg0 and the environment reach the command unchanged', async () => {
    const plan = await planSpawn({
      argv: ['/bin/sh', '-c', 'echo "$0"; echo "A=$A"'],
      arg0: 'custom-name',
      cwd: ws,
      env: { ...ENV, A: 'b c' },
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) }),
    });
    const r = await runPlan(plan);
    assert.equal(r.stdout, 'custom-name\nA=b c\n', r.stderr);
    // The runner hands argv[0] resolved; the name it came from is kept when it resolves the same.
    const named = await runPlan(
      await planSpawn({
        argv: ['/bin/sh', '-c', 'echo "$0"'],
        arg0: 'sh',
        cwd: ws,
        env: ENV,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) }),
      }),
    );
    assert.equal(named.stdout, 'sh\n');
  });

  test('a private /tmp still shows a cwd below /tmp (read-only policy)', async () => {
    const dir = realpathSync(mkdtempSync('/tmp/sbx-ro-cwd-'));
    try {
      writeFileSync(join(dir, 'f'), 'visible\n');
      const r = await sh({ policy: 'read-only' }, 'cat f; ls /tmp | wc -l', { cwd: dir });
      assert.equal(r.stdout, 'visible\n1\n', r.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('fails closed: bwrap missing, or unable to create namespaces — with how to fix it', async () => {
    const req = { argv: ['/bin/true'], cwd: ws, env: ENV, tty: false, sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) }) };
    await assert.rejects(
      planSpawn(req, { bwrapPath: join(base, 'no-such-bwrap') }),
      (e: Error) => e instanceof SandboxUnavailableError && /apt-get install -y bubblewrap/.test(e.message) && /not run/.test(e.message),
    );
    const empty = await new SandboxPlanner({}).plan({ ...req, sandbox: null });
    assert.equal(empty.sandboxType, 'none', 'no sandbox asked: no bwrap needed');
    // A bwrap that cannot set up user namespaces (what a locked-down kernel answers).
    const fake = join(base, 'fake-bwrap');
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n");
    chmodSync(fake, 0o755);
    await assert.rejects(
      new SandboxPlanner({ bwrapPath: fake }).plan(req),
      (e: Error) => e instanceof SandboxUnavailableError && /user namespaces/.test(e.message) && /sysctl/.test(e.message),
    );
    // Other platforms have no sandbox: refuse rather than run unsandboxed.
    await assert.rejects(new SandboxPlanner({ platform: 'win32' }).plan(req), /no sandbox is available on win32/);
  });

  test('unprivileged: the same sandbox works for a non-root user (user namespaces)', async () => {
    // As root, drop to nobody; as anyone else, we already are the unprivileged user.
    const asRoot = process.getuid?.() === 0;
    const uid = asRoot ? 65534 : process.getuid!();
    const home = join(base, 'nobody');
    mkdirSync(home, { recursive: true });
    chmodSync(base, 0o755);
    if (asRoot) chownSync(home, 65534, 65534);
    // The plan is made here (as root) but run as nobody: its filter must live where nobody can read it,
    // as it would in a server run by that user (our private directory is root's).
    const state = join(home, 'state');
    mkdirSync(state, { mode: 0o700 });
    if (asRoot) chownSync(state, 65534, 65534);
    // Root's other private directories (other suites' servers register theirs) may lie where nobody
    // cannot look; a server run by nobody would hide nobody's, all of which nobody can reach.
    const planner = new SandboxPlanner({ stateDir: state, hiddenDirs: () => ({ own: [], others: [] }) });
    const plan = await planner.plan({
      argv: ['/bin/sh', '-c', 'id -u; echo ok > mine.txt; touch /etc/x'],
      cwd: home,
      env: ENV,
      tty: false,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', network: true, cwd: uri(home) }),
    });
    if (asRoot) for (const f of readdirSync(state)) chownSync(join(state, f), 65534, 65534);
    const [cmd, args] = asRoot
      ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', plan.file, ...plan.args]]
      : [plan.file, plan.args];
    const r = spawnSync(cmd, args, { cwd: home, env: plan.env, encoding: 'utf8', timeout: 15_000 });
    plan.dispose();
    assert.equal(r.stdout, `${uid}\n`, r.stderr);
    assert.match(r.stderr, /Read-only file system/);
    assert.equal(readFileSync(join(home, 'mine.txt'), 'utf8'), 'ok\n');
  });
});

function cmdline(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}
