/**
 * SSH executors against a real OpenSSH server on 127.0.0.1 (test/helpers/sshd.ts): the bundle is
 * installed over the ssh connection on first use and reused after; drops (the TCP connection cut
 * under ssh by a fault proxy, and kill -9 of the ssh client) during a 2000-line stream resume
 * byte-exact with the same remote process; the failures a user meets are one clear message each.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { ExecServerClient, type ConnectionState } from '../../src/client';
import { ExecutorConnection } from '../../src/core/executorConnection';
import { isUnknownHostKey, scanHostKeys, trustHostKeys } from '../../src/client/sshHostKeys';
import { ASKPASS_DIR_PREFIX, startAskpass, type AskpassHandler, type AskpassRequest } from '../../src/client/sshAskpass';
import { bundleFor } from '../../src/client/sshBootstrap';
import { parseSshTarget, SshConnectError, sshConnector, type SshProgress } from '../../src/client/sshConnector';
import { shareDirFor } from '../../src/client/sshShare';
import { privateDir } from '../../src/util/privateDir';
import { FaultProxy } from '../helpers/faultProxy';
import { isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { copyBundle, NODE_PTY_DIR, PASSPHRASE, startSshd, type Sshd } from '../helpers/sshd';
import { gather, numberedLines } from './clientHelpers';

let sshd: Sshd;
/** Every connector's log (printed with EB_SSH_TEST_LOG=1). */
const logs: string[] = [];
const work = mkdtempSync(join(tmpdir(), 'eb-ssh-test-'));
const CLI = copyBundle(join(work, 'v1'));

before(async () => {
  sshd = await startSshd();
});
afterEach(() => {
  // EB_SSH_TEST_LOG=1: every connector's log on stderr.
  if (process.env.EB_SSH_TEST_LOG) process.stderr.write(logs.join('\n') + '\n');
  logs.length = 0;
});
after(async () => {
  await sshd?.stop();
  rmSync(work, { recursive: true, force: true });
});

function gatedScript(fifo: string): string[] {
  return [
    'bash',
    '-c',
    `mkfifo ${fifo}; echo "pid $$"; for ((i=1;i<=1000;i++)); do echo "line $i"; done; read -r _ < ${fifo}; for ((i=1001;i<=2000;i++)); do echo "line $i"; done; echo "pid $$"`,
  ];
}

function connector(
  port: number,
  extra: { sshOptions?: string[]; cliPath?: string; progress?: (p: SshProgress) => void; askpass?: AskpassHandler } = {},
) {
  return sshConnector({
    ...(extra.askpass ? { askpass: extra.askpass } : {}),
    target: `root@127.0.0.1:${port}`,
    sshOptions: extra.sshOptions ?? sshd.clientOptions,
    cliPath: extra.cliPath ?? CLI,
    nodePtyDir: NODE_PTY_DIR,
    progress: extra.progress,
    log: (line) => logs.push(line),
  });
}

