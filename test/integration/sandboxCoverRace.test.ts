/**
 * Another server's private directory removed while a sandbox is being built (issue 25, the CI
 * failure of stop 31): a sandbox covers it with `--ro-bind-try <dir>/.exec-bridge-cover <dir>`, and
 * a directory that vanishes between bwrap's look and its mount fails the start with bwrap's own
 * "Can't bind mount …: No such file or directory" before the command runs. Such a start is run
 * again with the covers read afresh, with the stdin it was given, and shows nothing of the failed
 * attempt. bwrap itself cannot be stopped between two system calls, so a script in front of the
 * real bwrap (`serve --bwrap-path`) does what the race does, once: it removes the directory and
 * fails as bwrap does then. Every other start goes to the real bwrap. Real server, loopback only.
 * The same for a directory hidden under a tmpfs (no cover: an older version's), which bwrap fails
 * on with "Can't remount readonly …" (CI c22), and which may be there again when the failure is
 * judged, made by another bwrap (stop 35's CI).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { findBwrap } from '../../src/server/sandbox/bwrapProbe';
import { COVER_NAME, privateDir } from '../../src/util/privateDir';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-cover-race-')));
const ws = join(base, 'ws');
/** Two other servers' private directories: this test process registers them (it lives as long as the test). */
const vanishing = join(base, 'other-vanishing');
const staying = join(base, 'other-staying');
/** Another process's directory without a cover (its server is older): hidden under a tmpfs. */
const uncovered = join(base, 'other-uncovered');
const fired = join(base, 'fired');
const firedTmpfs = join(base, 'fired-tmpfs');
const wrapper = join(base, 'bwrap');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe(
  'a sandbox whose cover vanishes under bwrap',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let server: StartedServer;
    let client: RawClient;

    before(async () => {
      mkdirSync(ws);
      for (const d of [vanishing, staying]) {
        privateDir({ EXEC_BRIDGE_RUNTIME_DIR: d }); // registered (for this process) and made, with its cover
        assert.ok(existsSync(join(d, COVER_NAME)));
      }
      privateDir({ EXEC_BRIDGE_RUNTIME_DIR: uncovered });
      rmSync(join(uncovered, COVER_NAME), { recursive: true });
      // The first sandbox that covers `vanishing` meets the race: the directory goes, and bwrap's
      // message comes in its three writes, then its exit status.
      writeFileSync(
        wrapper,
        `#!/bin/sh
case " $* " in
*" ${vanishing}/${COVER_NAME} "*)
  if mkdir '${fired}' 2>/dev/null; then
    rm -rf '${vanishing}'
    printf 'bwrap: ' >&2
    printf "Can't bind mount /oldroot%s/${COVER_NAME} on /newroot%s" '${vanishing}' '${vanishing}' >&2
    printf ': No such file or directory\\n' >&2
    exit 1
  fi;;
esac
# Likewise the first start of the test below, whose sandbox hides \`uncovered\` under a tmpfs: bwrap's message when the
# directory went between its tmpfs and its remount (CI c22). By the time the server judges it, another bwrap building a
# sandbox with the old plan has made the directory again (bwrap makes a missing mount point where /tmp is writable):
# stop 35's CI. \`-p\`: one may have done so already here (CI c29).
case " $* " in
*" --tmpfs ${uncovered} "*runs-tmpfs*)
  if mkdir '${firedTmpfs}' 2>/dev/null; then
    rm -rf '${uncovered}'
    mkdir -p '${uncovered}'
    printf 'bwrap: ' >&2
    printf 'Can'"'"'t remount readonly on /newroot%s: Unable to remount destination "/newroot%s" with correct flags' '${uncovered}' '${uncovered}' >&2
    printf ': No such file or directory\n' >&2
    exit 1
  fi;;
esac
exec '${findBwrap()}' "$@"
`,
      );
      chmodSync(wrapper, 0o755);
      server = await startServer('ours', ['--bwrap-path', wrapper], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: join(base, 'runtime') });
      client = (await RawClient.session(server.url)).client;
    });

    after(async () => {
      client?.close();
      await server?.stop();
      rmSync(base, { recursive: true, force: true });
    });

    const start = (processId: string, script: string, extra: Record<string, unknown> = {}) => ({
      processId,
      argv: ['/bin/sh', '-c', script],
      cwd: pathToFileURL(ws).href,
      env: ENV,
      tty: false,
      arg0: null,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      ...extra,
    });
    const exitOf = (events: Awaited<ReturnType<RawClient['processEvents']>>) => events.find((m) => m.method === 'process/exited')!.params;

    test('runs again with the stdin it was given, and shows nothing of the failed attempt', async () => {
      const r = await client.call('process/start', start('raced', 'head -c 6; echo; echo on-stderr >&2; exit 3', { pipeStdin: true }));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      // Written at once: to the failed attempt, while it is judged, or to the new one.
      const w = await client.call('process/write', { processId: 'raced', chunk: b64('hello\n'), writeId: 'w1' });
      assert.equal(w.error, undefined, JSON.stringify(w.error));
      const events = await client.processEvents('raced');
      assert.ok(existsSync(fired), 'the race was met');
      assert.equal(existsSync(vanishing), false);
      assert.equal(client.output('raced', 'stdout'), 'hello\n\n');
      assert.equal(client.output('raced', 'stderr'), 'on-stderr\n');
      assert.equal(exitOf(events).exitCode, 3);
      assert.equal(exitOf(events).sandboxDenied, false);
    });

    test("another process's directory hidden under a tmpfs that vanishes under bwrap: run again, nothing of it shown", async () => {
      const r = await client.call('process/start', start('raced-tmpfs', 'echo ran >> runs-tmpfs; echo done'));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const events = await client.processEvents('raced-tmpfs');
      assert.ok(existsSync(firedTmpfs), 'the race was met');
      assert.equal(client.output('raced-tmpfs', 'stderr'), '');
      assert.equal(client.output('raced-tmpfs', 'stdout'), 'done\n');
      assert.equal(readFileSync(join(ws, 'runs-tmpfs'), 'utf8'), 'ran\n');
      assert.equal(exitOf(events).exitCode, 0);
    });

    test('a command that prints that line itself is run once, and its output shown', async () => {
      // It names a covered directory that is still there: nothing vanished under bwrap.
      const line = `bwrap: Can't bind mount /oldroot${staying}/${COVER_NAME} on /newroot${staying}: No such file or directory`;
      const events = await (async () => {
        const r = await client.call('process/start', start('forged', `echo ran >> runs; printf '%s\\n' "${line}" >&2; exit 1`));
        assert.equal(r.error, undefined, JSON.stringify(r.error));
        return client.processEvents('forged');
      })();
      assert.equal(readFileSync(join(ws, 'runs'), 'utf8'), 'ran\n');
      assert.equal(client.output('forged', 'stderr'), `${line}\n`);
      assert.equal(exitOf(events).exitCode, 1);
    });

    test("stderr that starts like bwrap but is the command's own comes out whole and in order", async () => {
      const r = await client.call('process/start', start('own', `printf 'bwrap: ' >&2; printf 'not ours\\n' >&2; echo out; echo more >&2`));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      await client.processEvents('own');
      assert.equal(client.output('own', 'stderr'), 'bwrap: not ours\nmore\n');
      assert.equal(client.output('own', 'stdout'), 'out\n');
    });
  },
);
