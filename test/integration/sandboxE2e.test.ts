/**
 * End to end over the wire: `process/start` with a codex-shaped `sandbox` against our exec-server
 * (dist/cli.js serve; `npm run build` first) and, for compatibility, the real `codex exec-server`.
 * Checks `sandboxType`, `sandboxDenied` on `process/exited` and in `process/read`, a denied command
 * approved and retried without the sandbox, and failing closed without bwrap. Linux with bwrap.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ApprovalPolicy, MemoryAlwaysAllowStore, unsandboxedRetry } from '../../src/core/approvalPolicy';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { until } from '../helpers/procs';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-sbx-e2e-')));
const ws = join(base, 'ws');
const outside = join(base, 'outside');
const uri = (p: string) => pathToFileURL(p).href;
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

function start(processId: string, argv: string[], sandbox: unknown) {
  return { processId, argv, cwd: uri(ws), env: ENV, tty: false, arg0: null, ...(sandbox === undefined ? {} : { sandbox }) };
}

// On Linux these run always: a missing bubblewrap is a failure (install it; .ci/run does), not a skip.
describe('sandbox end to end', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  test('bubblewrap is installed', () => {
    assert.equal(spawnSync('sh', ['-c', 'command -v bwrap']).status, 0, 'bwrap not found: apt-get install -y bubblewrap');
  });

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

  test('a denied write reports sandboxDenied on process/exited and in process/read', async () => {
    const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });
    const res = await client.call('process/start', start('denied', ['sh', '-c', `echo in > ok.txt; touch ${outside}/x`], sandbox));
    assert.deepEqual(res.result, { processId: 'denied', sandboxType: 'linuxSeccomp' }, JSON.stringify(res.error));
    const events = await client.processEvents('denied');
    const exited = events.find((m) => m.method === 'process/exited')!;
    assert.equal(exited.params.exitCode, 1);
    assert.equal(exited.params.sandboxDenied, true);
    assert.match(client.output('denied', 'stderr'), /Read-only file system/);
    const read = await client.call('process/read', { processId: 'denied', afterSeq: 0 });
    assert.equal(read.result.sandboxDenied, true);
    assert.equal(read.result.exited, true);
    assert.equal(readFileSync(join(ws, 'ok.txt'), 'utf8'), 'in\n');
    assert.equal(existsSync(join(outside, 'x')), false);
  });

  test('an ordinary failure inside the sandbox is not a denial; a run without a sandbox never is', async () => {
    const sandboxed = await client.call(
      'process/start',
      start('plain-fail', ['sh', '-c', 'echo "no match" >&2; exit 3'], sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) })),
    );
    assert.equal(sandboxed.result.sandboxType, 'linuxSeccomp');
    const e1 = (await client.processEvents('plain-fail')).find((m) => m.method === 'process/exited')!;
    assert.deepEqual([e1.params.exitCode, e1.params.sandboxDenied], [3, false]);
    const bare = await client.call('process/start', start('bare', ['sh', '-c', 'echo "Read-only file system" >&2; exit 1'], undefined));
    assert.equal(bare.result.sandboxType, 'none');
    const e2 = (await client.processEvents('bare')).find((m) => m.method === 'process/exited')!;
    assert.deepEqual([e2.params.exitCode, e2.params.sandboxDenied], [1, false]);
  });

  test('a denied command, approved, re-runs without the sandbox and succeeds', async () => {
    const target = join(outside, 'approved.txt');
    const first = start('retry-1', ['sh', '-c', `echo done > ${target}`], sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }));
    await client.call('process/start', first);
    const denied = (await client.processEvents('retry-1')).find((m) => m.method === 'process/exited')!;
    assert.equal(denied.params.sandboxDenied, true);

    const policy = new ApprovalPolicy({ mode: () => 'ask', store: new MemoryAlwaysAllowStore(), ask: async () => 'once' });
    const outcome = await policy.approve(
      { commandLine: first.argv.join(' '), argv: first.argv, cwd: ws, executor: server.url, sandboxLabel: 'workspace-write', exitCode: 1 },
      new AbortController().signal,
    );
    assert.equal(outcome.approved, true);
    const { unsandboxedRetry: marked, ...retry } = unsandboxedRetry({ ...first, processId: 'retry-2' });
    assert.equal(marked, true);
    const res = await client.call('process/start', retry);
    assert.equal(res.result.sandboxType, 'none');
    const exited = (await client.processEvents('retry-2')).find((m) => m.method === 'process/exited')!;
    assert.deepEqual([exited.params.exitCode, exited.params.sandboxDenied], [0, false]);
    assert.equal(readFileSync(target, 'utf8'), 'done\n');
  });

  test('full access with the network on runs unsandboxed; an invalid sandbox is invalid params', async () => {
    const res = await client.call(
      'process/start',
      start('full', ['sh', '-c', `touch ${outside}/full`], sandboxForPolicy({ policy: 'full-access', network: true, cwd: uri(ws) })),
    );
    assert.equal(res.result.sandboxType, 'none');
    const exited = (await client.processEvents('full')).find((m) => m.method === 'process/exited')!;
    assert.equal(exited.params.exitCode, 0);
    const bad = await client.call('process/start', start('bad', ['true'], { permissions: { type: 'x' } }));
    assert.equal(bad.error?.code, -32602);
  });

  test('without a usable bwrap a sandboxed start fails closed with a fix-it message', async () => {
    const broken = await startServer('ours', ['--bwrap-path', join(base, 'no-bwrap-here')]);
    try {
      // Said at start-up, and announced: no sandbox here (the working server announces one).
      // (stderr and the URL on stdout are two pipes: the warning may be read a moment later)
      await until(
        () => /sandboxed commands will be refused until this is fixed: .*apt-get install -y bubblewrap/.test(broken.stderr()),
        5000,
        'the start-up warning',
      );
      const { client: c, init } = await RawClient.session(broken.url);
      assert.equal(init.result.environmentInfo.capabilities.execBridgeSandbox, false);
      assert.equal((await client.call('environment/info', {})).result.capabilities.execBridgeSandbox, true);
      const marker = join(outside, 'must-not-exist');
      const res = await c.call(
        'process/start',
        start('nobwrap', ['touch', marker], sandboxForPolicy({ policy: 'read-only', cwd: uri(ws) })),
      );
      assert.equal(res.error?.code, -32603);
      assert.match(res.error!.message, /apt-get install -y bubblewrap/);
      assert.equal(existsSync(marker), false, 'never ran unsandboxed');
      // Without a sandbox request the same server runs commands normally.
      const plain = await c.call('process/start', start('plain', ['true'], undefined));
      assert.equal(plain.result.sandboxType, 'none');
      c.close();
    } finally {
      await broken.stop();
    }
  });

  test('codex exec-server accepts the same sandbox value (interop)', async () => {
    const codex = await startServer('codex');
    try {
      const { client: c } = await RawClient.session(codex.url);
      const res = await c.call(
        'process/start',
        start('cx', ['sh', '-c', `touch ${outside}/codex-x`], sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) })),
      );
      assert.deepEqual(res.result, { processId: 'cx', sandboxType: 'linuxSeccomp' }, JSON.stringify(res.error));
      const exited = (await c.processEvents('cx')).find((m) => m.method === 'process/exited')!;
      assert.equal(exited.params.exitCode, 1);
      assert.equal(existsSync(join(outside, 'codex-x')), false);
      c.close();
    } finally {
      await codex.stop();
    }
  });
});
