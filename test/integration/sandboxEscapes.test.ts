/**
 * The attacks of issue 9 that got a sandboxed command out, replayed against our real exec-server
 * (dist/cli.js serve) with real bubblewrap. Each worked once; each must keep failing. See
 * docs/security.md for why they are impossible by construction now.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ExecServerClient, stdioConnector } from '../../src/client';
import { startAskpass } from '../../src/client/sshAskpass';
import { McpGateway } from '../../src/mcp/gateway';
import type { McpServerManager } from '../../src/mcp/serverManager';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { makePrivateSubdir, privateDir, privateDirCandidates, TOKEN_DIR_PREFIX } from '../../src/util/privateDir';
import { isAlive, until } from '../helpers/procs';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';
import { CLI_JS } from '../helpers/servers';

// Outside /tmp: workspace-write shares /tmp, so "outside the sandbox's reach" must be elsewhere.
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-escape-')));
const ws = join(base, 'ws');
const outside = join(base, 'outside');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };

function start(processId: string, argv: string[], sandbox?: unknown, extra: Record<string, unknown> = {}) {
  return { processId, argv, cwd: uri(ws), env: ENV, tty: false, arg0: null, ...(sandbox === undefined ? {} : { sandbox }), ...extra };
}

/**
 * Bash run inside the sandbox: opens every FIFO it can find under the places our servers ever kept
 * them (read-write, so the open never blocks), pre-fills each with `line`, and holds them open.
 */
const FIFO_ATTACK = `
shopt -s nullglob
n=0
for f in /tmp/exec-bridge* /tmp/exec-bridge*/* /tmp/exec-bridge*/*/* "\${TMPDIR:-/tmp}"/exec-bridge*/* "\${TMPDIR:-/tmp}"/exec-bridge*/*/* "$XDG_RUNTIME_DIR"/exec-bridge/*/*; do
  if [ -p "$f" ] && exec {fd}<>"$f" 2>/dev/null; then printf '%s\\n' "$LINE" >&$fd; n=$((n+1)); fi
done
echo "opened=$n"
exec sleep 60
`;

