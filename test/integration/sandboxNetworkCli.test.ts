/**
 * The managed network end to end: `exec-bridge run --sandbox workspace-write --sandbox-network-allow
 * 127.0.0.1:PORT -- curl …` (bundled server), and over the wire against our exec-server: the named
 * denial in `process/exited`, repeated starts (each with its own proxy), and codex's
 * executor-launched `networkProxy` refused. Loopback only.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';
import { CLI_JS } from '../helpers/servers';

const ws = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netcli-')));
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };

function cli(args: string[], timeoutMs = 30_000): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_JS, 'run', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`run did not finish: ${err}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('managed network over the wire', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let allowed: Server;
  let other: Server;
  let allowedPort = 0;
  let otherPort = 0;

  before(async () => {
    const listen = async (s: Server) => {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return (s.address() as AddressInfo).port;
    };
    allowed = createServer((_q, r) => r.end('allowed-body\n'));
    other = createServer((_q, r) => r.end('other-body\n'));
    allowedPort = await listen(allowed);
    otherPort = await listen(other);
  });

  after(() => {
    allowed?.close();
    other?.close();
    rmSync(ws, { recursive: true, force: true });
  });

  test('run --sandbox-network-allow reaches only what is allowed, and names what it blocked', async () => {
    const base = ['--sandbox', 'workspace-write', '--cwd', ws, '--sandbox-network-allow', `127.0.0.1:${allowedPort}`, '--no-stdin', '--'];
    const ok = await cli([...base, 'curl', '-sS', '-f', `http://127.0.0.1:${allowedPort}/`]);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(ok.out, 'allowed-body\n');
    const no = await cli([...base, 'curl', '-sS', '-f', `http://127.0.0.1:${otherPort}/`]);
    assert.notEqual(no.code, 0);
    assert.doesNotMatch(no.out, /other-body/);
    assert.match(no.err, new RegExp(`sandbox denied: the sandbox blocked 127\\.0\\.0\\.1:${otherPort}`));
    assert.match(no.err, new RegExp(`--sandbox-network-allow 127\\.0\\.0\\.1:${allowedPort},127\\.0\\.0\\.1:${otherPort} -- curl`));
    // Issue 24 item 6: pasted in a shell, the printed line runs it with the host allowed (same cwd, stdin).
    const again = / allow it: (.*)$/m.exec(no.err)?.[1];
    assert.ok(again, no.err);
    // Not spawnSync: the HTTP servers it reaches run in this process.
    const pasted = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile('/bin/sh', ['-c', again], { timeout: 30_000 }, (e, stdout, stderr) =>
        resolve({ status: e ? ((e as { code?: number }).code ?? null) : 0, stdout, stderr }),
      ),
    );
    assert.equal(pasted.status, 0, pasted.stderr);
    assert.equal(pasted.stdout, 'other-body\n');
    // Usage errors: a list without a sandbox, or with the whole network.
    const bad = await cli(['--sandbox-network-allow', 'example.com', '--', 'true']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /needs --sandbox/);
  });

  describe('raw wire', () => {
    let server: StartedServer;
    let client: RawClient;
    before(async () => {
      server = await startServer('ours');
      client = (await RawClient.session(server.url)).client;
    });
    after(async () => {
      client?.close();
      await server?.stop();
    });

    const start = (processId: string, argv: string[], extra: Record<string, unknown>) => ({
      processId,
      argv,
      cwd: pathToFileURL(ws).href,
      env: ENV,
      tty: false,
      arg0: null,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      ...extra,
    });
    const managed = () => ({ enforceManagedNetwork: true, managedNetwork: { allow: [`127.0.0.1:${allowedPort}`] } });

    test('process/exited names the refused destination; repeated starts each get their own proxy', async () => {
      const r = await client.call('process/start', start('deny1', ['curl', '-sS', '-f', `http://127.0.0.1:${otherPort}/`], managed()));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const events = await client.processEvents('deny1');
      const exited = events.find((m) => m.method === 'process/exited')!;
      assert.equal(exited.params.sandboxDenied, true);
      assert.equal(exited.params.sandboxDeniedTarget, `127.0.0.1:${otherPort}`);
      // Each start builds its sandbox on the spot with a proxy of its own.
      for (const id of ['ok1', 'ok2', 'ok3']) {
        const s = await client.call('process/start', start(id, ['curl', '-sS', '-f', `http://127.0.0.1:${allowedPort}/`], managed()));
        assert.equal(s.error, undefined, JSON.stringify(s.error));
        await client.processEvents(id);
        assert.equal(client.output(id), 'allowed-body\n');
      }
    });

    test("codex's executor-launched networkProxy fails closed (we announce networkProxyLaunch: false)", async () => {
      const r = await client.call(
        'process/start',
        start('codex1', ['true'], { enforceManagedNetwork: true, networkProxy: { http: '127.0.0.1:43123' } }),
      );
      assert.equal(r.error?.code, -32603);
      assert.match(r.error.message, /networkProxy .*the command was not run/);
    });
  });
});