describe('ssh executors', () => {
  test('first connect installs the bundle on the remote; the second reuses it; a new version installs beside it', async () => {
    const steps: string[] = [];
    const c1 = connector(sshd.port, { progress: (p) => steps.push(p.step) });
    const a = await ExecServerClient.connect({ connector: c1, attemptTimeoutMs: 30_000 });
    assert.deepEqual(steps, ['connecting', 'installing', 'starting', 'ready']);
    const info = c1.remote!;
    assert.equal(info.installed, true);
    assert.match(info.platform, /^Linux /);
    const dir = join(sshd.home, '.exec-bridge', 'server', info.version);
    assert.ok(existsSync(join(dir, 'dist', 'cli.js')));
    assert.deepEqual(readFileSync(join(dir, 'dist', 'cli.js')), readFileSync(CLI));
    // The executor's side only (the dispatcher and serve/daemon/connect), not the client commands' bundles.
    assert.deepEqual(readFileSync(join(dir, 'dist', 'cli', 'server.js')), readFileSync(join(dirname(CLI), 'cli', 'server.js')));
    assert.deepEqual(readdirSync(join(dir, 'dist', 'cli')), ['server.js']);
    assert.ok(existsSync(join(dir, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node')), 'node-pty for a remote of our platform');
    assert.equal(readlinkSync(join(sshd.home, '.exec-bridge', 'bin', 'exec-bridge')), join(dir, 'bin', 'exec-bridge'));
    // A PTY works on the remote with the shipped node-pty.
    const tty = await a.startProcess({ argv: ['sh', '-c', 'tty; echo ok'], cwd: '/tmp', tty: true });
    const to = gather(tty);
    await to.until((text) => text.includes('ok\r\n'), 10_000, 'the pty output');
    assert.match(to.text(), /^\/dev\/pts\/\d+\r\nok\r\n$/);
    await tty.completion;
    a.dispose();

    steps.length = 0;
    const c2 = connector(sshd.port, { progress: (p) => steps.push(p.step) });
    const b = await ExecServerClient.connect({ connector: c2 });
    assert.deepEqual(steps, ['connecting', 'starting', 'ready']);
    assert.equal(c2.remote!.installed, false);
    assert.equal(c2.remote!.daemonPid, info.daemonPid, 'the same daemon');
    b.dispose();

    // Another build of the bundle is another version: installed beside the first.
    const c3 = connector(sshd.port, { cliPath: copyBundle(join(work, 'v2'), '\n// another build\n') });
    const c = await ExecServerClient.connect({ connector: c3, attemptTimeoutMs: 30_000 });
    assert.equal(c3.remote!.installed, true);
    assert.notEqual(c3.remote!.version, info.version);
    assert.notEqual(c3.remote!.daemonPid, info.daemonPid, 'a daemon per version');
    assert.ok(existsSync(join(dir, '.complete')), 'the older version stays while its daemon runs');
    c.dispose();

    // Once its daemon is gone, the next install removes it (and keeps the one still in use).
    process.kill(info.daemonPid, 'SIGTERM');
    await until(() => !isAlive(info.daemonPid), 10_000, 'the first daemon to stop');
    const c4 = connector(sshd.port, { cliPath: copyBundle(join(work, 'v3'), '\n// a third build\n') });
    const d = await ExecServerClient.connect({ connector: c4, attemptTimeoutMs: 30_000 });
    assert.equal(c4.remote!.installed, true);
    assert.equal(existsSync(dir), false, 'the unused version was removed');
    assert.ok(existsSync(join(sshd.home, '.exec-bridge', 'server', c3.remote!.version, '.complete')), 'the version in use stays');
    d.dispose();
  });

  test('a bundle without node-pty (a host of another platform): pipes work, a PTY start fails with a clear error', async () => {
    const c = sshConnector({
      target: `root@127.0.0.1:${sshd.port}`,
      sshOptions: sshd.clientOptions,
      cliPath: copyBundle(join(work, 'nopty'), '\n// no node-pty\n'),
      nodePtyDir: null,
    });
    const client = await ExecServerClient.connect({ connector: c, attemptTimeoutMs: 30_000 });
    try {
      const p = await client.startProcess({ argv: ['echo', 'pipes work'], cwd: '/tmp' });
      const out = gather(p);
      await p.completion;
      await out.until((t) => t === 'pipes work\n');
      await assert.rejects(
        client.startProcess({ argv: ['sh'], cwd: '/tmp', tty: true }),
        /terminals \(PTYs\) are not available on this executor/,
      );
    } finally {
      client.dispose();
    }
  });

  test("an editor of another platform (a packaged VSIX's layout): the host's node-pty build comes from dist/native, a PTY works", async () => {
    // node-pty's JS without any native build of its own, as in a darwin or win32 VSIX, and
    // dist/native/linux-x64/pty.node beside the bundle (scripts/package.mjs puts it there).
    const root = join(work, 'vsix-layout');
    const cli = copyBundle(root, '\n// a VSIX of another platform\n');
    const pty = join(root, 'node_modules', 'node-pty');
    mkdirSync(pty, { recursive: true });
    copyFileSync(join(NODE_PTY_DIR, 'package.json'), join(pty, 'package.json'));
    cpSync(join(NODE_PTY_DIR, 'lib'), join(pty, 'lib'), { recursive: true });
    mkdirSync(join(root, 'dist', 'native', 'linux-x64'), { recursive: true });
    copyFileSync(join(NODE_PTY_DIR, 'build', 'Release', 'pty.node'), join(root, 'dist', 'native', 'linux-x64', 'pty.node'));
    const c = sshConnector({ target: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions, cliPath: cli, nodePtyDir: pty });
    const client = await ExecServerClient.connect({ connector: c, attemptTimeoutMs: 30_000 });
    try {
      const installed = join(
        sshd.home,
        '.exec-bridge',
        'server',
        c.remote!.version,
        'node_modules',
        'node-pty',
        'build',
        'Release',
        'pty.node',
      );
      assert.ok(existsSync(installed), 'the linux-x64 build was uploaded');
      const tty = await client.startProcess({ argv: ['sh', '-c', 'tty; echo ok'], cwd: '/tmp', tty: true });
      const to = gather(tty);
      await to.until((text) => text.includes('ok\r\n'), 10_000, 'the pty output');
      assert.match(to.text(), /^\/dev\/pts\/\d+\r\nok\r\n$/);
      await tty.completion;
    } finally {
      client.dispose();
    }
  });

  test("which node-pty build a host gets: its platform's or none (an unknown arch: pipes only)", () => {
    const files = (platform: string) => bundleFor(CLI, NODE_PTY_DIR, platform);
    const mac = files('Darwin arm64');
    assert.equal(mac.ptyFrom, join(NODE_PTY_DIR, 'prebuilds', 'darwin-arm64'));
    assert.deepEqual(
      mac.files.filter((f) => f.path.includes('build/Release')).map((f) => [f.path, f.abs, f.mode]),
      [
        ['node_modules/node-pty/build/Release/pty.node', join(NODE_PTY_DIR, 'prebuilds', 'darwin-arm64', 'pty.node'), 0o755],
        ['node_modules/node-pty/build/Release/spawn-helper', join(NODE_PTY_DIR, 'prebuilds', 'darwin-arm64', 'spawn-helper'), 0o755],
      ],
    );
    for (const other of ['Linux armv7l', 'Linux aarch64', 'FreeBSD amd64']) {
      const b = files(other);
      assert.equal(b.ptyFrom, null, other);
      assert.deepEqual(
        b.files.map((f) => f.path),
        ['dist/cli.js', 'dist/cli/server.js'],
        other,
      );
    }
  });

  for (const how of ['cut', 'kill'] as const) {
    test(`${how === 'cut' ? 'the TCP connection cut under ssh' : 'kill -9 of the ssh client'} mid-stream: resumed, byte-exact, same remote process`, async () => {
      const proxy = await FaultProxy.start(sshd.port);
      const conn = connector(proxy.port);
      const client = await ExecServerClient.connect({ connector: conn, keepalive: false, attemptTimeoutMs: 30_000 });
      const states: ConnectionState['kind'][] = [];
      client.onDidChangeState((s) => states.push(s.kind));
      const daemonPid = conn.remote!.daemonPid;
      const fifo = join(work, `go-${how}`);
      const h = await client.startProcess({ argv: gatedScript(fifo), cwd: '/tmp' });
      const out = gather(h);
      await out.until((s) => s.includes('line 1000\n'));
      const pid = Number(/^pid (\d+)/.exec(out.text())![1]);
      const lost = until(() => client.state.kind === 'recovering', 15_000, 'the client to notice');
      const t0 = Date.now();
      if (how === 'cut') proxy.cut();
      // The connection's ssh (a shared master is learned beside the first calls: wait for it).
      else process.kill(await until(() => conn.sshPid, 15_000, 'the ssh process of the connection'), 'SIGKILL');
      await lost;
      assert.ok(isAlive(pid), 'the remote command keeps running');
      writeFileSync(fifo, 'go\n');
      await until(() => client.state.kind === 'connected', 25_000, 'resume');
      const reconnectMs = Date.now() - t0;
      const done = await h.completion;
      assert.equal(done.exitCode, 0);
      assert.equal(out.text(), `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`);
      assert.equal(conn.remote!.daemonPid, daemonPid, 'same daemon');
      assert.ok(!states.includes('failed') && states[0] === 'recovering' && states.at(-1) === 'connected', states.join(' '));
      process.stdout.write(`# ${how}: resumed in ${reconnectMs} ms\n`);
      client.dispose();
      await proxy.close();
    });
  }

  test('a black-holed path (the remote sshd notices nothing): keepalive gives up on it, the stale relay lets go, the session resumes', async () => {
    const proxy = await FaultProxy.start(sshd.port);
    const viaProxy = connector(proxy.port);
    const direct = connector(sshd.port);
    let attempts = 0;
    const client = await ExecServerClient.connect({
      connector: (signal) => (attempts++ === 0 ? viaProxy(signal) : direct(signal)),
      keepalive: { intervalMs: 250, timeoutMs: 1000 },
      attemptTimeoutMs: 10_000,
      deadlineMs: 30_000,
    });
    try {
      const fifo = join(work, 'go-blackhole');
      const h = await client.startProcess({ argv: gatedScript(fifo), cwd: '/tmp' });
      const out = gather(h);
      await out.until((t) => t.includes('line 1000\n'));
      const pid = Number(/^pid (\d+)/.exec(out.text())![1]);
      proxy.blackhole();
      writeFileSync(fifo, 'go\n');
      await until(() => client.state.kind === 'recovering', 10_000, 'keepalive to notice');
      // The old relay stays attached (its ssh session looks alive to sshd) until it stops answering the daemon.
      await until(() => client.state.kind === 'connected', 28_000, 'resume through a new ssh');
      await h.completion;
      assert.equal(out.text(), `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`);
    } finally {
      client.dispose();
      await proxy.close();
    }
  });

  test('exec-bridge run --ssh: output, exit code, and a cut mid-stream prints the resume lines', async () => {
    const proxy = await FaultProxy.start(sshd.port);
    const fifo = join(work, 'go-cli');
    const child = spawn(
      process.execPath,
      [
        CLI,
        'run',
        '--ssh',
        `root@127.0.0.1:${proxy.port}`,
        ...sshd.clientOptions.flatMap((o) => ['--ssh-option', o]),
        '--no-stdin',
        '--',
        ...gatedScript(fifo),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    await until(() => out.includes('line 1000\n'), 30_000, 'line 1000 from run --ssh');
    proxy.cut();
    await until(() => err.includes('resuming'), 15_000, `a "connection lost" line; stderr: ${err}`);
    writeFileSync(fifo, 'go\n');
    assert.equal(await exit, 0, err);
    const pid = /^pid (\d+)/.exec(out)?.[1];
    assert.equal(out, `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`);
    // (The command may end during the catch-up, before a "resumed after" line.)
    assert.match(
      err,
      /connection lost \(.*\); resuming (for up to .*|until the executor says the session is gone) — the command keeps running on the executor\n/,
    );
    await proxy.close();

    const code = spawn(process.execPath, [
      CLI,
      'run',
      '--ssh',
      `root@127.0.0.1:${sshd.port}`,
      ...sshd.clientOptions.flatMap((o) => ['--ssh-option', o]),
      '--no-stdin',
      '--',
      'sh',
      '-c',
      'exit 7',
    ]);
    assert.equal(await new Promise((r) => code.once('exit', r)), 7);
  });

  test('an ssh executor (settings entry) connects, reports its remote, shows recovering after a kill of ssh and resumes', async () => {
    const steps: string[] = [];
    const states: string[] = [];
    const conn = new ExecutorConnection(
      { kind: 'ssh', name: 'devbox', ssh: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions },
      {
        getToken: () => Promise.resolve(undefined),
        sshBundle: { cliPath: CLI, nodePtyDir: NODE_PTY_DIR },
        onSshProgress: (name, p) => steps.push(`${name}:${p.step}`),
        clientOptions: { keepalive: false },
        log: (line) => logs.push(line),
      },
    );
    conn.onDidChangeState((st) => states.push(st.kind));
    try {
      const client = await conn.connect();
      assert.equal(conn.state.kind, 'connected');
      assert.match(conn.remote!.platform, /^Linux /);
      assert.ok(steps.includes('devbox:ready'));
      const ssh = connectionSsh(sshd.port);
      assert.equal(ssh.length, 1);
      process.kill(ssh[0]!, 'SIGKILL');
      await until(() => states.includes('recovering') && conn.state.kind === 'connected', 20_000, 'recovering, then connected');
      const h = await client.startProcess({ argv: ['echo', 'after'], cwd: conn.defaultCwd() });
      const out = gather(h);
      await h.completion;
      await out.until((t) => t === 'after\n');
    } finally {
      conn.dispose();
    }
  });

  async function failure(c: ReturnType<typeof connector>): Promise<SshConnectError> {
    const t0 = Date.now();
    const e = await ExecServerClient.connect({ connector: c, deadlineMs: 0, attemptTimeoutMs: 20_000 }).then(
      () => assert.fail('connected'),
      (err: unknown) => err,
    );
    assert.ok(Date.now() - t0 < 15_000, 'no hang');
    const cause = findSshError(e);
    assert.ok(cause, `an SshConnectError, got ${String(e)}`);
    return cause;
  }

  // Issue 24 item 6: `ssh root@127.0.0.1:PORT` and `ssh-keygen -R HOST` were printed; pasted, neither worked.
  test('the commands a host-key failure prints work when pasted in a shell', async () => {
    const known = join(work, 'known_paste');
    const other = join(work, 'paste_other');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const wrong = readFileSync(`${other}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
    writeFileSync(known, `[127.0.0.1]:${sshd.port} ${wrong}\n`);
    const opts = [`IdentityFile=${sshd.clientKey}`, 'IdentitiesOnly=yes', `UserKnownHostsFile=${known}`];
    const changed = await failure(connector(sshd.port, { sshOptions: opts }));
    assert.match(changed.message, /host key has CHANGED/);
    const remove = /remove the old key \((ssh-keygen [^)]*)\)$/.exec(changed.message)?.[1];
    assert.ok(remove, changed.message);
    execFileSync('/bin/sh', ['-c', remove], { stdio: 'ignore' });
    assert.throws(
      () => execFileSync('ssh-keygen', ['-F', `[127.0.0.1]:${sshd.port}`, '-f', known], { stdio: 'ignore' }),
      'the old key removed',
    );

    const unknown = await failure(connector(sshd.port, { sshOptions: opts }));
    const line = /connect once in a terminal \((ssh [^)]*)\) to check/.exec(unknown.message)?.[1];
    assert.ok(line, unknown.message);
    // What the user does in that terminal, answering ssh's "continue connecting?" with yes.
    execFileSync('/bin/sh', ['-c', `${line} -o StrictHostKeyChecking=accept-new -o BatchMode=yes true`], {
      stdio: 'ignore',
      timeout: 20_000,
    });
    // (Debian's ssh_config hashes the names it records: ssh-keygen -F finds them either way.)
    execFileSync('ssh-keygen', ['-F', `[127.0.0.1]:${sshd.port}`, '-f', known], { stdio: 'ignore' }); // accepted into the same known_hosts
    const client = await ExecServerClient.connect({ connector: connector(sshd.port, { sshOptions: opts }), attemptTimeoutMs: 30_000 });
    client.dispose();
  });

  test('an unknown host key: scanned and shown, trusted only when confirmed, then the connect succeeds', async () => {
    const known = join(work, 'known_scan');
    writeFileSync(known, '');
    const opts = [`IdentityFile=${sshd.clientKey}`, 'IdentitiesOnly=yes', `UserKnownHostsFile=${known}`, 'StrictHostKeyChecking=yes'];
    const refused = await failure(connector(sshd.port, { sshOptions: opts }));
    assert.ok(isUnknownHostKey(refused.message));
    const scan = await scanHostKeys(`root@127.0.0.1:${sshd.port}`, opts);
    assert.equal(scan.recordAs, `[127.0.0.1]:${sshd.port}`);
    assert.equal(scan.knownHostsFile, known);
    assert.ok(scan.fingerprints.includes(fingerprintOf(join(sshd.dir, 'host.pub'))), scan.fingerprints.join(', '));
    assert.equal(readFileSync(known, 'utf8'), '', 'scanning trusts nothing');
    trustHostKeys(scan);
    const client = await ExecServerClient.connect({ connector: connector(sshd.port, { sshOptions: opts }), attemptTimeoutMs: 30_000 });
    client.dispose();
  });

  test('errors: no ssh binary, unknown host key, failed auth, no node, old node', async () => {
    const noSsh = await failure(sshConnector({ target: `root@127.0.0.1:${sshd.port}`, sshPath: join(work, 'no-such-ssh'), cliPath: CLI }));
    assert.equal(noSsh.kind, 'no-ssh');
    assert.match(noSsh.message, /install OpenSSH/);

    const emptyKnown = join(work, 'known_empty');
    writeFileSync(emptyKnown, '');
    const unknownKey = await failure(
      connector(sshd.port, { sshOptions: [`IdentityFile=${sshd.clientKey}`, `UserKnownHostsFile=${emptyKnown}`, 'IdentitiesOnly=yes'] }),
    );
    assert.equal(unknownKey.kind, 'host-key');
    assert.match(unknownKey.message, /host key is not known/);
    assert.equal(readFileSync(emptyKnown, 'utf8'), '', 'nothing was accepted');

    const otherKey = join(work, 'otherkey');
    await new Promise((r) => spawn('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', otherKey]).once('exit', r));
    const auth = await failure(
      connector(sshd.port, {
        sshOptions: [`IdentityFile=${otherKey}`, 'IdentitiesOnly=yes', 'IdentityAgent=none', ...sshd.clientOptions.slice(2)],
      }),
    );
    assert.equal(auth.kind, 'auth');
    assert.match(auth.message, /ssh-add|IdentityFile/);

    // Without a shared connection: this fixture's ports share one runtime directory, so the fast
    // path would reach the daemon the other tests started there, with no Node needed.
    const unshared = [...sshd.clientOptions, 'ControlMaster=no'];
    const noNode = await failure(connector(sshd.noNodePort, { sshOptions: unshared }));
    assert.equal(noNode.kind, 'no-node');
    assert.match(noNode.message, /install Node\.js 20 or newer/);

    const oldNode = await failure(connector(sshd.oldNodePort, { sshOptions: unshared }));
    assert.equal(oldNode.kind, 'old-node');
    assert.match(oldNode.message, /v18\.19\.0 .* needs 20 or newer/);
  });
});

describe('ssh prompts reach the caller (askpass)', () => {
  /** The passphrase-protected key only (no agent): ssh must ask for its passphrase. */
  const lockedOptions = () => [
    `IdentityFile=${sshd.passphraseKey}`,
    'IdentitiesOnly=yes',
    'IdentityAgent=none',
    // Every attempt must log in: no connection shared with the one before (sshReuse.test.ts has those).
    'ControlMaster=no',
    ...sshd.clientOptions.slice(2),
  ];
  const ourAskpassDirs = () => readdirSync(privateDir()).filter((n) => n.startsWith(`${ASKPASS_DIR_PREFIX}${process.pid}-`));

  async function attempt(handler: AskpassHandler, sshOptions = lockedOptions(), attemptTimeoutMs = 20_000) {
    const asked: AskpassRequest[] = [];
    const c = connector(sshd.port, { sshOptions, askpass: (r, signal) => (asked.push(r), handler(r, signal)) });
    const t0 = Date.now();
    const result = await ExecServerClient.connect({ connector: c, deadlineMs: 0, attemptTimeoutMs }).then(
      (client) => ({ client }),
      (e: unknown) => ({ error: e }),
    );
    return { ...result, asked, ms: Date.now() - t0, c };
  }

  test('the passphrase prompt is answered: connected, and the socket is gone after', async () => {
    const r = await attempt(() => Promise.resolve(PASSPHRASE));
    assert.ok('client' in r, String((r as { error?: unknown }).error));
    try {
      assert.equal(r.asked.length, 1);
      assert.match(r.asked[0]!.prompt, new RegExp(`^Enter passphrase for key '${sshd.passphraseKey}':$`));
      assert.equal(r.asked[0]!.kind, '');
      const p = await r.client.startProcess({ argv: ['echo', 'unlocked'], cwd: '/tmp' });
      const out = gather(p);
      await p.completion;
      await out.until((t) => t === 'unlocked\n');
      assert.deepEqual(ourAskpassDirs(), [], 'the askpass directory is removed once connected');
    } finally {
      r.client.dispose();
    }
  });

  test('a wrong passphrase: one clear auth error (ssh asks its 3 times), no hang', async () => {
    const r = await attempt(() => Promise.resolve('not the passphrase'));
    const e = findSshError((r as { error?: unknown }).error);
    assert.ok(e, String((r as { error?: unknown }).error));
    assert.equal(e.kind, 'auth');
    assert.match(e.message, /the password or passphrase you entered was not accepted/);
    assert.equal(r.asked.length, 3);
    assert.ok(r.ms < 15_000, `${r.ms} ms`);
  });

  test('cancel: one clear error at once, no second prompt; a retry right after fails without asking', async () => {
    const r = await attempt(() => Promise.resolve(undefined));
    const e = findSshError((r as { error?: unknown }).error);
    assert.ok(e, String((r as { error?: unknown }).error));
    assert.equal(e.kind, 'auth');
    assert.match(e.message, /was cancelled \(ssh asked "Enter passphrase for key/);
    assert.equal(r.asked.length, 1);
    assert.ok(r.ms < 5_000, `${r.ms} ms`);
    // The same connector (a recovery's next attempt) does not ask again right away.
    await assert.rejects(r.c(new AbortController().signal), /was cancelled/);
    assert.equal(r.asked.length, 1);
    assert.deepEqual(ourAskpassDirs(), []);
  });

  test('a prompt nobody answers: the attempt times out, the prompt is withdrawn, ssh is gone', async () => {
    let withdrawn = false;
    const r = await attempt(
      (_req, signal) =>
        new Promise<undefined>((resolve) =>
          signal.addEventListener('abort', () => {
            withdrawn = true;
            resolve(undefined);
          }),
        ),
      lockedOptions(),
      3_000,
    );
    assert.ok('error' in r);
    assert.equal(r.asked.length, 1);
    assert.ok(withdrawn, 'the pending prompt was withdrawn');
    assert.ok(r.ms < 10_000, `${r.ms} ms`);
    await until(() => r.c.sshPid === undefined, 5_000, 'ssh to exit');
    assert.deepEqual(ourAskpassDirs(), []);
  });

  test('an unknown host key is never confirmed through the prompt: refused, Check Host Key… decides', async () => {
    const known = join(work, 'known_ask');
    writeFileSync(known, '');
    const opts = [`IdentityFile=${sshd.clientKey}`, 'IdentitiesOnly=yes', `UserKnownHostsFile=${known}`, 'StrictHostKeyChecking=ask'];
    const r = await attempt(() => Promise.resolve('yes'), opts);
    const e = findSshError((r as { error?: unknown }).error);
    assert.ok(e, String((r as { error?: unknown }).error));
    assert.equal(e.kind, 'host-key');
    assert.ok(isUnknownHostKey(e.message), e.message);
    assert.deepEqual(r.asked, [], 'the user was not asked to type yes');
    assert.equal(readFileSync(known, 'utf8'), '', 'nothing was accepted');
  });

  test('the askpass socket answers only the holder of its secret; the helper prints the answer', async () => {
    const asked: string[] = [];
    const session = await startAskpass({
      cliPath: CLI,
      handler: (r) => (asked.push(r.prompt), Promise.resolve('the answer')),
      onCancel: () => undefined,
    });
    try {
      // Without the secret: closed, nothing asked.
      const s = net.connect(session.socketPath);
      let got = '';
      s.setEncoding('utf8').on('data', (d: string) => (got += d));
      s.write(JSON.stringify({ secret: 'guess', prompt: 'Password:', kind: '' }) + '\n');
      await new Promise((r) => s.once('close', r));
      assert.equal(got, '');
      assert.deepEqual(asked, []);
      // The helper as ssh runs it: the prompt as its argument, socket and secret in the environment.
      // (Asynchronously: the socket's server is this process.)
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          session.env.SSH_ASKPASS!,
          ["root@127.0.0.1's password: "],
          { env: { ...process.env, ...session.env }, encoding: 'utf8', timeout: 15_000 },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      assert.equal(out, 'the answer\n');
      assert.deepEqual(asked, ["root@127.0.0.1's password:"]);
    } finally {
      session.close();
    }
    assert.equal(existsSync(session.socketPath), false);
  });
});

/**
 * The ssh process that carries our connection to this port: our own ssh child (a relay), or the
 * shared master of that destination (`ssh: <its ControlPath> [mux]`, detached from us).
 */
function connectionSsh(port: number): number[] {
  const share = shareDirFor('ssh', parseSshTarget(`root@127.0.0.1:${port}`), sshd.clientOptions);
  const master = typeof share === 'string' ? undefined : `ssh: ${share.ctl} [mux]`;
  return liveProcesses()
    .filter((p) => {
      const argv = procFile(p.pid, 'cmdline').split('\0');
      return (p.ppid === process.pid && argv.includes(String(port))) || (master !== undefined && argv[0] === master);
    })
    .map((p) => p.pid);
}

/** `SHA256:… (ED25519)` of a public key file. */
function fingerprintOf(pub: string): string {
  const f = execFileSync('ssh-keygen', ['-l', '-f', pub]).toString().trim().split(/\s+/);
  return `${f[1]} ${f.at(-1)}`;
}

function findSshError(e: unknown): SshConnectError | undefined {
  for (let x = e, i = 0; x && i < 5; x = (x as { cause?: unknown }).cause, i++) if (x instanceof SshConnectError) return x;
  return undefined;
}
