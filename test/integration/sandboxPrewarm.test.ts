/**
 * Sandboxes built ahead of time (src/server/prewarm.ts) through our exec-server over the wire:
 * the next start with the same policy runs in the waiting sandbox; it behaves exactly like one
 * built on the spot (argv, environment, cwd, arg0, stdin, exit codes, denials, the seccomp filter);
 * a workspace made anew never meets a sandbox built before; waiting sandboxes expire and die with
 * the server. Linux with bubblewrap.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { collectTree, listProcesses } from '../../src/server/processTree';
import { PREWARM_STUB } from '../../src/server/sandbox';
import { isAlive, until } from '../helpers/procs';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-prewarm-')));
const ws = join(base, 'ws');
const outside = join(base, 'outside');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };
const readOnly = () => sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) });
const workspaceWrite = () => sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return [];
  }
}

/**
 * Waiting sandboxes under `serverPid`: their stub (`/bin/sh -s exec-bridge-prewarm`), the outer
 * bwrap, and the directory it was built for (its `--chdir`).
 */
function waiting(serverPid: number): Array<{ stub: number; bwrap: number; cwd: string | undefined }> {
  const procs = listProcesses();
  const parent = new Map(procs.map((p) => [p.pid, p.ppid]));
  const out: Array<{ stub: number; bwrap: number; cwd: string | undefined }> = [];
  for (const pid of collectTree(serverPid, procs)) {
    if (cmdline(pid).join(' ') !== PREWARM_STUB.join(' ')) continue;
    // stub → bwrap (PID 1 of the sandbox) → bwrap (the server's child)
    let top = pid;
    while (parent.get(top) !== undefined && parent.get(top) !== serverPid) top = parent.get(top)!;
    const args = cmdline(top);
    out.push({ stub: pid, bwrap: top, cwd: args[args.indexOf('--chdir') + 1] });
  }
  return out;
}

interface Run {
  stdout: string;
  stderr: string;
  exitCode: number;
  sandboxDenied: boolean;
}

let counter = 0;
async function run(client: RawClient, argv: string[], sandbox: unknown, extra: Record<string, unknown> = {}): Promise<Run> {
  const processId = `p${++counter}`;
  const res = await client.call('process/start', { processId, argv, cwd: uri(ws), env: ENV, tty: false, arg0: null, sandbox, ...extra });
  assert.equal(res.error, undefined, JSON.stringify(res.error));
  const exited = (await client.processEvents(processId)).find((m) => m.method === 'process/exited')!;
  return {
    stdout: client.output(processId, 'stdout'),
    stderr: client.output(processId, 'stderr'),
    exitCode: exited.params.exitCode,
    sandboxDenied: exited.params.sandboxDenied,
  };
}