describe('sandbox escapes stay closed', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let server: StartedServer;
  let client: RawClient;

  before(async () => {
    mkdirSync(ws, { recursive: true });
    mkdirSync(outside, { recursive: true });
    server = await startServer('ours');
    client = (await RawClient.session(server.url)).client;
  });

  after(async () => {
    client?.close();
    await server?.stop();
    rmSync(base, { recursive: true, force: true });
  });

  // The managed network's launcher runs in the sandbox before the command's filter: the same attacks.
  const MANAGED = { enforceManagedNetwork: true, managedNetwork: { allow: ['127.0.0.1:9'] } };
  for (const [policy, managed] of [
    ['workspace-write', false],
    ['read-only', false],
    ['full-access', false], // the network off: still a sandbox, with the whole disk writable
    ['workspace-write', true],
  ] as const) {
    const label = managed ? `${policy} (managed network)` : policy;
    test(`${label}: a sandboxed command cannot reach the stdio FIFO of the next unsandboxed process`, async () => {
      const marker = join(outside, `fifo-${policy}${managed ? '-managed' : ''}`);
      // Let the pool fill first: the attack worked on FIFOs that were waiting to be used.
      const warm = await client.call('process/start', start(`warm-${label}`, ['true']));
      assert.equal(warm.error, undefined);
      await client.processEvents(`warm-${label}`);
      const attacker = `attacker-${label}`;
      const res = await client.call(
        'process/start',
        start(attacker, ['bash', '-c', FIFO_ATTACK], sandboxForPolicy({ policy, cwd: uri(ws) }), {
          env: { ...ENV, LINE: `touch ${marker}` },
          ...(managed ? MANAGED : {}),
        }),
      );
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      await client.waitFor(
        (m) => m.method === 'process/output' && client.output(attacker).includes('opened='),
        20_000,
        'the attacker to report',
      );
      // The victim: an unsandboxed shell reading commands from its piped stdin.
      const victim = `victim-${label}`;
      const v = await client.call('process/start', start(victim, ['bash', '-s'], undefined, { pipeStdin: true }));
      assert.equal(v.error, undefined, JSON.stringify(v.error));
      try {
        await client.call('process/write', {
          processId: victim,
          writeId: 'w1',
          chunk: Buffer.from('echo victim-done\nexit 0\n').toString('base64'),
        });
        await client.processEvents(victim, 15_000);
      } finally {
        await client.call('process/terminate', { processId: attacker });
        await client.call('process/terminate', { processId: victim });
      }
      assert.match(client.output(victim), /victim-done/);
      // (FIFOs of other, older servers may lie in /tmp; none of a current server's may be reachable.)
      const reached = [...client.output(attacker).matchAll(/^fifo=(.*)$/gm)].map((m) => m[1]!);
      assert.match(client.output(attacker), /opened=\d+\n/);
      assert.deepEqual(
        reached.filter((f) => privateDirCandidates().some((d) => f.startsWith(`${d}/`))),
        [],
        'the sandbox opened FIFOs of ours',
      );
      assert.equal(existsSync(marker), false, 'the unsandboxed shell ran the line the sandbox planted');
    });
  }

  test('a sandboxed command sees nothing of our private directory (tokens, FIFOs, the seccomp filter)', async () => {
    const dir = makePrivateSubdir(TOKEN_DIR_PREFIX);
    const token = join(dir, 'token');
    writeFileSync(token, 'secret-token-value\n', { mode: 0o600 });
    try {
      for (const network of [false, true, 'managed'] as const) {
        const id = `peek-${network}`;
        const script = `ls -a ${privateDir()} 2>&1; echo ls=$?; cat ${token} 2>&1; echo cat=$?; grep -rls --include=token secret-token-value /tmp 2>/dev/null | wc -l`;
        const res = await client.call(
          'process/start',
          start(
            id,
            ['sh', '-c', script],
            sandboxForPolicy({ policy: 'workspace-write', network: network === true, cwd: uri(ws) }),
            network === 'managed' ? MANAGED : {},
          ),
        );
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(id);
        const out = client.output(id);
        assert.doesNotMatch(out, /secret-token-value/, out);
        assert.match(out, /ls=[12]\n/, out);
        assert.match(out, /cat=1\n/, out);
        assert.match(out, /\n0\n$/, out);
        // An fs call made with the same sandbox sees what the command sees.
        const read = await client.call('fs/readFile', {
          path: uri(token),
          sandbox: sandboxForPolicy({ policy: 'workspace-write', network: network === true, cwd: uri(ws) }),
        });
        assert.equal(read.result, undefined, 'the token was readable through a sandboxed fs/readFile');
        assert.deepEqual(read.error, { code: -32600, message: 'Permission denied (os error 13)' });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("network on: a sandboxed command cannot connect to the extension's MCP gateway socket", async () => {
    // The gateway only needs the manager's change events to listen; no server is involved here.
    const manager = { onDidChangeServer: () => ({ dispose: () => undefined }) } as unknown as McpServerManager;
    const gateway = new McpGateway(manager);
    const socket = await gateway.listen();
    try {
      const probe = `require('net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => console.log(e.code))`;
      for (const network of [true, false]) {
        const id = `gateway-${network}`;
        const res = await client.call(
          'process/start',
          start(id, [process.execPath, '-e', probe], sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(ws) })),
        );
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(id);
        assert.doesNotMatch(client.output(id), /CONNECTED/, `network ${network}: the sandbox reached the MCP gateway at ${socket}`);
      }
      // The same probe unsandboxed does connect: the test can fail.
      const res = await client.call('process/start', start('gateway-open', [process.execPath, '-e', probe]));
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      await client.processEvents('gateway-open');
      assert.match(client.output('gateway-open'), /CONNECTED/);
    } finally {
      await gateway.dispose();
    }
  });

  test("managed network: no other sandbox can connect to a start's proxy socket or its relays to codex's proxy", async () => {
    const orchestrator = createNetServer((c) => c.end('orchestrator-reached\n'));
    await new Promise<void>((r) => orchestrator.listen(0, '127.0.0.1', r));
    const port = (orchestrator.address() as AddressInfo).port;
    const hold = 'i=0; while [ ! -e release-net ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done';
    const netSockets = () =>
      readdirSync(join(privateDir(), 'sandbox'))
        .filter((n) => n.startsWith(`net-${server.child.pid}-`)) // this server's only: other suites may run servers too
        .flatMap((n) => readdirSync(join(privateDir(), 'sandbox', n)).map((f) => join(privateDir(), 'sandbox', n, f)));
    const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });
    try {
      for (const [id, extra] of [
        ['net-holder-ours', MANAGED],
        [
          'net-holder-codex',
          {
            enforceManagedNetwork: true,
            managedNetwork: { loopbackPorts: [port] },
            env: { ...ENV, HTTP_PROXY: `http://127.0.0.1:${port}` },
          },
        ],
      ] as const) {
        const res = await client.call('process/start', start(id, ['sh', '-c', hold], sandbox, extra));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
      }
      const sockets = netSockets();
      assert.ok(sockets.some((f) => f.endsWith('/proxy.sock')) && sockets.some((f) => f.endsWith(`/port-${port}.sock`)), sockets.join(' '));
      const probeOf = (list: string[]) =>
        `let n = ${list.length}; for (const p of ${JSON.stringify(list)}) require('net').connect(p).on('connect', () => { console.log('CONNECTED', p); if (--n === 0) process.exit(0); }).on('error', (e) => { console.log(e.code); if (--n === 0) process.exit(0); })`;
      const probe = probeOf(sockets);
      for (const network of [true, false]) {
        const id = `net-attack-${network}`;
        const res = await client.call(
          'process/start',
          start(id, [process.execPath, '-e', probe], sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(ws) })),
        );
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(id);
        assert.doesNotMatch(client.output(id), /CONNECTED/, `network ${network}: ${client.output(id)}`);
      }
      // Unsandboxed, the same probe connects to the holders' sockets: the test can fail. (Listed
      // again: a waiting sandbox's proxy, built ahead for the next start, comes and goes meanwhile.)
      const res = await client.call('process/start', start('net-attack-open', [process.execPath, '-e', probeOf(netSockets())]));
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      await client.processEvents('net-attack-open');
      const open = client.output('net-attack-open');
      assert.match(open, /CONNECTED \S+\/proxy\.sock/, open);
      assert.match(open, new RegExp(`CONNECTED \\S+/port-${port}\\.sock`), open);
    } finally {
      writeFileSync(join(ws, 'release-net'), '');
      await client.processEvents('net-holder-ours');
      await client.processEvents('net-holder-codex');
      rmSync(join(ws, 'release-net'), { force: true });
      orchestrator.close();
    }
  });

  test("network on or off: a sandboxed command cannot reach an SSH executor's askpass socket", async () => {
    const asked: string[] = [];
    const askpass = await startAskpass({
      cliPath: CLI_JS,
      handler: (r) => (asked.push(r.prompt), Promise.resolve('x')),
      onCancel: () => {},
    });
    try {
      const probe = `require('net').connect(${JSON.stringify(askpass.socketPath)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => console.log(e.code))`;
      for (const network of [true, false]) {
        const id = `askpass-${network}`;
        const sandbox = sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(ws) });
        const res = await client.call('process/start', start(id, [process.execPath, '-e', probe], sandbox));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(id);
        assert.doesNotMatch(client.output(id), /CONNECTED/, `network ${network}: the sandbox reached ${askpass.socketPath}`);
      }
      // Unsandboxed, the same probe connects: the test can fail.
      const res = await client.call('process/start', start('askpass-open', [process.execPath, '-e', probe]));
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      await client.processEvents('askpass-open');
      assert.match(client.output('askpass-open'), /CONNECTED/);
      assert.deepEqual(asked, []);
    } finally {
      askpass.close();
    }
  });

  test('run --bundled --sandbox-network: the command cannot read the bundled server token', async () => {
    // Where run --bundled kept it (mkdtemp's six characters: not other suites' own token files) and
    // where it keeps it now.
    const script = 'cat /tmp/exec-bridge-run-??????/token /tmp/exec-bridge-*/token-*/token 2>/dev/null | wc -c';
    const r = spawnSync(
      process.execPath,
      [CLI_JS, 'run', '--bundled', '--sandbox', 'workspace-write', '--sandbox-network', '--cwd', ws, '--', 'sh', '-c', script],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), '0', `token bytes readable from the sandbox: ${r.stdout}`);
  });
});

