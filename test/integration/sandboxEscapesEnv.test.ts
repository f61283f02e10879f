/**
 * Issue 20, items 1 and 4, against real servers (dist/cli.js serve) and real bubblewrap:
 * - servers of one user started with different environments (EXEC_BRIDGE_RUNTIME_DIR, an
 *   XDG_RUNTIME_DIR, neither: a cron job or `env -i`) keep their private directories in different
 *   places; a sandbox built by any of them must hide every other's (docs/security.md, "Our private
 *   directory");
 * - our secrets in the server's environment reach no child, whatever the env policy, and the
 *   dynamic loader's variables do not act on the host-side bwrap (docs/security.md, "Our secrets
 *   in environments").
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

// Outside /tmp: workspace-write shares /tmp, so "a place a sandbox can read" must be elsewhere too.
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-env-escape-')));
const ws = join(base, 'ws');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };
const SECRET = 'planted-daemon-token-5f0c';

/** What a server started from cron or `env -i` has: none of the variables that move the private directory. */
function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['EXEC_BRIDGE_RUNTIME_DIR', 'XDG_RUNTIME_DIR', 'TMPDIR', 'EXEC_BRIDGE_TOKEN']) delete env[k];
  return env;
}

function start(processId: string, argv: string[], sandbox?: unknown, extra: Record<string, unknown> = {}) {
  return { processId, argv, cwd: uri(ws), env: ENV, tty: false, arg0: null, ...(sandbox === undefined ? {} : { sandbox }), ...extra };
}

interface Server {
  name: string;
  server: StartedServer;
  client: RawClient;
  /** Where it keeps its FIFOs, tokens and sockets. */
  privateDir: string;
}

