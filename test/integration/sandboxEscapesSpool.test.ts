/**
 * The output spool (issue 27 item 3) is out of a sandbox's reach: what a process printed while
 * nobody read it lies in 0600 files of the server's private directory, and a sandboxed command —
 * of the same session, of another session, or run by another server of this user with another
 * private directory — must not read it by path, find it by searching, reach it through a file
 * descriptor (its own, inherited, or the server's under /proc), or read it with a sandboxed
 * `fs/readFile`. Each attack is run unsandboxed too, where it must succeed: the test can fail.
 * Real servers (dist/cli.js serve), real bubblewrap.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { SPOOL_DIR_PREFIX } from '../../src/server/outputSpool';
import { privateDir } from '../../src/util/privateDir';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

// Outside /tmp: workspace-write shares /tmp, so "outside the sandbox's reach" must be elsewhere.
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-spool-escape-')));
const ws = join(base, 'ws');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };
const MiB = 1024 * 1024;
/** Printed first, then 3 MiB: it is evicted from the 1 MiB window into the spool. */
const SECRET = `spool-secret-${randomBytes(8).toString('hex')}`;
/** The attacker is given the secret in two halves: its own argv and environment never hold it whole. */
const HALVES = { P1: SECRET.slice(0, 10), P2: SECRET.slice(10) };

function start(processId: string, argv: string[], sandbox?: unknown, extra: Record<string, unknown> = {}) {
  return { processId, argv, cwd: uri(ws), env: ENV, tty: false, arg0: null, ...(sandbox === undefined ? {} : { sandbox }), ...extra };
}

/**
 * Every way in: the victim's spool files by path, any spool file under the shared temp and runtime
 * places that holds the secret, any regular file open in any process the command can see
 * (`/proc/<pid>/fd`, its own included), and the server's open files by its host pid.
 */
const ATTACK = `
pat="$P1$P2"
n=0; for f in $SPOOL_FILES; do if cat "$f" 2>/dev/null | grep -qF -- "$pat"; then n=$((n+1)); fi; done
echo "bypath=$n"
found=$(find /tmp /var/tmp /run /dev/shm -maxdepth 6 -path '*${SPOOL_DIR_PREFIX}*' -type f 2>/dev/null | while read -r f; do grep -lsF -- "$pat" "$f"; done | wc -l)
echo "found=$found"
fds=0; for f in /proc/[0-9]*/fd/*; do if [ -f "$f" ] && grep -qsF -- "$pat" "$f"; then fds=$((fds+1)); fi; done
echo "fds=$fds"
s=0; for f in /proc/$SERVER_PID/fd/*; do if [ -f "$f" ] && grep -qsF -- "$pat" "$f"; then s=$((s+1)); fi; done
echo "serverfds=$s"
echo end
`;

interface Victim {
  server: StartedServer;
  client: RawClient;
  files: string[];
}

/** The spool files of `server` (its `spool-<pid>-*` directory in `dir`). */
function spoolFiles(server: StartedServer, dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.startsWith(`${SPOOL_DIR_PREFIX}${server.child.pid}-`))
    .flatMap((d) => readdirSync(join(dir, d)).map((f) => join(dir, d, f)));
}

/** A spooling session on `server` whose process printed the secret and 3 MiB after it. */
async function spoolSecret(server: StartedServer, dir: string, id: string): Promise<Victim> {
  const client = await RawClient.connect(server.url);
  const init = await client.call('initialize', { clientName: 'victim', execBridgeOutputSpool: true });
  assert.ok(init.result?.execBridgeOutputSpool, JSON.stringify(init));
  client.notify('initialized', {});
  const script = `printf '%s\\n' "$SECRET"; yes filler-line-of-the-victim | head -c ${3 * MiB}`;
  const res = await client.call('process/start', start(id, ['sh', '-c', script], undefined, { env: { ...ENV, SECRET } }));
  assert.equal(res.error, undefined, JSON.stringify(res.error));
  await client.processEvents(id, 60_000);
  const files = spoolFiles(server, dir);
  // The secret is on disk (and no longer in the window): what the attacks look for is there.
  assert.ok(
    files.some((f) => readFileSync(f).includes(SECRET)),
    `the secret is in a spool file of ${dir}`,
  );
  const window = (await client.call('process/read', { processId: id, afterSeq: 0 })).result;
  assert.ok(window.execBridgeSpooled, 'the first read is a spool page: the secret was evicted from the window');
  return { server, client, files };
}

