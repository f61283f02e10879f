/**
 * Codex's managed network on our executor: `enforceManagedNetwork: true` with codex's prepared
 * context (`managedNetwork: {loopbackPorts}`) and the orchestrator's proxy already in the env. The
 * "orchestrator's proxy" is a tiny forward proxy on the host's 127.0.0.1 started by the test; the
 * same requests go to our exec-server and to the real `codex exec-server` 0.171.0: both let the
 * command reach that proxy and nothing else on the host, and both refuse an env whose proxy port
 * the context does not let through (ours before the start, codex at its start). Loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';
import type { ServerKind } from '../helpers/servers';

const ws = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netcodex-')));
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };
const KINDS: readonly ServerKind[] = ['ours', 'codex'];

describe(
  "codex's managed network context (prepared proxy)",
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let proxy: Server;
    let other: Server;
    let proxyPort = 0;
    let otherPort = 0;
    const servers: Partial<Record<ServerKind, { server: StartedServer; client: RawClient }>> = {};

    before(async () => {
      const listen = async (s: Server) => {
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
        return (s.address() as AddressInfo).port;
      };
      // The orchestrator's proxy: answers plain requests in absolute form itself.
      proxy = createServer((q, r) => r.end(`via-orchestrator ${q.method} ${q.url}\n`));
      other = createServer((_q, r) => r.end('other-body\n'));
      proxyPort = await listen(proxy);
      otherPort = await listen(other);
      for (const kind of KINDS) {
        const server = await startServer(kind);
        servers[kind] = { server, client: (await RawClient.session(server.url)).client };
      }
    });

    after(async () => {
      for (const s of Object.values(servers)) {
        s.client.close();
        await s.server.stop();
      }
      proxy?.close();
      other?.close();
      rmSync(ws, { recursive: true, force: true });
    });

    const start = (processId: string, script: string, managedNetwork: unknown, env: Record<string, string>) => ({
      processId,
      argv: ['/bin/sh', '-c', script],
      cwd: pathToFileURL(ws).href,
      env: { ...ENV, ...env },
      tty: false,
      arg0: null,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      enforceManagedNetwork: true,
      managedNetwork,
    });

    test('the command reaches the orchestrator proxy on the listed port, and nothing else on the host', async () => {
      const script =
        `curl -sS --max-time 10 http://example.com/through; ` +
        `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${otherPort}/; echo "direct=$?"`;
      const env = { http_proxy: `http://127.0.0.1:${proxyPort}`, HTTP_PROXY: `http://127.0.0.1:${proxyPort}`, NO_PROXY: '' };
      for (const kind of KINDS) {
        const { client } = servers[kind]!;
        const id = `reach-${kind}`;
        const r = await client.call('process/start', start(id, script, { loopbackPorts: [proxyPort], allowLocalBinding: false }, env));
        assert.equal(r.error, undefined, `${kind}: ${JSON.stringify(r.error)}`);
        assert.equal(r.result.sandboxType, 'linuxSeccomp', kind);
        await client.processEvents(id);
        const out = client.output(id);
        assert.match(out, /via-orchestrator GET http:\/\/example\.com\/through/, `${kind}: ${out}`);
        assert.doesNotMatch(out, /other-body/, `${kind}: ${out}`);
        assert.match(out, /direct=[1-9]/, `${kind}: ${out}`);
      }
    });

    test('an env whose proxy port the context does not list never runs as asked (ours refuses the start)', async () => {
      const env = { HTTP_PROXY: `http://127.0.0.1:${otherPort}` };
      const ours = await servers.ours!.client.call(
        'process/start',
        start('mismatch-ours', 'echo RAN', { loopbackPorts: [proxyPort] }, env),
      );
      assert.equal(ours.error?.code, -32603);
      assert.match(
        ours.error.message,
        /HTTP_PROXY names port \d+, which the managed network context \(loopbackPorts\) does not let through/,
      );
      assert.match(ours.error.message, /the command was not run/);
      // codex 0.171 starts it and its sandbox helper panics before the command (exit 101).
      const codex = servers.codex!.client;
      const c = await codex.call('process/start', start('mismatch-codex', 'echo RAN', { loopbackPorts: [proxyPort] }, env));
      assert.equal(c.error, undefined, JSON.stringify(c.error));
      await codex.processEvents('mismatch-codex');
      assert.doesNotMatch(codex.output('mismatch-codex'), /RAN/);
      assert.match(codex.output('mismatch-codex'), /outside the managed sandbox context/);
    });

    test('ours: no proxy env, a non-loopback proxy, unix sockets, or no sandbox are refused too', async () => {
      const { client } = servers.ours!;
      const refused = async (id: string, req: Record<string, unknown>, why: RegExp) => {
        const r = await client.call('process/start', req);
        assert.equal(r.error?.code, -32603, `${id}: ${JSON.stringify(r)}`);
        assert.match(r.error.message, why, id);
      };
      await refused('noenv', start('noenv', 'true', { loopbackPorts: [proxyPort] }, {}), /needs the proxy env/);
      await refused(
        'far',
        start('far', 'true', { loopbackPorts: [proxyPort] }, { HTTPS_PROXY: `http://10.0.0.1:${proxyPort}` }),
        /not a loopback proxy/,
      );
      await refused(
        'unix',
        start(
          'unix',
          'true',
          { loopbackPorts: [proxyPort], allowUnixSockets: ['/var/run/docker.sock'] },
          { HTTP_PROXY: `http://127.0.0.1:${proxyPort}` },
        ),
        /unix sockets/,
      );
      await refused(
        'nosandbox',
        { ...start('nosandbox', 'true', { loopbackPorts: [proxyPort] }, { HTTP_PROXY: `http://127.0.0.1:${proxyPort}` }), sandbox: null },
        /network restricted/,
      );
      // Without enforceManagedNetwork the context is not read (as in codex): the network is simply off.
      const { enforceManagedNetwork: _e, ...plain } = start(
        'plain',
        `curl -sS --max-time 5 http://example.com/; echo "rc=$?"`,
        { loopbackPorts: [proxyPort] },
        {
          http_proxy: `http://127.0.0.1:${proxyPort}`,
        },
      );
      void _e;
      const r = await client.call('process/start', plain);
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      await client.processEvents('plain');
      assert.doesNotMatch(client.output('plain'), /via-orchestrator/);
      assert.match(client.output('plain'), /rc=[1-9]/);
    });
  },
);
