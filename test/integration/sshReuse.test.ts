/**
 * SSH connection sharing (issue 26 item 3) against a real OpenSSH server on 127.0.0.1: a run
 * within the persist time rides the master of the one before (sshd logs one login for all of
 * them) and reaches the daemon through a forward, no remote process started; the user's own
 * ControlPath (or ControlMaster=no) wins; a dead or stuck master never fails a run; no master
 * outlives its persist time; the sockets are ours only, and a sandboxed command cannot use them.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient } from '../../src/client';
import { REMOTE_PRIVATE_DIR_SH } from '../../src/client/sshBootstrap';
import { parseSshTarget, sshArgs, sshConnector, type SshProgress } from '../../src/client/sshConnector';
import { forwardPath, masterPidOf, readRecord, runSsh, shareDirFor, type ShareDir } from '../../src/client/sshShare';
import { privateDirCandidates } from '../../src/util/privateDir';
import { isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { copyBundle, NODE_PTY_DIR, startSshd, type Sshd } from '../helpers/sshd';

let sshd: Sshd;
const work = realpathSync(mkdtempSync(join(tmpdir(), 'eb-ssh-reuse-')));
const CLI = copyBundle(join(work, 'bundle'));
/** Every option set a test used: their masters are ended after. */
const used: string[][] = [];

before(async () => {
  sshd = await startSshd();
});
after(async () => {
  for (const o of used) {
    const share = shareOf(o);
    await runSsh(
      'ssh',
      sshArgs(parseSshTarget(target()), [...o, `ControlPath=${share.ctl}`], undefined, false, ['-O', 'exit']),
      process.env,
      10_000,
    );
    rmSync(share.dir, { recursive: true, force: true });
  }
  await sshd?.stop();
  rmSync(work, { recursive: true, force: true });
});

const target = () => `root@127.0.0.1:${sshd.port}`;

/** The client options plus `extra` (a ControlPersist of its own keeps each test's master apart). */
function options(...extra: string[]): string[] {
  const o = [...sshd.clientOptions, ...extra];
  used.push(o);
  return o;
}

