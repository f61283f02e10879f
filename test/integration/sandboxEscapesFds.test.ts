/**
 * Descriptors the server inherited (review finding F6): a descriptor without close-on-exec that the
 * server got from whoever started it (a shell's `exec 200</ws/.git`, a CI runner, the extension
 * host) was passed on by spawn and by bwrap into every sandboxed command, which wrote
 * `.git/hooks/pre-commit` through `/proc/self/fd/200`. The server here inherits a directory
 * descriptor on the workspace's `.git` as fd 200 and a writable file outside every writable root as
 * fd 201; sandboxed commands (pipes, a sandbox built ahead of time, a PTY) must not see either in
 * /proc/self/fd nor write through them. The per-user daemon, the other server entry, must not hold
 * them either. Real server, real bwrap, loopback only.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { within } from '../helpers/procs';
import { CLI, RawClient, type StartedServer } from '../helpers/rawClient';
import { startExecServer } from '../helpers/servers';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-inherited-fds-')));
const ws = join(base, 'ws');
const hook = join(ws, '.git', 'hooks', 'pre-commit');
const outside = join(base, 'outside.txt');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };
const DIR_FD = 200;
const FILE_FD = 201;

describe('descriptors the server inherited never reach a sandboxed command', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  let server: StartedServer;
  let client: RawClient;
  let dirFd: number;
  let fileFd: number;

  before(async () => {
    mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(outside, '');
    // Ours are close-on-exec (Node's); the server gets them as plain descriptors 200 and 201, as from a shell.
    dirFd = openSync(join(ws, '.git'), 'r');
    fileFd = openSync(outside, 'a');
    const inheritFds = { [DIR_FD]: dirFd, [FILE_FD]: fileFd };
    // The premise: a process started so holds both, across exec.
    const control = spawnSync('/bin/sh', ['-c', 'ls /proc/$$/fd'], { stdio: ['ignore', 'pipe', 'pipe', ...padTo(DIR_FD), dirFd, fileFd] });
    const held = fdsIn(control.stdout.toString());
    assert.ok(held.includes(DIR_FD) && held.includes(FILE_FD), `the descriptors cross exec: ${held.join(' ')}`);
    server = await startExecServer('ours', { env: { ...process.env, ...ENV }, inheritFds });
    client = (await RawClient.session(server.url)).client;
  });

  after(async () => {
    client?.close();
    await server?.stop();
    closeSync(dirFd);
    closeSync(fileFd);
    rmSync(base, { recursive: true, force: true });
  });

  const attack = [
    'ls /proc/$$/fd | tr "\\n" " "; echo',
    `(echo hook > /proc/self/fd/${DIR_FD}/hooks/pre-commit) 2>/dev/null && echo wrote-hook`,
    `(echo leaked >&${FILE_FD}) 2>/dev/null && echo wrote-file`,
    'exit 0',
  ].join('\n');

  for (const [label, tty, runs] of [
    ['pipes, then a sandbox built ahead of time', false, 2],
    ['a terminal (PTY)', true, 1],
  ] as const) {
    test(`${label}: neither descriptor is there, nothing is written through them`, async () => {
      for (let i = 0; i < runs; i++) {
        const processId = `attack-${tty}-${i}`;
        const r = await client.call('process/start', {
          processId,
          argv: ['/bin/sh', '-c', attack],
          cwd: pathToFileURL(ws).href,
          env: ENV,
          tty,
          arg0: null,
          sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        });
        assert.equal(r.error, undefined, JSON.stringify(r.error));
        const events = await client.processEvents(processId);
        assert.equal(events.find((m) => m.method === 'process/exited')!.params.exitCode, 0);
        const out = client.output(processId);
        const fds = fdsIn(out.split('\n')[0]!);
        assert.ok(fds.includes(0) && fds.includes(1), `the listing ran: ${out}`);
        assert.ok(!fds.includes(DIR_FD) && !fds.includes(FILE_FD), `an inherited descriptor is open in the sandbox: ${out}`);
        assert.doesNotMatch(out, /wrote-/);
        assert.equal(existsSync(hook), false, 'a hook was written through the inherited .git descriptor');
        assert.equal(readFileSync(outside, 'utf8'), '');
      }
    });
  }

  test('the daemon closes them too, before it serves', async () => {
    const daemon = spawn(process.execPath, [CLI, 'daemon', 'run', '--key', 'inherited-fds-test'], {
      env: { ...process.env, ...ENV, EXEC_BRIDGE_RUNTIME_DIR: join(base, 'run') },
      stdio: ['ignore', 'pipe', 'pipe', ...padTo(DIR_FD), dirFd, fileFd],
    });
    try {
      await within(
        new Promise<void>((resolve) => daemon.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve())),
        'the daemon to be ready',
        20_000,
      );
      const open = readdirSync(`/proc/${daemon.pid}/fd`).map(Number);
      assert.ok(!open.includes(DIR_FD) && !open.includes(FILE_FD), `the daemon holds an inherited descriptor: ${open.join(' ')}`);
    } finally {
      daemon.kill('SIGTERM');
      if (daemon.exitCode === null) await once(daemon, 'exit');
    }
  });
});

/** `ls` output as descriptor numbers, ascending. */
function fdsIn(text: string): number[] {
  return text
    .split(/\s+/)
    .filter((s) => /^\d+$/.test(s))
    .map(Number)
    .sort((a, b) => a - b);
}

/** 'ignore' for every descriptor from 3 up to `fd` (left closed in the child). */
function padTo(fd: number): 'ignore'[] {
  return Array.from({ length: fd - 3 }, () => 'ignore' as const);
}