describe('children die with the server', { skip: process.platform !== 'linux' && 'Linux /proc' }, () => {
  before(() => mkdirSync(ws, { recursive: true }));
  after(() => rmSync(base, { recursive: true, force: true }));

  test('SIGKILL of the server takes its unsandboxed children (pipes and PTYs, with their background jobs)', async () => {
    const server = await startServer('ours');
    try {
      const { client } = await RawClient.session(server.url);
      const pids: number[] = [];
      for (const tty of [false, true]) {
        const id = `kids-${tty}`;
        const res = await client.call(
          'process/start',
          start(id, ['sh', '-c', 'sleep 300 & echo "bg=$!"; echo "fg=$$"; exec sleep 301'], undefined, { tty }),
        );
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.waitFor(() => /fg=\d+/.test(client.output(id)), 10_000, `${id} to print its pids`);
        for (const m of client.output(id).matchAll(/(?:bg|fg)=(\d+)/g)) pids.push(Number(m[1]));
      }
      assert.equal(pids.length, 4);
      assert.ok(pids.every(isAlive));
      const fifoDirs = () => readdirSync(privateDir()).filter((n) => n.startsWith(`fifo-${server.child.pid}-`));
      assert.equal(fifoDirs().length, 1, 'the server keeps its FIFOs in the private directory');
      client.close();
      process.kill(server.child.pid!, 'SIGKILL'); // the server alone, not its process group
      await until(() => pids.every((p) => !isAlive(p)), 10_000, 'every child of the killed server to die');
      // The next server sweeps what the dead one left.
      const next = await startServer('ours');
      try {
        assert.deepEqual(fifoDirs(), []);
      } finally {
        await next.stop();
      }
    } finally {
      await server.stop();
    }
  });

  test('a server that exits normally leaves no child either', async () => {
    const child = spawn(process.execPath, [CLI_JS, 'serve', '--listen', 'ws://127.0.0.1:0', '--exit-with-stdin'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /ws:\/\/\S+/.exec(out);
        if (m) resolve(m[0]);
      });
      child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
    });
    const { client } = await RawClient.session(url);
    await client.call('process/start', start('nohup', ['sh', '-c', 'nohup sleep 300 >/dev/null 2>&1 & echo "bg=$!"; exec sleep 301']));
    await client.waitFor(() => /bg=\d+/.test(client.output('nohup')), 10_000, 'the pid');
    const pid = Number(/bg=(\d+)/.exec(client.output('nohup'))![1]);
    client.close();
    const exited = new Promise((r) => child.once('exit', r));
    child.stdin.end(); // --exit-with-stdin: the server exits
    await exited;
    await until(() => !isAlive(pid), 10_000, 'the nohup child to die');
  });
});