describe('sandboxes built ahead of time', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let warm: StartedServer;
  let cold: StartedServer;
  let wc: RawClient;
  let cc: RawClient;

  before(async () => {
    mkdirSync(ws, { recursive: true });
    mkdirSync(outside, { recursive: true });
    [warm, cold] = await Promise.all([startServer('ours', ['--verbose']), startServer('ours', ['--sandbox-prewarm-ms', '0'])]);
    wc = (await RawClient.session(warm.url)).client;
    cc = (await RawClient.session(cold.url)).client;
  });

  after(async () => {
    wc?.close();
    cc?.close();
    await Promise.all([warm?.stop(), cold?.stop()]);
    rmSync(base, { recursive: true, force: true });
  });

  /**
   * A start like this one (any argv) on the warm server, then until the sandbox it prepares is
   * ready (its stub runs only once bwrap has made every mount). Each caller uses its own cwd, so
   * the sandbox found is the one for this plan.
   */
  async function prime(sandbox: unknown, extra: Record<string, unknown>): Promise<{ stub: number; bwrap: number }> {
    const dir = fileURLToPath(extra.cwd as string);
    await run(wc, ['/bin/true'], sandbox, extra);
    let found: { stub: number; bwrap: number } | undefined;
    await until(
      () => (found = waiting(warm.child.pid!).find((w) => w.cwd === dir)) !== undefined,
      10_000,
      `a sandbox ready for ${dir}`,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; waiting: ${JSON.stringify(waiting(warm.child.pid!))}\n${warm.stderr().slice(-1500)}`);
    });
    return found!;
  }

  /**
   * The waiting sandbox `bwrap` was thrown away as stale (its log line), never run in. A server that
   * another suite started meanwhile can make it go for that reason first ("does not cover": its
   * covers are checked before the host fingerprint; CI c27): thrown away all the same.
   */
  async function discardedUnused(bwrap: number): Promise<void> {
    const reasons = [
      `the waiting sandbox (pid ${bwrap}) predates a change on the host`,
      `the waiting sandbox (pid ${bwrap}) does not cover`,
    ];
    await until(() => reasons.some((r) => warm.stderr().includes(r)), 5000, 'the stale sandbox discarded').catch((e: Error) => {
      throw new Error(`${e.message}\n${warm.stderr().slice(-2500)}`);
    });
    assert.equal(warm.stderr().includes(`running in the waiting sandbox (pid ${bwrap})`), false);
  }

  /**
   * Runs on the warm server in a sandbox built ahead of time (and checks that it was). A server
   * that another suite starts meanwhile makes a private directory the waiting sandbox does not
   * hide, so the start is built on the spot instead (sandboxPrewarmCovers.test.ts): then once more,
   * at most three times.
   */
  async function runWarm(argv: string[], sandbox: unknown, extra: Record<string, unknown>): Promise<Run> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const w = await prime(sandbox, extra);
      const r = await run(wc, argv, sandbox, extra);
      const ran = `running in the waiting sandbox (pid ${w.bwrap})`;
      const passedOver = `the waiting sandbox (pid ${w.bwrap}) does not cover`;
      // The log line travels on the server's stderr, the result over the WebSocket: either may come first.
      await until(() => warm.stderr().includes(ran) || warm.stderr().includes(passedOver), 5000, 'the log line').catch(() => undefined);
      if (warm.stderr().includes(ran)) return r;
      if (!warm.stderr().includes(passedOver)) break;
    }
    assert.fail(`the start did not run in the waiting sandbox:\n${warm.stderr().slice(-2000)}`);
  }

  /** A fresh directory in the workspace (a plan of its own: the sandbox's --chdir). */
  let dirs = 0;
  function freshDir(parent = ws): string {
    const d = join(parent, `d${++dirs}`);
    mkdirSync(d, { recursive: true });
    return d;
  }

  test('the next start with the same policy runs in the sandbox that was waiting for it, stdin included', async () => {
    const serverPid = warm.child.pid!;
    const sandbox = workspaceWrite();
    await run(wc, ['/bin/true'], sandbox, { pipeStdin: true });
    await until(() => waiting(serverPid).length === 1, 10_000, 'one waiting sandbox');
    const [w] = waiting(serverPid);
    await wc.call('process/start', {
      processId: 'held',
      argv: ['/bin/sh', '-c', 'read line; echo "got $line"; exec sleep 29.125'],
      cwd: uri(ws),
      env: ENV,
      tty: false,
      arg0: null,
      sandbox,
      pipeStdin: true,
    });
    await wc.call('process/write', { processId: 'held', chunk: Buffer.from('hello\n').toString('base64'), writeId: 'w1' });
    await wc.waitFor((m) => m.method === 'process/output' && m.params.processId === 'held', 10_000, 'output of held');
    await until(() => wc.output('held', 'stdout') === 'got hello\n', 5000, 'got hello');
    // The command now lives inside the bwrap that was waiting before the start.
    await until(
      () => collectTree(w!.bwrap).some((pid) => cmdline(pid).join(' ') === 'sleep 29.125'),
      5000,
      'sleep inside the pre-started sandbox',
    );
    await wc.call('process/terminate', { processId: 'held' });
    await wc.processEvents('held');
    assert.equal(isAlive(w!.bwrap), false);
  });

  test('a command behaves the same in a pre-started sandbox and in one built on the spot', async () => {
    const cases: Array<{
      name: string;
      argv: string[];
      sandbox: () => unknown;
      extra?: Record<string, unknown>;
      expect?: (r: Run) => void;
    }> = [
      {
        name: 'argv with quotes, newlines, globs, empty and non-ASCII words',
        argv: ['/usr/bin/printf', '[%s]', 'a b', "it's", 'x\ny', '$HOME', '`id`', '*', '', 'ünï', '-i', '--', 'A=B'],
        sandbox: readOnly,
        expect: (r) => assert.equal(r.stdout, "[a b][it's][x\ny][$HOME][`id`][*][][ünï][-i][--][A=B]"),
      },
      {
        name: 'exactly the given environment (odd names, multi-line values) plus PWD, as bwrap --chdir sets it',
        argv: ['/usr/bin/env'],
        sandbox: readOnly,
        extra: { env: { PATH: ENV.PATH, 'WEIRD-NAME.x': 'v', MULTI: 'l1\nl2', Q: `'"$\\`, '-dash': '1', EMPTY: '' } },
        expect: (r) =>
          assert.deepEqual(
            r.stdout.split('\n').filter(Boolean).sort(),
            ['-dash=1', 'EMPTY=', 'MULTI=l1', 'PATH=' + ENV.PATH, 'PWD=<cwd>', `Q='"$\\`, 'WEIRD-NAME.x=v', 'l2'].sort(),
          ),
      },
      { name: 'cwd', argv: ['/bin/pwd'], sandbox: readOnly, expect: (r) => assert.equal(r.stdout, '<cwd>\n') },
      {
        name: 'arg0',
        argv: ['sh', '-c', 'echo "$0"'],
        sandbox: readOnly,
        extra: { arg0: 'custom-zero' },
        expect: (r) => assert.equal(r.stdout, 'custom-zero\n'),
      },
      {
        name: 'exit code',
        argv: ['/bin/sh', '-c', 'echo out; echo err >&2; exit 7'],
        sandbox: readOnly,
        expect: (r) => assert.deepEqual([r.stdout, r.stderr, r.exitCode], ['out\n', 'err\n', 7]),
      },
      {
        name: 'a denied write',
        argv: ['/bin/sh', '-c', `touch ${outside}/denied`],
        sandbox: workspaceWrite,
        expect: (r) => assert.deepEqual([r.exitCode, r.sandboxDenied], [1, true]),
      },
      {
        name: 'the network-off seccomp filter',
        argv: [
          process.execPath,
          '-e',
          "require('net').connect(9, '127.0.0.1').on('error', (e) => { console.log(e.code); process.exit(3); })",
        ],
        sandbox: readOnly,
        expect: (r) => assert.deepEqual([r.stdout, r.exitCode], ['EPERM\n', 3]),
      },
      {
        name: 'no fd beyond stdio leaks into the command',
        argv: ['/bin/ls', '/proc/self/fd'],
        sandbox: workspaceWrite,
        expect: (r) =>
          assert.deepEqual(
            r.stdout
              .split('\n')
              .filter(Boolean)
              .map(Number)
              .filter((fd) => fd > 2 && fd < 100),
            [3],
          ), // 3: ls's own directory fd
      },
    ];
    for (const c of cases) {
      const extra = { cwd: uri(ws), ...c.extra };
      const onTheSpot = await run(cc, c.argv, c.sandbox(), extra);
      const preStarted = await runWarm(c.argv, c.sandbox(), { ...extra, cwd: uri(freshDir()) });
      // The same except for the directory each ran in.
      onTheSpot.stdout = onTheSpot.stdout.replaceAll(ws, '<cwd>');
      preStarted.stdout = preStarted.stdout.replace(new RegExp(`${ws}/d\\d+`, 'g'), '<cwd>');
      assert.deepEqual(preStarted, onTheSpot, `${c.name}: pre-started and on-the-spot runs differ`);
      c.expect?.(preStarted);
    }
  });

  test('a workspace deleted and made again never meets a sandbox built for the old one', async () => {
    const dir = freshDir();
    const stale = await prime(workspaceWrite(), { cwd: uri(dir) });
    rmSync(ws, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const r = await run(wc, ['/bin/sh', '-c', 'echo fresh > made.txt'], workspaceWrite(), { cwd: uri(dir) });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(readFileSync(join(dir, 'made.txt'), 'utf8'), 'fresh\n');
    await discardedUnused(stale.bwrap);
    await until(() => !isAlive(stale.bwrap), 5000, 'the stale sandbox torn down');
  });

  test('a working directory deleted and made again inside a workspace that stays never meets a sandbox built in the old one', async () => {
    // The workspace (the writable root) is untouched; only the folder the command runs in is new,
    // as after `rm -rf build && mkdir build`. The waiting sandbox's shell sits in the old one.
    const dir = freshDir();
    const stale = await prime(workspaceWrite(), { cwd: uri(dir) });
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    const r = await run(wc, ['/bin/sh', '-c', 'echo fresh > made.txt'], workspaceWrite(), { cwd: uri(dir) });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(readFileSync(join(dir, 'made.txt'), 'utf8'), 'fresh\n');
    await discardedUnused(stale.bwrap);
  });

  test('attack: a placeholder removed on the host while a sandbox waits never lets the next command make the protected path', async () => {
    // The .codex stub removed from outside (the user, an unsandboxed command) detaches the read-only
    // mount on it inside the waiting sandbox: run there, this wrote .codex/config.toml on the host.
    const dir = freshDir();
    const stale = await prime(workspaceWrite(), { cwd: uri(dir) });
    assert.equal(existsSync(join(ws, '.codex')), true, 'the placeholder is there while the sandbox waits');
    rmSync(join(ws, '.codex'), { recursive: true, force: true });
    const config = join(ws, '.codex', 'config.toml');
    const r = await run(wc, ['/bin/sh', '-c', `mkdir -p '${ws}/.codex' && echo pwned > '${config}'`], workspaceWrite(), { cwd: uri(dir) });
    assert.equal(existsSync(config), false, `the sandboxed command wrote ${config}: ${JSON.stringify(r)}`);
    assert.notEqual(r.exitCode, 0, 'the protected path is read-only in the sandbox');
    await discardedUnused(stale.bwrap);
  });

  test('a waiting sandbox that holds placeholder directories in the workspace lets them go within seconds', async () => {
    // workspace-write in a folder without .codex: the waiting sandbox keeps a .codex stub on the host.
    const dir = freshDir();
    const w = await prime(workspaceWrite(), { cwd: uri(dir) });
    assert.equal(existsSync(join(ws, '.codex')), true, 'the placeholder exists while the sandbox waits');
    await until(() => !isAlive(w.bwrap), 9000, 'the waiting sandbox torn down after ~5 s (not the 30 s default)').catch((e: Error) =>
      assert.fail(`${e.message}\n${warm.stderr().slice(-1500)}`),
    );
    await until(() => !existsSync(join(ws, '.codex')), 2000, 'the placeholder removed');
  });

  test('waiting sandboxes expire, are never built when turned off, and die with the server', async () => {
    assert.equal(waiting(cold.child.pid!).length, 0, 'the server started with --sandbox-prewarm-ms 0 built one');
    const short = await startServer('ours', ['--sandbox-prewarm-ms', '1000']);
    const client = (await RawClient.session(short.url)).client;
    try {
      await run(client, ['/bin/true'], readOnly());
      // Taken from the probe that saw it: on a busy machine it may expire before a second look.
      const first = await until(() => waiting(short.child.pid!)[0], 10_000, 'a waiting sandbox');
      await until(() => !isAlive(first.bwrap), 10_000, 'the idle sandbox expired');
      await run(client, ['/bin/true'], workspaceWrite());
      const second = await until(() => waiting(short.child.pid!)[0], 10_000, 'another waiting sandbox');
      client.close();
      await short.stop();
      await until(() => !isAlive(second.bwrap) && !isAlive(second.stub), 5000, 'the waiting sandbox died with the server');
    } finally {
      client.close();
      await short.stop();
    }
  });
});