/** Runs the attack as `id` on `client` (sandboxed with `sandbox`, or not) and returns its counts. */
async function attack(client: RawClient, id: string, victim: Victim, sandbox?: unknown, extra: Record<string, unknown> = {}) {
  const env = { ...ENV, ...HALVES, SPOOL_FILES: victim.files.join(' '), SERVER_PID: String(victim.server.child.pid) };
  const res = await client.call('process/start', start(id, ['sh', '-c', ATTACK], sandbox, { env, ...extra }));
  assert.equal(res.error, undefined, JSON.stringify(res.error));
  await client.processEvents(id, 120_000);
  const out = client.output(id);
  const count = (k: string) => {
    const m = new RegExp(`^${k}=(\\d+)$`, 'm').exec(out);
    assert.ok(m, `${id}: no ${k}= in ${JSON.stringify(out)}`);
    return Number(m[1]);
  };
  assert.match(out, /^end$/m, out);
  return { bypath: count('bypath'), found: count('found'), fds: count('fds'), serverfds: count('serverfds'), out };
}

// The managed network's launcher runs in the sandbox before the command's filter: the same attacks.
const MANAGED = { enforceManagedNetwork: true, managedNetwork: { allow: ['127.0.0.1:9'] } };
const POLICIES = [
  ['workspace-write', false, {}],
  ['read-only', false, {}],
  ['full-access', false, {}], // the network off: still a sandbox, with the whole disk writable
  ['workspace-write', true, {}], // the network on
  ['workspace-write', false, MANAGED],
] as const;

describe('a sandboxed command cannot read the output spool', { skip: process.platform !== 'linux' && 'bubblewrap is Linux-only' }, () => {
  let server: StartedServer;
  let victim: Victim;

  before(async () => {
    mkdirSync(ws, { recursive: true });
    server = await startServer('ours', ['--session-ttl-ms', '600000']);
    victim = await spoolSecret(server, privateDir(), 'victim');
  });

  after(async () => {
    victim?.client.close();
    await server?.stop();
    rmSync(base, { recursive: true, force: true });
  });

  test('unsandboxed, each attack reaches the spool (the test can fail)', async () => {
    const r = await attack(victim.client, 'open', victim);
    assert.equal(r.bypath, victim.files.filter((f) => readFileSync(f).includes(SECRET)).length, r.out);
    assert.ok(r.found >= 1, r.out);
    // The server holds its segments open for appends: its fds reach them.
    assert.ok(r.serverfds >= 1, r.out);
    assert.ok(r.fds >= 1, r.out);
  });

  for (const [policy, network, extra] of POLICIES) {
    const label = `${policy}${network ? ', network on' : ''}${extra === MANAGED ? ', managed network' : ''}`;
    test(`${label}: neither the victim's session nor another one reads it by path, by search or through an fd`, async () => {
      const other = await RawClient.connect(server.url);
      try {
        const init = await other.call('initialize', { clientName: 'attacker', execBridgeOutputSpool: true });
        assert.equal(init.error, undefined);
        other.notify('initialized', {});
        const sandbox = sandboxForPolicy({ policy, network, cwd: uri(ws) });
        for (const [who, client] of [
          ['same-session', victim.client],
          ['other-session', other],
        ] as const) {
          const r = await attack(client, `attack-${label}-${who}`, victim, sandbox, extra);
          assert.deepEqual(
            { bypath: r.bypath, found: r.found, fds: r.fds, serverfds: r.serverfds },
            { bypath: 0, found: 0, fds: 0, serverfds: 0 },
            `${who}: ${r.out}`,
          );
        }
        // An fs call made with the same sandbox sees what the command sees.
        const read = await other.call('fs/readFile', { path: uri(victim.files[0]!), sandbox });
        assert.ok(read.result === undefined, `${label}: a spool file was readable through a sandboxed fs/readFile`);
        assert.deepEqual(read.error, { code: -32600, message: 'Permission denied (os error 13)' });
      } finally {
        other.close();
      }
    });
  }

  test('nor one run by another server of this user whose private directory is elsewhere (EXEC_BRIDGE_RUNTIME_DIR)', async () => {
    const runtime = join(base, 'runtime');
    const elsewhere = await startServer('ours', ['--session-ttl-ms', '600000'], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
    let theirs: Victim | undefined;
    try {
      theirs = await spoolSecret(elsewhere, runtime, 'victim-elsewhere');
      // That server's spool from our server's sandboxes, and ours from that server's.
      for (const [client, target, label] of [
        [victim.client, theirs, 'ours → theirs'],
        [theirs.client, victim, 'theirs → ours'],
      ] as const) {
        const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });
        const r = await attack(client, `cross-${label}`, target, sandbox);
        assert.deepEqual({ bypath: r.bypath, found: r.found, fds: r.fds }, { bypath: 0, found: 0, fds: 0 }, `${label}: ${r.out}`);
        const open = await attack(client, `cross-open-${label}`, target);
        assert.ok(open.bypath >= 1 && open.found >= 1, `${label}, unsandboxed: ${open.out}`);
      }
    } finally {
      theirs?.client.close();
      await elsewhere.stop();
    }
  });
});
