/**
 * Allow-list bypass attempts through the real managed-network proxy (security issue 20, item 3),
 * over real sockets: HTTP CONNECT, HTTP absolute form (and its Host header), SOCKS5 by domain,
 * IPv4 and IPv6 address, SOCKS4a. The lists allow `*.allowed.test` and one loopback port
 * (`127.0.0.1:A`, the allowed target); a second loopback target on port F is on no list and must
 * never be reached. Names resolve through the proxy's resolver seam, which reads a name as
 * getaddrinfo does (it stops at a NUL); TEST-NET addresses (192.0.2.x) are never dialled: the
 * dial seam records them and connects to the forbidden target instead, so a name that slipped
 * through shows up as a hit there. The unit table of the same forms: test/unit/sandbox/netHostNames.test.ts.
 */
import assert from 'node:assert/strict';
import { createConnection, isIP, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { NetProxy } from '../../src/server/netProxy';
import { NetPolicy } from '../../src/server/netProxyRules';
import { BannerServer, exchange, socks5, socksCode } from '../helpers/proxyWire';

describe('managed network proxy: bypass forms are held', () => {
  const allowed = new BannerServer('ALLOWED');
  const forbidden = new BannerServer('INTERNAL-NOT-ALLOWED');
  let A = 0;
  let F = 0;
  let port = 0;
  let proxy: NetProxy;
  /** Every name the proxy asked the resolver, and every address:port it dialled. */
  const asked: string[] = [];
  const dialled: string[] = [];
  let rebindCalls = 0;

  /** As getaddrinfo reads a C string: up to the first NUL; a few test names; an IPv4 literal as itself. */
  const resolve = async (name: string): Promise<string> => {
    asked.push(name);
    const c = name.split('\0')[0]!;
    if (c === 'ok.allowed.test') return '127.0.0.1';
    if (c === 'loop.allowed.test') return '127.0.0.1';
    if (c === 'mapped.allowed.test') return '::ffff:7f00:1';
    if (c === 'meta.allowed.test') return '169.254.169.254';
    if (c === 'net.allowed.test') return '192.0.2.9';
    if (c === 'rebind.allowed.test') return rebindCalls++ === 0 ? '127.0.0.1' : '192.0.2.7';
    if (isIP(c) === 4) return c;
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${c}`), { code: 'ENOTFOUND' });
  };
  const dial = (address: string, p: number): Socket => {
    dialled.push(`${address}:${p}`);
    // A TEST-NET address stands for "somewhere the lists do not allow": the forbidden target.
    if (address.startsWith('192.0.2.')) return createConnection({ host: '127.0.0.1', port: F });
    return createConnection({ host: address, port: p });
  };

  before(async () => {
    A = await allowed.listen();
    F = await forbidden.listen();
    proxy = new NetProxy(new NetPolicy(['*.allowed.test', `127.0.0.1:${A}`], ['deny.allowed.test']), undefined, { resolve, dial });
    port = await proxy.listen({ port: 0 });
  });

  after(() => {
    proxy?.close();
    allowed.close();
    forbidden.close();
  });

  const connectReq = (authority: string, extra = '') => `CONNECT ${authority} HTTP/1.1\r\n${extra}\r\n`;
  const status = (reply: Buffer) => /^HTTP\/1\.1 (\d{3})/.exec(reply.toString('latin1'))?.[1];

  test('positive controls: an allowed name reaches the allowed target by CONNECT, absolute form and SOCKS5', async () => {
    const c = await exchange(port, connectReq(`ok.allowed.test:${A}`, `Host: ok.allowed.test:${A}\r\n`));
    assert.match(c.toString(), /^HTTP\/1\.1 200 Connection Established[\s\S]*ALLOWED$/);
    const g = await exchange(port, `GET http://OK.Allowed.Test.:${A}/x HTTP/1.1\r\nHost: ok.allowed.test:${A}\r\n\r\n`);
    assert.match(g.toString(), /^HTTP\/1\.1 200 OK[\s\S]*ALLOWED$/);
    const s = await exchange(port, socks5('ok.allowed.test', A));
    assert.equal(socksCode(s), 0);
    assert.match(s.toString('latin1'), /ALLOWED$/);
    assert.ok(allowed.hits >= 3);
  });

  /** [label, request bytes, how a refusal looks: an HTTP status or a SOCKS reply code]. */
  const forms = (): Array<[string, string | Buffer, { http: string } | { socks: number } | { raw: number[] }]> => [
    // The report: matched on the raw name, resolved up to the NUL.
    ['CONNECT with a NUL in the name', connectReq(`192.0.2.2\0.allowed.test:${F}`), { http: '400' }],
    ['SOCKS5 domain with a NUL', socks5(`192.0.2.2\0.allowed.test`, F), { socks: 2 }],
    ['absolute form with a NUL', `GET http://192.0.2.2\0.allowed.test:${F}/ HTTP/1.1\r\n\r\n`, { http: '400' }],
    ['SOCKS5 domain, NUL at the end', socks5(`net.allowed.test\0`, F), { socks: 2 }],
    ['SOCKS5 domain with a newline', socks5(`192.0.2.2\n.allowed.test`, F), { socks: 2 }],
    ['SOCKS5 domain, empty', socks5('', F), { socks: 2 }],
    ['SOCKS5 domain, a percent-escape', socks5('192.0.2.2%00.allowed.test', F), { socks: 2 }],
    // IPv4 as getaddrinfo reads it, not as written.
    ...['0x7f.1', '2130706433', '0177.0.0.1', '127.1', '0x7f000001', '127.0.0.1.'].flatMap(
      (h): Array<[string, string | Buffer, { http: string } | { socks: number }]> => [
        [`CONNECT ${h}`, connectReq(`${h}:${F}`), { http: '400' }],
        [`absolute form ${h}`, `GET http://${h}:${F}/ HTTP/1.1\r\n\r\n`, { http: '400' }],
        [`SOCKS5 domain ${h}`, socks5(h, F), { socks: 2 }],
      ],
    ),
    // The loopback target by its address in every spelling: on no list for port F.
    ['CONNECT 127.0.0.1:F', connectReq(`127.0.0.1:${F}`), { http: '403' }],
    ['CONNECT [::ffff:127.0.0.1]:F', connectReq(`[::ffff:127.0.0.1]:${F}`), { http: '403' }],
    ['CONNECT [::ffff:7f00:1]:F', connectReq(`[::ffff:7f00:1]:${F}`), { http: '403' }],
    ['CONNECT [::1]:F', connectReq(`[::1]:${F}`), { http: '403' }],
    ['CONNECT [::127.0.0.1]:F', connectReq(`[::127.0.0.1]:${F}`), { http: '403' }],
    ['SOCKS5 IPv4 127.0.0.1', socks5(Buffer.from([127, 0, 0, 1]), F, 1), { socks: 2 }],
    ['SOCKS5 IPv6 ::ffff:127.0.0.1', socks5(Buffer.from('00000000000000000000ffff7f000001', 'hex'), F, 4), { socks: 2 }],
    ['SOCKS5 IPv6 ::1', socks5(Buffer.from('00000000000000000000000000000001', 'hex'), F, 4), { socks: 2 }],
    ['SOCKS5 domain [::1]', socks5('[::1]', F), { socks: 2 }],
    ['CONNECT [fe80::1%25lo]', connectReq(`[fe80::1%25lo]:${F}`), { http: '400' }],
    // Allowed names that resolve where they may not go.
    ['a name resolving to loopback', connectReq(`loop.allowed.test:${F}`), { http: '403' }],
    ['a name resolving to mapped-IPv6 loopback', connectReq(`mapped.allowed.test:${F}`), { http: '403' }],
    ['SOCKS5 name resolving to mapped-IPv6 loopback', socks5('mapped.allowed.test', F), { socks: 2 }],
    ['a name resolving to the metadata address', connectReq(`meta.allowed.test:${F}`), { http: '403' }],
    // Case, trailing dots and the deny-list.
    ['the deny-list through case and a trailing dot', connectReq(`DENY.Allowed.Test.:${F}`), { http: '403' }],
    ['two trailing dots', connectReq(`net.allowed.test..:${F}`), { http: '400' }],
    ['the bare parent of a wildcard', connectReq(`allowed.test:${F}`), { http: '403' }],
    ['a suffix that only looks like it', connectReq(`net.allowed.test.evil.test:${F}`), { http: '403' }],
    // Host header against the target (and a hidden second one).
    ['CONNECT with another Host', connectReq(`ok.allowed.test:${A}`, `Host: 192.0.2.2:${F}\r\n`), { http: '400' }],
    ['absolute form with another Host', `GET http://ok.allowed.test:${A}/ HTTP/1.1\r\nHost: 127.0.0.1:${F}\r\n\r\n`, { http: '400' }],
    [
      'absolute form with a second Host',
      `GET http://ok.allowed.test:${A}/ HTTP/1.1\r\nHost: ok.allowed.test:${A}\r\nHost: 127.0.0.1:${F}\r\n\r\n`,
      { http: '400' },
    ],
    ['a bare LF hiding a header', `GET http://ok.allowed.test:${A}/ HTTP/1.1\r\nX: a\nHost: 127.0.0.1:${F}\r\n\r\n`, { http: '400' }],
    ['origin form with a Host header', `GET / HTTP/1.1\r\nHost: 127.0.0.1:${F}\r\n\r\n`, { http: '400' }],
    ['userinfo in the URL', `GET http://ok.allowed.test:${A}@127.0.0.1:${F}/ HTTP/1.1\r\n\r\n`, { http: '400' }],
    // Protocols we do not serve.
    [
      'SOCKS4a with a NUL name',
      Buffer.concat([Buffer.from([4, 1, F >> 8, F & 255, 0, 0, 0, 1, 0]), Buffer.from(`192.0.2.2\0.allowed.test\0`, 'latin1')]),
      { raw: [0, 0x5b] },
    ],
    ['SOCKS5 offering only a password', Buffer.from([5, 1, 2]), { raw: [5, 0xff] }],
  ];

  test('every form is refused, in its protocol, and nothing reaches the forbidden target', async () => {
    for (const [label, bytes, want] of forms()) {
      const reply = await exchange(port, bytes);
      if ('http' in want) assert.equal(status(reply), want.http, `${label}: ${JSON.stringify(reply.toString('latin1'))}`);
      else if ('socks' in want) assert.equal(socksCode(reply), want.socks, `${label}: ${reply.toString('hex')}`);
      else assert.deepEqual([...reply.subarray(0, want.raw.length)], want.raw, `${label}: ${reply.toString('hex')}`);
      assert.doesNotMatch(reply.toString('latin1'), /INTERNAL-NOT-ALLOWED/, label);
      assert.equal(forbidden.hits, 0, `${label} reached the forbidden target`);
    }
    assert.deepEqual(
      dialled.filter((d) => d !== `127.0.0.1:${A}`),
      [],
      'only the allowed target was dialled',
    );
    for (const name of asked) assert.match(name, /^[a-z0-9.-]+$/, `the resolver was asked ${JSON.stringify(name)}`);
  });

  test('DNS rebinding: the address connected to is the one checked (one lookup per request)', async () => {
    const before = asked.length;
    rebindCalls = 0;
    const r = await exchange(port, connectReq(`rebind.allowed.test:${A}`));
    assert.match(r.toString(), /^HTTP\/1\.1 200[\s\S]*ALLOWED$/);
    assert.deepEqual(asked.slice(before), ['rebind.allowed.test']);
    assert.equal(dialled.at(-1), `127.0.0.1:${A}`);
    assert.equal(forbidden.hits, 0);
  });

  test('a refused destination is recorded by its canonical name; a malformed one is not a denial', async () => {
    const mark = proxy.mark();
    await exchange(port, connectReq(`DENY.Allowed.Test.:${F}`));
    await exchange(port, connectReq(`192.0.2.2\0.allowed.test:${F}`));
    assert.deepEqual(
      proxy.denialsSince(mark).map((d) => d.target),
      [`deny.allowed.test:${F}`],
    );
  });
});
