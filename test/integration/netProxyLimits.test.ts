/**
 * The managed-network proxy under a flood (security issue 20, item 6): connections are bounded
 * per listener (one start) and per server process, over-limit ones get a clear refusal in their
 * protocol (HTTP 503, SOCKS5 "general failure") and are logged, idle tunnels and connections that
 * never send their request are closed, and running out of descriptors never takes the proxy down.
 * Real proxies on loopback, real sockets; the idle bounds are configured short and the tests wait
 * for the close. The same flood from inside a real sandbox, through the bridge, against a real
 * server: test/integration/sandboxNetworkAbuse.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConnectionBudget, DEFAULT_NET_LIMITS, Gate } from '../../src/server/netLimits';
import { NetProxy } from '../../src/server/netProxy';
import { NetPolicy } from '../../src/server/netProxyRules';
import { until } from '../helpers/procs';
import { BannerServer, exchange, openTunnel, socks5 } from '../helpers/proxyWire';

const headEnd = (t: string) => t.includes('\r\n\r\n');
const statusOf = (t: string) => /^HTTP\/1\.1 (\d{3})/.exec(t)?.[1];

/** Waits (bounded) for `s` to close; fails the test if it stays open. */
async function closed(s: Socket, what: string, ms = 30_000): Promise<void> {
  if (s.destroyed && s.closed) return;
  s.resume(); // a paused socket with unread bytes would never see its end
  const timer = setTimeout(() => s.emit('error', new Error(`${what}: still open after ${ms} ms`)), ms);
  try {
    await once(s, 'close');
  } finally {
    clearTimeout(timer);
  }
}