describe('the executor daemon is out of a sandbox’s reach', { skip: process.platform !== 'linux' && 'bubblewrap is Linux-only' }, () => {
  const root = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-daemon-escape-')));
  const run = join(root, 'run');
  const work = join(root, 'ws');

  after(async () => {
    const killed: number[] = [];
    for (const name of existsSync(run) ? readdirSync(run) : []) {
      try {
        const { pid } = JSON.parse(readFileSync(join(run, name, 'state.json'), 'utf8')) as { pid: number };
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // not a daemon dir, or not running
      }
    }
    // A sandbox it was building ahead of time may still make (or its watchdog remove) a placeholder
    // in the workspace for a moment: the daemon gone first, then the removal, retried if that moment is not over.
    await until(() => killed.every((p) => !isAlive(p)), 10_000, 'the killed daemon to be gone');
    rmSync(root, { recursive: true, force: true, maxRetries: 10 });
  });

  test('network on or off, a sandboxed command cannot read the token, list the directory or open the socket', async () => {
    mkdirSync(work, { recursive: true });
    const connector = stdioConnector(process.execPath, [CLI_JS, 'connect'], { env: { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: run } });
    const client = await ExecServerClient.connect({ connector, keepalive: false });
    try {
      const [dirName] = readdirSync(run).filter((n) => n.startsWith('daemon-'));
      assert.ok(dirName, 'the daemon dir');
      const dir = join(run, dirName);
      const { pid } = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { pid: number };
      assert.equal(listensOnTcp(pid), false, 'the daemon has no TCP listener');
      const script = [
        `cat ${dir}/token 2>/dev/null; echo cat=$?`,
        `ls ${run} >/dev/null 2>&1; echo ls=$?`,
        `node -e 'require("net").connect(process.argv[1]).on("connect",()=>{console.log("sock=open");process.exit(0)}).on("error",e=>{console.log("sock="+e.code);process.exit(0)})' ${dir}/sock`,
        `cat /proc/${pid}/environ >/dev/null 2>&1; echo proc=$?`,
      ].join('; ');
      for (const network of [false, true]) {
        const h = await client.startProcess({
          argv: ['sh', '-c', script],
          cwd: work,
          sandbox: sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(work) }),
        });
        const chunks: Buffer[] = [];
        h.onEvent((e) => {
          if (e.type === 'output') chunks.push(e.data);
        });
        await h.completion;
        await until(() => Buffer.concat(chunks).toString().includes('proc='), 5_000, 'the script output');
        const out = Buffer.concat(chunks).toString();
        assert.match(out, /^cat=1\nls=[12]\nsock=E[A-Z]+\nproc=1\n$/, `network ${network}: ${out}`);
        assert.doesNotMatch(out, /sock=open/);
      }
    } finally {
      client.dispose();
    }
  });
});

/** Whether `pid` holds a listening TCP socket (IPv4 or IPv6), from /proc. */
function listensOnTcp(pid: number): boolean {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9]!)) return true;
    }
  }
  return false;
}