describe(
  'servers with different environments hide each other’s private directory',
  { skip: process.platform !== 'linux' && 'bubblewrap is Linux-only' },
  () => {
    const runtime = join(base, 'runtime'); // EXEC_BRIDGE_RUNTIME_DIR of one server
    const xdg = join(base, 'xdg'); // XDG_RUNTIME_DIR of another (ours, 0700, as systemd makes it)
    // What an older version keeps in the temp directory. The servers get a temp directory of this
    // test's own: a real /tmp entry that comes and goes would change every other server's sandboxes.
    const tmp = join(base, 'tmp');
    const old = join(tmp, 'exec-bridge-fifo-envtest');
    const servers: Server[] = [];

    before(async () => {
      mkdirSync(ws, { recursive: true });
      mkdirSync(xdg, { mode: 0o700 });
      mkdirSync(old, { mode: 0o700, recursive: true });
      writeFileSync(join(old, 'token'), `${SECRET}\n`, { mode: 0o600 });
      const specs: Array<[string, NodeJS.ProcessEnv, string]> = [
        ['plain', { ...plainEnv(), TMPDIR: tmp }, `/tmp/exec-bridge-${process.getuid!()}`],
        ['runtime-dir', { ...plainEnv(), TMPDIR: tmp, EXEC_BRIDGE_RUNTIME_DIR: runtime }, runtime],
        ['xdg', { ...plainEnv(), TMPDIR: tmp, XDG_RUNTIME_DIR: xdg }, join(xdg, 'exec-bridge')],
      ];
      for (const [name, env, privateDir] of specs) {
        const server = await startServer('ours', [], env);
        const client = (await RawClient.session(server.url)).client;
        servers.push({ name, server, client, privateDir });
        // A piped process: the server makes its private directory and fills its FIFO pool there.
        const res = await client.call('process/start', start(`warm-${name}`, ['true']));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(`warm-${name}`);
        assert.ok(
          readdirSync(privateDir).some((n) => n.startsWith(`fifo-${server.child.pid}-`)),
          `${name} keeps its FIFOs in ${privateDir}`,
        );
      }
      // The secret every victim holds: a token file in its private directory (as the daemon's).
      for (const s of servers.slice(1)) {
        mkdirSync(join(s.privateDir, 'planted'), { mode: 0o700, recursive: true });
        writeFileSync(join(s.privateDir, 'planted', 'token'), `${SECRET}\n`, { mode: 0o600 });
      }
    });

    after(async () => {
      for (const s of servers) {
        s.client.close();
        await s.server.stop();
      }
      rmSync(base, { recursive: true, force: true });
    });

    /** Lists the directory, reads the planted token, counts the FIFOs it can open. */
    const attack = (dir: string) =>
      [
        `ls -a ${dir} >/dev/null 2>&1; echo ls=$?`,
        `cat ${dir}/planted/token ${dir}/token 2>/dev/null; echo cat=$?`,
        `n=0; for f in ${dir}/fifo-*/*; do if [ -p "$f" ] && exec 9<>"$f"; then n=$((n+1)); exec 9>&-; fi; done 2>/dev/null; echo fifos=$n`,
      ].join('; ');

    const modes = [
      ['read-only', false],
      ['workspace-write', false],
      ['network on', true],
    ] as const;
    const pairs = [
      ['plain', 'runtime-dir'],
      ['plain', 'xdg'],
      ['xdg', 'runtime-dir'],
      ['runtime-dir', 'xdg'],
    ] as const;

    for (const [attackerName, victimName] of pairs) {
      test(`a sandbox of the ${attackerName} server cannot reach the ${victimName} server's private directory`, async () => {
        const attacker = servers.find((s) => s.name === attackerName)!;
        const victim = servers.find((s) => s.name === victimName)!;
        const script = attack(victim.privateDir);
        // Unsandboxed, the attack reaches everything: the test can fail.
        const openId = `open-${attackerName}-${victimName}`;
        let res = await attacker.client.call('process/start', start(openId, ['sh', '-c', script]));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await attacker.client.processEvents(openId);
        const open = attacker.client.output(openId);
        assert.match(open, new RegExp(`ls=0\\n${SECRET}\\ncat=\\d+\\nfifos=[1-9]`), open);

        for (const [policy, network] of modes) {
          const id = `attack-${attackerName}-${victimName}-${policy}`;
          const sandbox = sandboxForPolicy({ policy: policy === 'network on' ? 'workspace-write' : policy, network, cwd: uri(ws) });
          res = await attacker.client.call('process/start', start(id, ['sh', '-c', script], sandbox));
          assert.equal(res.error, undefined, JSON.stringify(res.error));
          await attacker.client.processEvents(id);
          const out = attacker.client.output(id);
          assert.doesNotMatch(out, new RegExp(SECRET), `${policy}: the sandbox read the token in ${victim.privateDir}`);
          assert.match(out, /^ls=[12]\ncat=1\nfifos=0\n$/, `${policy}: ${out}`);

          // An fs call with the same sandbox field is refused there too.
          const read = await attacker.client.call('fs/readFile', { path: uri(join(victim.privateDir, 'planted', 'token')), sandbox });
          assert.equal(read.result, undefined, `${policy}: fs/readFile read the token`);
          assert.deepEqual(read.error, { code: -32600, message: 'Permission denied (os error 13)' });
          const list = await attacker.client.call('fs/readDirectory', { path: uri(victim.privateDir), sandbox });
          assert.equal(list.result, undefined, `${policy}: fs/readDirectory listed ${victim.privateDir}`);
          assert.deepEqual(list.error, { code: -32600, message: 'Permission denied (os error 13)' });
        }
      });
    }

    test('what an older version keeps in the temp directory (exec-bridge-fifo-*) is hidden from every sandbox', async () => {
      for (const s of servers) {
        for (const [policy, network] of modes) {
          const id = `old-${s.name}-${policy}`;
          const sandbox = sandboxForPolicy({ policy: policy === 'network on' ? 'workspace-write' : policy, network, cwd: uri(ws) });
          const res = await s.client.call('process/start', start(id, ['sh', '-c', attack(old)], sandbox));
          assert.equal(res.error, undefined, JSON.stringify(res.error));
          await s.client.processEvents(id);
          const out = s.client.output(id);
          assert.doesNotMatch(out, new RegExp(SECRET), `${s.name}, ${policy}: the sandbox read ${old}/token`);
          assert.match(out, /^ls=[12]\ncat=1\n/, `${s.name}, ${policy}: ${out}`);
        }
      }
    });
  },
);