describe('managed network proxy: connection bounds and idle timeouts', () => {
  const holding = new BannerServer('', 'hold');
  const answering = new BannerServer('ALLOWED');
  let H = 0;
  let A = 0;
  const proxies: NetProxy[] = [];
  const open: Socket[] = [];

  before(async () => {
    H = await holding.listen();
    A = await answering.listen();
  });

  after(() => {
    for (const s of open) s.destroy();
    for (const p of proxies) p.close();
    holding.close();
    answering.close();
  });

  const policy = () => new NetPolicy([`127.0.0.1:${H}`, `127.0.0.1:${A}`]);
  const start = async (opts: ConstructorParameters<typeof NetProxy>[2], log?: (l: string) => void) => {
    const p = new NetProxy(policy(), log, opts);
    proxies.push(p);
    return { proxy: p, port: await p.listen({ port: 0 }) };
  };
  /** Opens `n` CONNECT tunnels to the holding target at once; the ones answered 200 stay open (kept in `open`). */
  const flood = async (port: number, n: number) => {
    const results = await Promise.allSettled(
      Array.from({ length: n }, () => openTunnel(port, `CONNECT 127.0.0.1:${H} HTTP/1.1\r\n\r\n`, headEnd, 60_000)),
    );
    const by: Record<string, string[]> = {};
    for (const r of results) {
      const key = r.status === 'fulfilled' ? (statusOf(r.value.text) ?? 'garbled') : 'closed';
      (by[key] ??= []).push(r.status === 'fulfilled' ? r.value.text : String(r.reason));
      if (r.status === 'fulfilled') open.push(r.value.socket);
    }
    return by;
  };

  test('a flood of 300 on one listener: 256 served, the rest refused with 503 and logged; another listener still serves', async () => {
    const lines: string[] = [];
    const budget = new ConnectionBudget(1024);
    const a = await start({ budget }, (l) => lines.push(l));
    const b = await start({ budget });
    const by = await flood(a.port, 300);
    assert.equal(by['200']?.length, DEFAULT_NET_LIMITS.perListener, JSON.stringify(Object.keys(by)));
    assert.equal(by['503']?.length, 300 - DEFAULT_NET_LIMITS.perListener);
    assert.match(
      by['503']![0]!,
      /too many connections: this command has 256 connections open through the managed network \(the limit is 256\)/,
    );
    assert.ok(
      lines.some((l) => /refused a connection .*the limit is 256/.test(l)),
      lines.join('\n'),
    );
    assert.ok(lines.length < 10, `refusals are logged sparingly, not one line each: ${lines.length}`);
    const other = await exchange(b.port, `GET http://127.0.0.1:${A}/ HTTP/1.1\r\nHost: 127.0.0.1:${A}\r\n\r\n`);
    assert.match(other.toString(), /^HTTP\/1\.1 200 OK[\s\S]*ALLOWED$/);
    // Once the flood closes, its listener serves again.
    for (const s of open.splice(0)) s.destroy();
    await until(() => a.proxy.openConnections === 0 && budget.inUse === 0, 30_000, 'every flood connection released');
    const again = await exchange(a.port, `GET http://127.0.0.1:${A}/ HTTP/1.1\r\n\r\n`);
    assert.match(again.toString(), /ALLOWED$/);
  });

  test("the server's budget is shared: a second listener is refused while it is spent, and serves once freed", async () => {
    const budget = new ConnectionBudget(12);
    const a = await start({ budget, limits: { perListener: 8 } });
    const b = await start({ budget, limits: { perListener: 8 } });
    const fa = await flood(a.port, 10);
    assert.deepEqual([fa['200']?.length, fa['503']?.length], [8, 2]);
    assert.match(fa['503']![0]!, /the limit is 8/);
    const fb = await flood(b.port, 5);
    assert.deepEqual([fb['200']?.length, fb['503']?.length], [4, 1]);
    assert.match(fb['503']![0]!, /the server's managed-network connections are all in use \(12\)/);
    // SOCKS5 over the budget: "no authentication" accepted, then reply 1 (general failure).
    const s = await exchange(b.port, socks5('127.0.0.1', A));
    assert.deepEqual([...s.subarray(0, 4)], [5, 0, 5, 1]);
    // Two of the first listener's tunnels end: the second listener serves again.
    const freed = open.splice(0, 2);
    for (const t of freed) t.destroy();
    await until(() => budget.inUse === 10, 30_000, 'two connections given back');
    const ok = await exchange(b.port, `GET http://127.0.0.1:${A}/ HTTP/1.1\r\n\r\n`);
    assert.match(ok.toString(), /ALLOWED$/);
    for (const t of open.splice(0)) t.destroy();
  });

  test('an idle tunnel is closed after idleMs, on both sides', async () => {
    const { port } = await start({ budget: new ConnectionBudget(16), limits: { idleMs: 300 } });
    const hits = holding.hits;
    const t = await openTunnel(port, `CONNECT 127.0.0.1:${H} HTTP/1.1\r\n\r\n`, headEnd);
    assert.equal(statusOf(t.text), '200');
    await until(() => holding.hits > hits, 30_000, 'the tunnel reached the target');
    const upstream = holding.last!;
    await closed(t.socket, 'the idle tunnel');
    await closed(upstream, "the idle tunnel's upstream");
  });

  test('a connection that never sends its request is closed after headerMs (HTTP and SOCKS5)', async () => {
    const { port, proxy } = await start({ budget: new ConnectionBudget(16), limits: { headerMs: 300 } });
    for (const partial of [Buffer.from('CONNECT 127.0.0.1'), Buffer.from([5, 1]), Buffer.from([5, 1, 0, 5, 1, 0, 3, 9, 0x6c])]) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.write(partial);
      await closed(s, `a connection that sent only ${partial.toString('hex')}`);
    }
    const silent = connect(port, '127.0.0.1');
    silent.on('error', () => undefined);
    await closed(silent, 'a connection that sent nothing');
    await until(() => proxy.openConnections === 0, 30_000, 'every connection released');
  });

  test('lookups: 2 at once per listener and per server, fair between listeners, one lookup for one name', async () => {
    const pending: Array<{ name: string; done: (a: string) => void }> = [];
    const asked: string[] = [];
    let inFlight = 0;
    let most = 0;
    const resolve = (name: string) =>
      new Promise<string>((done) => {
        asked.push(name);
        most = Math.max(most, ++inFlight);
        pending.push({ name, done: (a) => (inFlight--, done(a)) });
      });
    const lookups = new Gate(2);
    const mk = async () => {
      const p = new NetProxy(new NetPolicy(['*.allowed.test', `127.0.0.1:${A}`]), undefined, {
        budget: new ConnectionBudget(64),
        resolve,
        lookups,
      });
      proxies.push(p);
      return p.listen({ port: 0 });
    };
    const [a, b, c] = [await mk(), await mk(), await mk()];
    const get = (port: number, name: string) => exchange(port, `CONNECT ${name}:${A} HTTP/1.1\r\n\r\n`);
    const answers = Array.from({ length: 6 }, (_, i) => get(a, `a${i}.allowed.test`));
    await until(() => pending.length === 2, 30_000, "the first listener's two lookups");
    answers.push(get(b, 'b.allowed.test'));
    // B waits for a slot of the server's two; the first to free is B's, not A's third.
    await until(() => lookups.waitingCount === 1, 30_000, "the second listener's lookup waiting for the server's slot");
    pending.shift()!.done('127.0.0.1');
    await until(() => asked.length === 3, 30_000, 'the next lookup');
    assert.equal(asked[2], 'b.allowed.test', asked.join(' '));
    let finished = 0;
    for (const p of answers) void p.then(() => finished++);
    await until(
      () => {
        for (const p of pending.splice(0)) p.done('127.0.0.1');
        return finished === answers.length || undefined;
      },
      60_000,
      'every request answered',
    );
    for (const r of await Promise.all(answers)) assert.match(r.toString(), /^HTTP\/1\.1 200[\s\S]*ALLOWED$/);
    assert.equal(most, 2, 'never more than two lookups at once');
    // Five connections for one name at once: one lookup.
    const before = asked.length;
    const same = Array.from({ length: 5 }, () => get(c, 'same.allowed.test'));
    await until(() => pending.length === 1, 30_000, 'the shared lookup');
    pending.shift()!.done('127.0.0.1');
    for (const r of await Promise.all(same)) assert.match(r.toString(), /ALLOWED$/);
    assert.deepEqual(asked.slice(before), ['same.allowed.test']);
  });

  test('out of file descriptors, the proxy refuses and closes but never dies, and serves again after', async () => {
    // A proxy in its own process with 160 descriptors: its budget is a quarter of that (40 connections).
    const netProxy = join(__dirname, '..', '..', 'src', 'server', 'netProxy.js');
    const rules = join(__dirname, '..', '..', 'src', 'server', 'netProxyRules.js');
    const script = `
      const { NetProxy } = require(${JSON.stringify(netProxy)});
      const { NetPolicy } = require(${JSON.stringify(rules)});
      const p = new NetProxy(new NetPolicy(['127.0.0.1:${H}', '127.0.0.1:${A}']), (l) => process.stderr.write(l + '\\n'));
      p.listen({ port: 0 }).then((port) => process.stdout.write(port + '\\n'));
      process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
    const child = spawn('/bin/sh', ['-c', 'ulimit -n 160 && exec "$0" -e "$1"', process.execPath, script], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const [first] = (await once(child.stdout, 'data')) as [Buffer];
      const port = Number(first.toString().trim());
      assert.ok(port > 0, `no port: ${first.toString()} ${err}`);
      const by = await flood(port, 400);
      assert.equal(child.exitCode, null, `the proxy process died: ${child.signalCode ?? child.exitCode} ${err}`);
      const counts = JSON.stringify(Object.fromEntries(Object.entries(by).map(([k, v]) => [k, v.length])));
      // Up to 40 served (an upstream connect may itself meet EMFILE: 502), never more.
      assert.ok((by['200']?.length ?? 0) > 0 && (by['200']?.length ?? 0) <= 40, counts);
      assert.ok((by['503']?.length ?? 0) > 0, 'over-limit connections are told why');
      for (const s of open.splice(0)) s.destroy();
      const ok = await until(
        async () => {
          // While the flood's descriptors are still being freed, a connection may be reset: not yet.
          const r = (await exchange(port, `GET http://127.0.0.1:${A}/ HTTP/1.1\r\n\r\n`).catch(() => Buffer.alloc(0))).toString();
          return /ALLOWED$/.test(r) ? r : undefined;
        },
        30_000,
        'the proxy serves again once the flood is gone',
      );
      assert.match(ok, /ALLOWED$/);
      assert.equal(child.exitCode, null, err);
    } finally {
      child.stdin.end();
      if (child.exitCode === null) await once(child, 'exit');
    }
  });
});
