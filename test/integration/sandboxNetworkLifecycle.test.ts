/**
 * The managed network's listeners live exactly as long as the process that uses them: each start
 * gets its own proxy (socket in `<private dir>/sandbox/net-<pid>-<id>/`), closed and removed when
 * the process is done, or when the server stops. And because it is its own, a refusal is reported
 * for the command that caused it: two commands with the same lists, running at once, hitting
 * different refused hosts, each get their own host named. Our `serve` with its own private
 * directory (EXEC_BRIDGE_RUNTIME_DIR). Loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { PREWARMED_MARKER } from '../../src/server/sandbox/managedNet';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netlife-')));
const ws = join(base, 'ws');
const runtime = join(base, 'runtime');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };

/**
 * The socket directories (and their files) of the managed network in the server's private
 * directory; without `all`, not those of a sandbox built ahead of time that no start took yet
 * (marked `prewarmed`: sandboxNetworkPrewarm.test.ts).
 */
function netEntries(all = false): string[] {
  const dir = join(runtime, 'sandbox');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => /^net-\d+-/.test(n))
    .filter((n) => all || !existsSync(join(dir, n, PREWARMED_MARKER)))
    .flatMap((n) => [n, ...readdirSync(join(dir, n)).map((f) => `${n}/${f}`)]);
}

describe('managed network: listeners per process', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let allowed: Server;
  const denied: Server[] = [];
  let allowedPort = 0;
  const deniedPorts: number[] = [];
  let server: StartedServer;
  let client: RawClient;

  before(async () => {
    mkdirSync(ws, { recursive: true });
    mkdirSync(runtime, { mode: 0o700 });
    const listen = async (s: Server) => {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return (s.address() as AddressInfo).port;
    };
    allowed = createServer((_q, r) => r.end('allowed-body\n'));
    allowedPort = await listen(allowed);
    for (let i = 0; i < 2; i++) {
      const s = createServer((_q, r) => r.end('denied-body\n'));
      denied.push(s);
      deniedPorts.push(await listen(s));
    }
    server = await startServer('ours', [], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
    client = (await RawClient.session(server.url)).client;
  });

  after(async () => {
    client?.close();
    await server?.stop();
    allowed?.close();
    for (const s of denied) s.close();
    rmSync(base, { recursive: true, force: true });
  });

  const start = (processId: string, script: string) => ({
    processId,
    argv: ['/bin/sh', '-c', script],
    cwd: pathToFileURL(ws).href,
    env: ENV,
    tty: false,
    arg0: null,
    sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
    enforceManagedNetwork: true,
    managedNetwork: { allow: [`127.0.0.1:${allowedPort}`] },
  });
  /** Waits (bounded) in the sandbox until `file` exists in the workspace. */
  const waitFor = (file: string) => `i=0; while [ ! -e ${file} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`;

  test("a process's proxy is there while it runs and gone (listener and socket file) when it ends", async () => {
    const r = await client.call(
      'process/start',
      start('hold', `curl -sS -f http://127.0.0.1:${allowedPort}/ && touch up; ${waitFor('go')}`),
    );
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    await client.waitFor((m) => m.method === 'process/output' && m.params.processId === 'hold', 20_000, 'the allowed body');
    const during = netEntries();
    assert.equal(during.filter((e) => e.endsWith('/proxy.sock')).length, 1, during.join(' '));
    const g = await client.call('process/start', { ...start('go', 'touch go'), enforceManagedNetwork: false, managedNetwork: undefined });
    assert.equal(g.error, undefined, JSON.stringify(g.error));
    await client.processEvents('go');
    await client.processEvents('hold');
    assert.equal(client.output('hold'), 'allowed-body\n');
    assert.deepEqual(netEntries(), [], 'the proxy of an ended process is left behind');
  });

  test('two commands at once, same lists, different refused hosts: each denial names its own host', async () => {
    const [a, b] = deniedPorts as [number, number];
    // Each is refused, says so, then waits until the other was refused too: both refusals happen
    // while both run, so a proxy shared by time could not tell them apart.
    const script = (port: number, me: string, peer: string) =>
      `curl -sS -f http://127.0.0.1:${port}/; touch ${me}; ${waitFor(peer)}; exit 22`;
    for (const [id, port, me, peer] of [
      ['deny-a', a, 'a-done', 'b-done'],
      ['deny-b', b, 'b-done', 'a-done'],
    ] as const) {
      const r = await client.call('process/start', start(id, script(port, me, peer)));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
    }
    const [ea, eb] = await Promise.all([client.processEvents('deny-a'), client.processEvents('deny-b')]);
    const exited = (events: typeof ea) => events.find((m) => m.method === 'process/exited')!.params;
    assert.equal(exited(ea).sandboxDenied, true);
    assert.equal(exited(eb).sandboxDenied, true);
    assert.equal(exited(ea).sandboxDeniedTarget, `127.0.0.1:${a}`);
    assert.equal(exited(eb).sandboxDeniedTarget, `127.0.0.1:${b}`);
    assert.deepEqual(netEntries(), []);
  });

  test('a normal server stop closes the proxies of processes still running', async () => {
    const r = await client.call('process/start', start('long', waitFor('never')));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    // The proxy is made before the spawn, so it exists once process/start has answered.
    assert.ok(
      netEntries().some((e) => e.endsWith('/proxy.sock')),
      netEntries().join(' '),
    );
    await server.stop(); // SIGTERM: the server's own shutdown
    assert.deepEqual(netEntries(true), [], 'a stopped server left its proxy behind');
  });
});