describe(
  'our secrets and the loader’s variables stay out of children',
  { skip: process.platform !== 'linux' && 'bubblewrap is Linux-only' },
  () => {
    const TOKEN = `env-token-${process.pid}-7d1e`;
    const ASKPASS = `askpass-secret-${process.pid}-c03b`;
    const LIBS = `/nonexistent-exec-bridge-libs-${process.pid}`;
    let server: StartedServer;
    let client: RawClient;
    const inheritAll = { inherit: 'all', ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] };

    before(async () => {
      mkdirSync(ws, { recursive: true });
      // EXEC_BRIDGE_TOKEN is the server's own token here, as `serve` documents it.
      const env = { ...plainEnv(), EXEC_BRIDGE_TOKEN: TOKEN, EXEC_BRIDGE_ASKPASS_SECRET: ASKPASS, LD_LIBRARY_PATH: LIBS };
      server = await startServer('ours', ['--sandbox-prewarm-ms', '0'], env);
      client = await RawClient.connect(server.url, { Authorization: `Bearer ${TOKEN}` });
      const init = await client.call('initialize', { clientName: 'test' });
      assert.equal(init.error, undefined, JSON.stringify(init.error));
      client.notify('initialized', {});
    });

    after(async () => {
      client?.close();
      await server?.stop();
      rmSync(base, { recursive: true, force: true });
    });

    test('a network-on sandbox whose env policy inherits everything (default excludes ignored) gets no token of ours', async () => {
      const cases: Array<[string, unknown, Record<string, unknown>]> = [
        [
          'network on, inherit all',
          sandboxForPolicy({ policy: 'workspace-write', network: true, cwd: uri(ws) }),
          { envPolicy: inheritAll, env: {} },
        ],
        [
          'network on, set and env name them',
          sandboxForPolicy({ policy: 'workspace-write', network: true, cwd: uri(ws) }),
          { envPolicy: { ...inheritAll, set: { EXEC_BRIDGE_TOKEN: TOKEN } }, env: { EXEC_BRIDGE_ASKPASS_SECRET: ASKPASS } },
        ],
        ['read-only, inherit all', sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) }), { envPolicy: inheritAll, env: {} }],
        ['unsandboxed, inherit all', undefined, { envPolicy: inheritAll, env: {} }],
      ];
      for (const [label, sandbox, extra] of cases) {
        const id = `env-${label}`;
        const res = await client.call('process/start', start(id, ['env'], sandbox, extra));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        await client.processEvents(id);
        const out = client.output(id);
        assert.match(out, /^PATH=/m, `${label}: env ran: ${out}`);
        assert.doesNotMatch(out, new RegExp(TOKEN), `${label}: the child got EXEC_BRIDGE_TOKEN`);
        assert.doesNotMatch(out, new RegExp(ASKPASS), `${label}: the child got EXEC_BRIDGE_ASKPASS_SECRET`);
        // What we keep out is ours alone: the rest of the environment was inherited.
        assert.match(out, new RegExp(`^LD_LIBRARY_PATH=${LIBS}$`, 'm'), `${label}: ${out}`);
      }
    });

    test('the host-side bwrap runs without the loader’s variables; the command inside still has them', async () => {
      const release = join(ws, 'release-loader');
      const hold = `echo "inside=$LD_LIBRARY_PATH"; i=0; while [ ! -e ${release} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`;
      for (const tty of [false, true]) {
        rmSync(release, { force: true });
        const id = `loader-${tty}`;
        const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });
        const res = await client.call('process/start', start(id, ['sh', '-c', hold], sandbox, { envPolicy: inheritAll, env: {}, tty }));
        assert.equal(res.error, undefined, JSON.stringify(res.error));
        try {
          await client.waitFor(() => client.output(id).includes('inside='), 20_000, `${id} to start`);
          assert.match(client.output(id), new RegExp(`inside=${LIBS}`));
          // The server's children outside the sandbox that run bwrap (directly, or the shell that execs it).
          const launchers = childrenOf(server.child.pid!).filter((pid) => procText(pid, 'cmdline').includes('bwrap'));
          assert.ok(launchers.length > 0, 'the host-side bwrap of the sandbox');
          for (const pid of launchers) {
            const environ = procText(pid, 'environ');
            assert.doesNotMatch(environ, /(^|\0)LD_/, `tty ${tty}: the host-side bwrap (pid ${pid}) has the loader's variables`);
            assert.match(environ, /(^|\0)PATH=/, `tty ${tty}: pid ${pid} has the rest of the environment`);
          }
        } finally {
          writeFileSync(release, '');
          await client.processEvents(id);
        }
      }
    });
  },
);

/** The direct children of `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The comm field may hold spaces and parentheses: the ppid follows the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function procText(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'latin1');
  } catch {
    return '';
  }
}