function shareOf(o: string[]): ShareDir {
  const s = shareDirFor('ssh', parseSshTarget(target()), o);
  assert.ok(typeof s !== 'string', String(s));
  return s;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `exec-bridge run --verbose --ssh` to the test server (bounded). */
function run(o: string[], argv: string[] = ['true'], cliArgs: string[] = []): Promise<Run> {
  const args = [
    CLI,
    'run',
    '--verbose',
    '--ssh',
    target(),
    ...o.flatMap((x) => ['--ssh-option', x]),
    '--no-stdin',
    ...cliArgs,
    '--',
    ...argv,
  ];
  return new Promise((resolve) =>
    execFile(process.execPath, args, { encoding: 'utf8', timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    ),
  );
}

/** Logins sshd accepted so far. */
const logins = () => (sshd.log().match(/Accepted publickey/g) ?? []).length;

/** The pid of the master behind our control socket for `o`, as `ssh -O check` reports it. */
async function ourMaster(o: string[]): Promise<number | undefined> {
  const r = await runSsh(
    'ssh',
    sshArgs(parseSshTarget(target()), [...o, `ControlPath=${shareOf(o).ctl}`], undefined, false, ['-O', 'check']),
    process.env,
    10_000,
  );
  return masterPidOf(r);
}

const FORWARD = /reached the daemon \(pid \d+\) through (the shared connection's forward|a forward on the shared connection)/;

describe('ssh connection sharing', () => {
  test('runs within the persist time share one login; the second reaches the daemon through a forward, the third with no ssh at all', async () => {
    const o = options('ControlPersist=45');
    const first = await run(o, ['echo', 'one']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, 'one\n');
    const afterFirst = logins();
    const master = await ourMaster(o);
    assert.ok(master && isAlive(master), 'a master runs after the first run');

    const second = await run(o, ['echo', 'two']);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, 'two\n');
    assert.match(second.stderr, /through a forward on the shared connection/);
    const third = await run(o, ['sh', '-c', 'exit 3']);
    assert.equal(third.code, 3, third.stderr);
    assert.match(third.stderr, /through the shared connection's forward/);
    assert.doesNotMatch(third.stderr, /connecting \(version/, 'the third run started no ssh');
    assert.equal(logins(), afterFirst, 'one login for all three runs (sshd log)');
    assert.equal(await ourMaster(o), master, 'the same master');
  });

  test("the user's own ControlPath wins: their master carries the runs and ours is never made; ControlMaster=no turns sharing off", async () => {
    const theirs = join(work, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    const o = options(`ControlPath=${theirs}/cm-%C`, 'ControlMaster=auto', 'ControlPersist=20');
    const before = logins();
    for (const word of ['a', 'b']) {
      const r = await run(o, ['echo', word]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${word}\n`);
      assert.match(r.stderr, word === 'a' ? /your shared connection/ : FORWARD);
    }
    assert.equal(logins(), before + 1, 'one login for both runs');
    assert.equal(readdirSync(theirs).filter((n) => n.startsWith('cm-')).length, 1, 'their control socket');
    assert.equal(existsSync(shareOf(o).ctl), false, 'ours was never made');
    const check = await runSsh('ssh', sshArgs(parseSshTarget(target()), o, undefined, false, ['-O', 'exit']), process.env, 10_000);
    assert.match(check.stderr, /Exit request sent/);

    const off = options('ControlMaster=no');
    const before2 = logins();
    for (let i = 0; i < 2; i++) {
      const r = await run(off);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /no shared connection: the ssh options turn connection sharing off/);
    }
    assert.equal(logins(), before2 + 2, 'each run logs in');
    assert.equal(existsSync(shareOf(off).ctl), false);
  });

  test('a master killed with -9 leaves stale sockets behind: the next run succeeds and makes a new master', async () => {
    const o = options('ControlPersist=40');
    for (let i = 0; i < 2; i++) assert.equal((await run(o)).code, 0);
    const share = shareOf(o);
    const record = readRecord(share, readRecordKey(share));
    assert.ok(record, 'the daemon is recorded');
    const fwd = forwardPath(share, record.socket);
    const master = await ourMaster(o);
    assert.ok(master);
    process.kill(master, 'SIGKILL');
    await until(() => !isAlive(master), 10_000, 'the master to die');
    assert.ok(existsSync(share.ctl) && existsSync(fwd), 'both sockets are left behind');
    const r = await run(o, ['echo', 'after']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'after\n');
    assert.match(r.stderr, /did not answer \(its master is gone\)/);
    const next = await ourMaster(o);
    assert.ok(next && next !== master, 'a new master');
  });

  test('a stuck master (stopped): the run goes around it once with a log line; the next run has a fresh master', async () => {
    const o = options('ControlPersist=50');
    for (let i = 0; i < 2; i++) assert.equal((await run(o)).code, 0);
    const master = await ourMaster(o);
    assert.ok(master);
    process.kill(master, 'SIGSTOP');
    try {
      const r = await run(o, ['echo', 'around']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'around\n');
      assert.match(r.stderr, /the shared connection \(.*\) did not answer within \d+ ms: connecting without it this once/);
    } finally {
      process.kill(master, 'SIGKILL');
      process.kill(master, 'SIGCONT');
    }
    await until(() => !isAlive(master), 10_000, 'the stopped master to go');
    const next = await run(o, ['echo', 'fresh']);
    assert.equal(next.code, 0, next.stderr);
    const fresh = await ourMaster(o);
    assert.ok(fresh && fresh !== master);
  });

  test('no master outlives its persist time (ControlPersist=2)', async () => {
    const o = options('ControlPersist=2');
    const r = await run(o);
    assert.equal(r.code, 0, r.stderr);
    const master = await ourMaster(o);
    assert.ok(master, 'a master after the run');
    await until(() => !isAlive(master), 30_000, 'the master to exit after its persist time');
    const ctl = shareOf(o).ctl;
    assert.equal(existsSync(ctl), false, 'its control socket is gone');
    assert.deepEqual(
      liveProcesses().filter((p) => procFile(p.pid, 'cmdline').startsWith(`ssh: ${ctl}`)),
      [],
      'no master process of this destination',
    );
  });

  test('the control socket, the forward and the daemon record are ours only (0700 folder, 0600 files) in the private directory', async () => {
    const o = options('ControlPersist=30');
    for (let i = 0; i < 2; i++) assert.equal((await run(o)).code, 0);
    const share = shareOf(o);
    assert.ok(share.dir.startsWith(privateDirCandidates()[0]! + '/'), share.dir);
    const record = readRecord(share, readRecordKey(share))!;
    const mode = (p: string) => lstatSync(p).mode & 0o777;
    assert.equal(mode(share.dir), 0o700);
    assert.ok(lstatSync(share.ctl).isSocket());
    assert.equal(mode(share.ctl), 0o600);
    const fwd = forwardPath(share, record.socket);
    assert.ok(lstatSync(fwd).isSocket());
    assert.equal(mode(fwd), 0o600);
    for (const n of readdirSync(share.dir).filter((x) => x.endsWith('.json'))) assert.equal(mode(join(share.dir, n)), 0o600, n);
  });

  test('a sandboxed command cannot use the shared connection: neither its control socket nor the forward to the daemon (network on or off)', async () => {
    const o = options('ControlPersist=55');
    for (let i = 0; i < 2; i++) assert.equal((await run(o)).code, 0);
    const share = shareOf(o);
    const record = readRecord(share, readRecordKey(share))!;
    const fwd = forwardPath(share, record.socket);
    assert.ok(await ourMaster(o), 'the master runs');
    // Outside /tmp: workspace-write shares /tmp.
    const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'eb-ssh-reuse-attack-')));
    const ws = join(base, 'ws');
    mkdirSync(ws);
    try {
      // Through the master a command runs on the "remote" without logging in; this ssh itself
      // cannot log in (no key), so only a reachable control socket lets it touch the marker.
      const attack = (mark: string) =>
        [
          `ssh -o ControlPath=${share.ctl} -o ControlMaster=no -o BatchMode=yes -o IdentityFile=/dev/null -o IdentitiesOnly=yes`,
          `-o IdentityAgent=none -o HostKeyAlias=eb-test-sshd -o UserKnownHostsFile=${sshd.knownHosts} -o StrictHostKeyChecking=yes`,
          `-o ConnectTimeout=5 -p ${sshd.port} root@127.0.0.1 touch ${mark}; echo ssh=$?;`,
          `${process.execPath} -e "require('net').connect('${fwd}').on('connect', () => { console.log('FORWARD-CONNECTED'); process.exit(0); }).on('error', (e) => console.log(e.code))"`,
        ].join(' ');
      for (const network of [false, true]) {
        const mark = join(base, `pwned-${network}`);
        const r = spawnSync(
          process.execPath,
          [
            CLI,
            'run',
            '--bundled',
            '--sandbox',
            'workspace-write',
            ...(network ? ['--sandbox-network'] : []),
            '--cwd',
            ws,
            '--',
            'sh',
            '-c',
            attack(mark),
          ],
          { encoding: 'utf8', timeout: 60_000 },
        );
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /ssh=255/, r.stdout);
        assert.doesNotMatch(r.stdout, /FORWARD-CONNECTED/, `network ${network}: the sandbox reached ${fwd}`);
        assert.equal(existsSync(mark), false, `network ${network}: a command ran through the control socket`);
      }
      // Unsandboxed, the same attack works: the test can fail.
      const mark = join(base, 'pwned-open');
      const r = spawnSync(process.execPath, [CLI, 'run', '--bundled', '--cwd', ws, '--', 'sh', '-c', attack(mark)], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /ssh=0/);
      assert.match(r.stdout, /FORWARD-CONNECTED/);
      assert.ok(existsSync(mark), 'the unsandboxed attack ran on the remote');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  test("the extension's first connect (a new connector, no master, the daemon up): one ssh, a forward, the remote's Node from its daemon", async () => {
    const o = options('ControlPersist=35');
    assert.equal((await run(o)).code, 0);
    const share = shareOf(o);
    const r0 = await runSsh(
      'ssh',
      sshArgs(parseSshTarget(target()), [...o, `ControlPath=${share.ctl}`], undefined, false, ['-O', 'exit']),
      process.env,
      10_000,
    );
    assert.match(r0.stderr, /Exit request sent/);
    await until(async () => !(await ourMaster(o)), 10_000, 'the master to exit');
    const steps: SshProgress['step'][] = [];
    const logs: string[] = [];
    const c = sshConnector({
      target: target(),
      sshOptions: o,
      cliPath: CLI,
      nodePtyDir: NODE_PTY_DIR,
      progress: (p) => steps.push(p.step),
      log: (l) => logs.push(l),
    });
    const client = await ExecServerClient.connect({ connector: c, attemptTimeoutMs: 30_000 });
    try {
      assert.deepEqual(steps, ['connecting', 'starting', 'ready']);
      assert.match(logs.join('\n'), /through a forward on the shared connection/);
      assert.match(c.remote!.platform, /^Linux /);
      assert.match(c.remote!.nodeVersion, /^v\d+\./);
      assert.equal(c.remote!.installed, false);
      const master = await ourMaster(o);
      assert.ok(master);
      await until(() => c.sshPid === master, 10_000, 'sshPid to name the master that carries the connection');
      const p = await client.startProcess({ argv: ['echo', 'extension'], cwd: '/tmp' });
      let out = '';
      p.onEvent((e) => {
        if (e.type === 'output') out += Buffer.from(e.data).toString();
      });
      await p.completion;
      await until(() => out === 'extension\n', 10_000, 'the output');
    } finally {
      client.dispose();
    }
  });

  test("the remote's private directory as the fast path's sh finds it is the one Node uses", () => {
    const priv = mkdtempSync(join(work, 'xdg-'));
    const open = mkdtempSync(join(work, 'xdg-open-'));
    spawnSync('chmod', ['755', open]);
    const cases: NodeJS.ProcessEnv[] = [
      {},
      { XDG_RUNTIME_DIR: priv },
      { XDG_RUNTIME_DIR: open },
      { XDG_RUNTIME_DIR: 'relative/dir' },
      { EXEC_BRIDGE_RUNTIME_DIR: join(work, 'rt') },
      { EXEC_BRIDGE_RUNTIME_DIR: 'relative', XDG_RUNTIME_DIR: priv },
    ];
    for (const extra of cases) {
      const env = { PATH: process.env.PATH, ...extra };
      const sh = spawnSync('/bin/sh', ['-c', `${REMOTE_PRIVATE_DIR_SH.join('; ')}; printf %s "$r"`], { env, encoding: 'utf8' });
      assert.equal(sh.stdout, privateDirCandidates(env)[0], JSON.stringify(extra));
    }
  });
});

/** The version key of the one daemon record in a share folder. */
function readRecordKey(share: ShareDir): string {
  for (const n of readdirSync(share.dir)) {
    if (!n.endsWith('.json')) continue;
    const key = (JSON.parse(readFileSync(join(share.dir, n), 'utf8')) as { key: string }).key;
    if (readRecord(share, key)) return key;
  }
  assert.fail(`no daemon record in ${share.dir}`);
}
