/**
 * The managed network attacked from inside a real sandbox, through the real bridge, against our
 * real `serve` (security issue 20, items 3 and 6). A sandboxed command floods its proxy with 300
 * connections: 256 are served, the rest refused with 503; meanwhile another command's request
 * through its own proxy succeeds and the server keeps answering. A sandboxed command sends the
 * NUL name of the report by CONNECT and by SOCKS5: both are refused before any rule (400, SOCKS reply 2), and the
 * loopback target that no list allows is never reached. Loopback only; the unit and proxy-level
 * forms are test/unit/sandbox/netHostNames.test.ts, netProxyBypass.test.ts and netProxyLimits.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { DEFAULT_NET_LIMITS } from '../../src/server/netLimits';
import { BannerServer } from '../helpers/proxyWire';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netabuse-')));
const ws = join(base, 'ws');
const runtime = join(base, 'runtime');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };

describe(
  'managed network: a flood and the NUL name from inside the sandbox',
  { skip: process.platform !== 'linux' && 'Linux-only' },
  () => {
    const holding = new BannerServer('', 'hold');
    const allowed = new BannerServer('ALLOWED');
    const forbidden = new BannerServer('INTERNAL-NOT-ALLOWED');
    let H = 0;
    let A = 0;
    let F = 0;
    let server: StartedServer;
    let client: RawClient;

    before(async () => {
      mkdirSync(ws, { recursive: true });
      mkdirSync(runtime, { mode: 0o700 });
      H = await holding.listen();
      A = await allowed.listen();
      F = await forbidden.listen();
      server = await startServer('ours', [], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
      client = (await RawClient.session(server.url)).client;
    });

    after(async () => {
      client?.close();
      await server?.stop();
      holding.close();
      allowed.close();
      forbidden.close();
      rmSync(base, { recursive: true, force: true });
    });

    const start = (processId: string, argv: string[], allow: string[]) => ({
      processId,
      argv,
      cwd: pathToFileURL(ws).href,
      env: ENV,
      tty: false,
      arg0: null,
      sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      enforceManagedNetwork: true,
      managedNetwork: { allow },
    });

    test('300 connections from one command: 256 served, the rest get 503; another command is served; the server lives', async () => {
      const n = 300;
      // Opens n tunnels through the bridge, counts the answers, prints them, and holds the tunnels until `go` exists.
      const flood = `
      const net = require('node:net'), fs = require('node:fs');
      const counts = {}; let done = 0; const sockets = [];
      for (let i = 0; i < ${n}; i++) {
        const s = net.connect(3128, '127.0.0.1', () => s.write('CONNECT 127.0.0.1:${H} HTTP/1.1\\r\\n\\r\\n'));
        sockets.push(s);
        let text = '', counted = false;
        const count = (k) => { if (counted) return; counted = true; counts[k] = (counts[k] || 0) + 1; if (++done === ${n}) report(); };
        s.on('data', (d) => { text += d; if (text.includes('\\r\\n\\r\\n')) count(text.slice(9, 12)); });
        s.on('error', (e) => count(e.code));
        s.on('close', () => count('closed'));
      }
      function report() {
        console.log('COUNTS ' + JSON.stringify(counts));
        let i = 0;
        const t = setInterval(() => { if (fs.existsSync('go') || ++i > 1200) { clearInterval(t); process.exit(0); } }, 50);
      }
      setTimeout(() => { console.log('TIMEOUT ' + JSON.stringify(counts)); process.exit(3); }, 100000);`;
      const r = await client.call('process/start', start('flood', [process.execPath, '-e', flood], [`127.0.0.1:${H}`]), undefined, 60_000);
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      await client.waitFor(() => /COUNTS|TIMEOUT/.test(client.output('flood')), 120_000, 'the flood counts');
      const line = /(COUNTS|TIMEOUT) (.*)/.exec(client.output('flood'))!;
      const counts = JSON.parse(line[2]!) as Record<string, number>;
      assert.deepEqual(
        counts,
        { '200': DEFAULT_NET_LIMITS.perListener, '503': n - DEFAULT_NET_LIMITS.perListener },
        client.output('flood'),
      );

      // While the flood holds its 256 tunnels: another command, through its own proxy, is served.
      const o = await client.call(
        'process/start',
        start('other', ['/bin/sh', '-c', `curl -sS --max-time 30 http://127.0.0.1:${A}/`], [`127.0.0.1:${A}`]),
        undefined,
        60_000,
      );
      assert.equal(o.error, undefined, JSON.stringify(o.error));
      await client.processEvents('other', 60_000);
      assert.equal(client.output('other'), 'ALLOWED');
      const status = await client.call('environment/status', {}, undefined, 30_000);
      assert.deepEqual(status.result, { status: 'ready' });

      writeFileSync(join(ws, 'go'), '');
      await client.processEvents('flood', 60_000);
      assert.equal(server.child.exitCode, null, server.stderr());
      assert.equal(server.child.signalCode, null, server.stderr());
    });

    test("the report's NUL name, by CONNECT and by SOCKS5, is refused before any rule; the unlisted target is never reached", async () => {
      // The part before the NUL is the loopback target's address: what a resolver that stops there would connect to.
      const probe = `
      const net = require('node:net');
      const name = '127.0.0.1\\0.allowed.test';
      const ask = (bytes) => new Promise((resolve) => {
        const s = net.connect(3128, '127.0.0.1', () => s.write(bytes));
        const got = []; s.on('data', (d) => got.push(d)); s.on('error', () => {}); s.on('close', () => resolve(Buffer.concat(got)));
      });
      (async () => {
        const h = await ask(Buffer.from('CONNECT ' + name + ':${F} HTTP/1.1\\r\\n\\r\\n', 'latin1'));
        console.log('HTTP ' + JSON.stringify(h.toString('latin1').split('\\r\\n')[0]) + ' ' + JSON.stringify(h.toString('latin1')));
        const port = Buffer.from([${F >> 8}, ${F & 255}]);
        const s = await ask(Buffer.concat([Buffer.from([5, 1, 0, 5, 1, 0, 3, name.length]), Buffer.from(name, 'latin1'), port]));
        console.log('SOCKS ' + s.toString('hex'));
      })();`;
      const r = await client.call(
        'process/start',
        start('nul', [process.execPath, '-e', probe], ['*.allowed.test', `127.0.0.1:${A}`]),
        undefined,
        60_000,
      );
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      await client.processEvents('nul', 60_000);
      const out = client.output('nul');
      assert.match(out, /^HTTP "HTTP\/1\.1 400 Bad Request" .*a control character in the request head/m, out);
      assert.match(out, /^SOCKS 05000502/m, out);
      assert.doesNotMatch(out, /INTERNAL-NOT-ALLOWED/);
      assert.equal(forbidden.hits, 0);
    });
  },
);
