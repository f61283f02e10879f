/**
 * Helpers the server runs itself, taken from a folder a sandboxed command can write (review finding
 * F2): a server whose PATH starts with a workspace folder (an activated `.venv/bin`) looked up
 * `bwrap`, `mkfifo` and the watchdog's `pkill` there. A workspace-write command plants all three,
 * each a script that leaves a marker and then runs the real tool; the server started next (a
 * restarted daemon) probes bwrap, fills its FIFO pool, runs a sandboxed and a piped command, and is
 * SIGKILLed with a child, so that its watchdog kills it. No marker may appear: each one is a program
 * of the sandboxed command run outside the sandbox. Real server, real bwrap, loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { SYSTEM_DIRS } from '../../src/server/executables';
import { isAlive, until } from '../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-helper-path-')));
const ws = join(base, 'ws');
const venvBin = join(ws, '.venv', 'bin');
const markers = join(base, 'markers');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };
const PLANTED = ['bwrap', 'mkfifo', 'pkill'];
/** What the command plants: a marker, then the real tool (so nothing else would give it away). */
const PLANT = `#!/bin/sh
echo "$*" > '${markers}'/"\${0##*/}"
for d in ${SYSTEM_DIRS.join(' ')}; do [ -x "$d/\${0##*/}" ] && exec "$d/\${0##*/}" "$@"; done
exit 127
`;
/** The server's environment: an activated virtualenv of the workspace first on its PATH. */
const serverEnv = { ...process.env, PATH: `${venvBin}:${process.env.PATH ?? ENV.PATH}` };

describe('helpers the server runs itself are never taken from its PATH', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  const servers: StartedServer[] = [];
  after(async () => {
    for (const s of servers) await s.stop();
    rmSync(base, { recursive: true, force: true });
  });

  const start = (processId: string, script: string, extra: Record<string, unknown> = {}) =>
    startParams(processId, ['/bin/sh', '-c', script], { cwd: pathToFileURL(ws).href, env: ENV, ...extra });
  const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href });
  const exitOf = (events: Awaited<ReturnType<RawClient['processEvents']>>) => events.find((m) => m.method === 'process/exited')!.params;
  const run = async (client: RawClient, processId: string, script: string, extra: Record<string, unknown> = {}) => {
    const r = await client.call('process/start', start(processId, script, extra));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    return exitOf(await client.processEvents(processId));
  };

  test('a planted bwrap, mkfifo and pkill in a workspace folder on the PATH never run', async () => {
    mkdirSync(venvBin, { recursive: true });
    mkdirSync(markers);
    const first = await startServer('ours', [], serverEnv);
    servers.push(first);
    const a = (await RawClient.session(first.url)).client;
    const planted = await run(
      a,
      'plant',
      `for t in ${PLANTED.join(' ')}; do printf '%s' "$PLANT" > .venv/bin/$t && chmod 755 .venv/bin/$t || exit 1; done`,
      { sandbox, env: { ...ENV, PLANT } },
    );
    assert.equal(planted.exitCode, 0, a.output('plant'));
    for (const t of PLANTED) assert.ok(existsSync(join(venvBin, t)), `the sandbox may write ${t} into the workspace`);
    a.close();
    await first.stop();

    // The next server with the same PATH: its bwrap probe, its FIFO pool, a sandboxed and a piped start.
    const next = await startServer('ours', [], serverEnv);
    servers.push(next);
    const b = (await RawClient.session(next.url)).client;
    assert.equal((await run(b, 'sandboxed', 'echo inside', { sandbox })).exitCode, 0, next.stderr());
    assert.equal(b.output('sandboxed', 'stdout'), 'inside\n');
    // Its stdout is one of the pool's FIFOs, made by the system's mkfifo (socket stdio if none was).
    assert.equal((await run(b, 'piped', '[ -p /proc/self/fd/1 ] && echo fifo')).exitCode, 0);
    assert.equal(b.output('piped', 'stdout'), 'fifo\n');
    // A child left when the server is SIGKILLed: its watchdog kills it (with pkill where there is one).
    const r = await b.call('process/start', start('left', 'echo "pid=$$"; exec sleep 300'));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    await b.waitFor(() => /pid=\d+/.test(b.output('left')), 10_000, 'the child to print its pid');
    const pid = Number(/pid=(\d+)/.exec(b.output('left'))![1]);
    b.close();
    process.kill(next.child.pid!, 'SIGKILL'); // the server alone, not its process group
    await until(() => !isAlive(pid), 10_000, 'the child of the killed server to die');

    assert.deepEqual(readdirSync(markers), [], 'a planted helper ran outside the sandbox');
  });
});
