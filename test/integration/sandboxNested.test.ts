/**
 * Nested repositories under workspace-write, through our exec-server over the wire (real bwrap):
 * a sandboxed command cannot plant a git hook or VS Code settings in a repository below the
 * workspace, including one that appeared after the server built the next sandbox ahead of time
 * (the waiting sandbox must not be used for it), and one built ahead of time with it protects it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { until } from '../helpers/procs';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-nested-')));
const ws = join(base, 'ws');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

let counter = 0;
async function sh(client: RawClient, script: string): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const processId = `n${++counter}`;
  const res = await client.call('process/start', {
    processId,
    argv: ['/bin/sh', '-c', script],
    cwd: uri(ws),
    env: ENV,
    tty: false,
    arg0: null,
    sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }),
  });
  assert.equal(res.error, undefined, JSON.stringify(res.error));
  const exited = (await client.processEvents(processId)).find((m) => m.method === 'process/exited')!;
  return { stdout: client.output(processId, 'stdout'), stderr: client.output(processId, 'stderr'), exitCode: exited.params.exitCode };
}

/** Tries every write a hook or settings planter would make in the repository at `rel`. */
const attack = (rel: string) =>
  [
    `mkdir ${rel}/.git/hooks/x; echo mkdir=$?`,
    `echo 'touch /tmp/pwned' > ${rel}/.git/hooks/pre-commit; echo hook=$?`,
    `echo '{"evil":1}' > ${rel}/.vscode/settings.json; echo vscode=$?`,
    `echo ok > ${rel}/file.txt; echo file=$?`,
  ].join('\n');
const DENIED = /mkdir=1\nhook=2\nvscode=2\nfile=0\n/;

function nestedRepo(rel: string): string {
  const dir = join(ws, rel);
  mkdirSync(dir, { recursive: true });
  assert.equal(spawnSync('git', ['init', '-q', dir]).status, 0);
  mkdirSync(join(dir, '.vscode'));
  writeFileSync(join(dir, '.vscode', 'settings.json'), '{}\n');
  return dir;
}

function intact(dir: string): void {
  assert.equal(existsSync(join(dir, '.git', 'hooks', 'x')), false, `${dir}: no new hooks dir`);
  assert.equal(existsSync(join(dir, '.git', 'hooks', 'pre-commit')), false, `${dir}: no hook`);
  assert.equal(readFileSync(join(dir, '.vscode', 'settings.json'), 'utf8'), '{}\n', `${dir}: settings untouched`);
  assert.equal(readFileSync(join(dir, 'file.txt'), 'utf8'), 'ok\n', `${dir}: the rest of the repository is writable`);
}

describe(
  'nested repositories (workspace-write, over the wire)',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let server: StartedServer;
    let client: RawClient;
    before(async () => {
      mkdirSync(ws, { recursive: true });
      assert.equal(spawnSync('git', ['init', '-q', ws]).status, 0);
      server = await startServer('ours', ['--verbose']);
      client = (await RawClient.session(server.url)).client;
    });
    after(async () => {
      client?.close();
      await server?.stop();
      rmSync(base, { recursive: true, force: true });
    });

    test('a nested repository (and a deeper one) keeps .git and .vscode read-only; the top level is unchanged', async () => {
      const sub = nestedRepo('sub');
      const deep = nestedRepo('packages/a/b');
      const r = await sh(client, `${attack('sub')}\n${attack('packages/a/b')}\nmkdir .vscode; echo top=$?; touch .git/x; echo topgit=$?`);
      assert.match(r.stdout, new RegExp(`^${DENIED.source}${DENIED.source}top=1\ntopgit=1\n$`), r.stderr);
      intact(sub);
      intact(deep);
    });

    test('a repository that appears after the next sandbox was built ahead of time is protected too', async () => {
      // A server of its own, so that its log counts only what happens here.
      const fresh = await startServer('ours', ['--verbose']);
      const c = (await RawClient.session(fresh.url)).client;
      const count = (re: RegExp) => fresh.stderr().match(new RegExp(re.source, 'g'))?.length ?? 0;
      const builds = () => count(/sandbox prewarm: built one for the next start like this/);
      const used = () => count(/sandbox prewarm: running in the waiting sandbox/);
      try {
        // This start leaves a sandbox waiting for the next one like it, built before "late" exists.
        await sh(c, 'true');
        await until(() => builds() === 1, 15_000, 'a waiting sandbox');
        const late = nestedRepo('late');
        const r = await sh(c, attack('late'));
        assert.match(r.stdout, DENIED, r.stderr);
        assert.equal(used(), 0, 'the sandbox built before "late" existed was not used for it');
        intact(late);
        // The one built ahead of time after that start protects "late" as well.
        rmSync(join(late, 'file.txt'));
        await until(() => builds() === 2, 15_000, 'a waiting sandbox that knows "late"');
        const again = await sh(c, attack('late'));
        assert.match(again.stdout, DENIED, again.stderr);
        assert.equal(used(), 1, 'this one ran in the sandbox built ahead of time');
        intact(late);
      } finally {
        c.close();
        await fresh.stop();
      }
    });
  },
);
