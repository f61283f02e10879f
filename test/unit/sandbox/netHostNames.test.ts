/**
 * The managed network's host names (security issue 20, item 3): every destination is made
 * canonical before any rule is looked at, so what the rules match is byte for byte what the proxy
 * resolves. The reported bypass was `192.0.2.2\0.allowed.test`: `*.allowed.test` matched the raw
 * text, getaddrinfo stopped at the NUL. The table keeps every bypass form tried (NUL and other
 * bytes, IP encodings getaddrinfo reads as addresses, trailing dots, case, IPv6 spellings) held.
 * The same forms go through the real proxy in test/integration/netProxyBypass.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseProxyRequest } from '../../../src/server/netProxyWire';
import { canonicalHost, isSpecialAddress, NetPolicy, NetRuleError, normalizeIp, parseNetRule } from '../../../src/server/netProxyRules';

const policy = new NetPolicy(['*.allowed.test', 'exact.test', '127.0.0.1:8080', '[::1]:8081'], ['deny.allowed.test']);

/** [host as sent, port, what the policy must say: 'invalid' (not a host at all), 'denied', or the canonical host it allows]. */
const BY_NAME: Array<[string, number, 'invalid' | 'denied' | string]> = [
  // The report, and other bytes a C resolver stops at or a parser splits on.
  ['192.0.2.2\0.allowed.test', 443, 'invalid'],
  ['x.allowed.test\0', 443, 'invalid'],
  ['\0x.allowed.test', 443, 'invalid'],
  ['192.0.2.2\0', 443, 'invalid'],
  ['x\x01.allowed.test', 443, 'invalid'],
  ['x\t.allowed.test', 443, 'invalid'],
  ['x\r\n.allowed.test', 443, 'invalid'],
  ['x .allowed.test', 443, 'invalid'],
  [' x.allowed.test', 443, 'invalid'],
  ['x%00.allowed.test', 443, 'invalid'],
  ['evil.test#.allowed.test', 443, 'invalid'],
  ['evil.test/.allowed.test', 443, 'invalid'],
  ['evil.test?.allowed.test', 443, 'invalid'],
  ['evil.test\\.allowed.test', 443, 'invalid'],
  ['evil@x.allowed.test', 443, 'invalid'],
  ['evil.test:80.allowed.test', 443, 'invalid'],
  ['x_y.allowed.test', 443, 'invalid'],
  ['\uff58.allowed.test', 443, 'invalid'], // fullwidth x
  ['x.allowed.tes\u0442', 443, 'invalid'], // Cyrillic te
  ['x.allowed\u3002test', 443, 'invalid'], // ideographic full stop
  ['-x.allowed.test', 443, 'invalid'],
  ['x-.allowed.test', 443, 'invalid'],
  ['a..allowed.test', 443, 'invalid'],
  ['.x.allowed.test', 443, 'invalid'],
  ['x.allowed.test..', 443, 'invalid'],
  [`${'a'.repeat(64)}.allowed.test`, 443, 'invalid'],
  [`${'a.'.repeat(120)}x.allowed.test`, 443, 'invalid'], // 254 characters
  ['', 443, 'invalid'],
  ['*.allowed.test', 443, 'invalid'],
  // IPv4 spelled as getaddrinfo (inet_aton) reads it, but not as a.b.c.d.
  ['0x7f.1', 8080, 'invalid'],
  ['0x7f000001', 8080, 'invalid'],
  ['2130706433', 8080, 'invalid'],
  ['017700000001', 8080, 'invalid'],
  ['0177.0.0.1', 8080, 'invalid'],
  ['127.1', 8080, 'invalid'],
  ['127.0.1', 8080, 'invalid'],
  ['127.000.000.001', 8080, 'invalid'],
  ['0x7f.0x0.0x0.0x1', 8080, 'invalid'],
  ['1.2.3.04', 8080, 'invalid'],
  ['127.0.0.1.', 8080, 'invalid'],
  ['4294967295', 8080, 'invalid'],
  ['x.allowed.0x7f', 443, 'invalid'],
  ['x.allowed.1', 443, 'invalid'],
  // IPv6: zone ids and broken brackets are not addresses; every spelling of one address is it.
  ['fe80::1%lo', 443, 'invalid'],
  ['[fe80::1%25lo]', 443, 'invalid'],
  ['[::1', 8081, 'invalid'],
  ['::1]', 8081, 'invalid'],
  ['[127.0.0.1]', 8080, 'invalid'],
  ['[x.allowed.test]', 443, 'invalid'],
  ['[::1]:8081', 8081, 'invalid'],
  ['::1', 8081, '::1'],
  ['[::1]', 8081, '::1'],
  ['0:0:0:0:0:0:0:1', 8081, '::1'],
  ['[0000:0000:0000:0000:0000:0000:0000:0001]', 8081, '::1'],
  ['::1', 8080, 'denied'],
  ['::ffff:127.0.0.1', 8080, '127.0.0.1'],
  ['[::ffff:7f00:1]', 8080, '127.0.0.1'],
  ['0:0:0:0:0:FFFF:7F00:1', 8080, '127.0.0.1'],
  ['::ffff:127.0.0.1', 9, 'denied'],
  ['::127.0.0.1', 8080, 'denied'],
  ['127.0.0.1', 9, 'denied'],
  ['127.0.0.2', 8080, 'denied'],
  // Case and one trailing dot are the same name; the deny-list wins through both.
  ['X.ALLOWED.TEST', 443, 'x.allowed.test'],
  ['X.Allowed.Test.', 443, 'x.allowed.test'],
  ['DENY.allowed.test.', 443, 'denied'],
  ['Deny.Allowed.Test', 443, 'denied'],
  ['allowed.test', 443, 'denied'],
  ['xallowed.test', 443, 'denied'],
  ['x.allowed.test.evil.test', 443, 'denied'],
  ['127.0.0.1.allowed.test', 443, '127.0.0.1.allowed.test'], // a name: what it resolves to is checked by address
  ['exact.test', 80, 'exact.test'],
  ['EXACT.TEST.', 80, 'exact.test'],
  ['a.exact.test', 80, 'denied'],
  ['x.allowed.test', 0, 'invalid'],
  ['x.allowed.test', 65536, 'invalid'],
];

describe('managed network: host names are canonical before any rule', () => {
  for (const [host, port, want] of BY_NAME) {
    test(`${JSON.stringify(host)}:${port} → ${want}`, () => {
      const v = policy.check(host, port);
      if (want === 'invalid') assert.deepEqual([v.ok, !v.ok && v.invalid], [false, true], JSON.stringify(v));
      else if (want === 'denied') assert.deepEqual([v.ok, !v.ok && v.invalid], [false, undefined], JSON.stringify(v));
      else assert.deepEqual(v, { ok: true, host: want, ip: canonicalHost(want).ok && /^[\d.]+$|:/.test(want) });
    });
  }

  test('the reported name is refused as not a host name, before the allow-list is looked at', () => {
    const v = policy.check('192.0.2.2\0.allowed.test', 443);
    assert.equal(v.ok, false);
    assert.match(!v.ok ? v.reason : '', /not a host name/);
  });

  test('a permitted name may not resolve to a special address in any spelling (unless that literal is listed)', () => {
    const names = new NetPolicy(['*.allowed.test', '127.0.0.1:8080']);
    for (const a of [
      '127.0.0.1',
      '127.9.9.9',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '0:0:0:0:0:ffff:7f00:1',
      '::7f00:1',
      '::',
      '0.0.0.0',
      '169.254.169.254',
      '::ffff:169.254.169.254',
      'fe80::1',
      'FE80::1',
      'fd00:ec2::254',
      '100.100.100.200',
    ]) {
      assert.equal(isSpecialAddress(a), true, a);
      assert.equal(names.checkResolved(a, 9).ok, false, a);
    }
    for (const a of ['10.0.0.1', '2001:db8::1', '::ffff:10.0.0.1']) assert.equal(names.checkResolved(a, 9).ok, true, a);
    for (const a of ['x.test', 'fe80::1%lo', '127.1', '']) assert.equal(names.checkResolved(a, 9).ok, false, `not an address: ${a}`);
    assert.equal(names.checkResolved('::ffff:7f00:1', 8080).ok, true, 'the listed literal, spelled as mapped IPv6');
    assert.equal(normalizeIp('0:0:0:0:0:ffff:a9fe:a9fe'), '169.254.169.254');
  });

  test('rules follow the same grammar: a rule no destination could match is refused', () => {
    for (const bad of ['0x7f.1', '2130706433', '127.1', 'x_y.test', 'fe80::1%lo', '[fe80::1%lo]', 'a..b', 'x.test\0', '*.1'])
      assert.throws(() => parseNetRule(bad), NetRuleError, JSON.stringify(bad));
    assert.deepEqual(parseNetRule('[::ffff:127.0.0.1]:80'), { host: '127.0.0.1', wildcard: false, ip: true, port: 80 });
  });
});

describe('managed network: the proxy request head is parsed strictly', () => {
  const ok = (head: string) => {
    const r = parseProxyRequest(head);
    assert.ok(!('error' in r), JSON.stringify(r));
    return r;
  };
  const bad = (head: string, why: RegExp) => {
    const r = parseProxyRequest(head);
    assert.ok('error' in r, `accepted: ${JSON.stringify(head)}`);
    assert.match(r.error, why);
  };

  test('CONNECT authority and the Host header', () => {
    assert.deepEqual(ok('CONNECT X.Allowed.Test:443 HTTP/1.1\r\nHost: x.allowed.test:443'), {
      method: 'CONNECT',
      host: 'x.allowed.test',
      port: 443,
      path: '',
      version: 'HTTP/1.1',
      headers: ['Host: x.allowed.test:443'],
    });
    assert.equal(ok('CONNECT [::1]:8081 HTTP/1.1').host, '::1');
    bad('CONNECT x.allowed.test:443 HTTP/1.1\r\nHost: evil.test:443', /Host header names evil\.test/);
    bad('CONNECT x.allowed.test:443 HTTP/1.1\r\nHost: x.allowed.test:80', /Host header/);
    bad('CONNECT x.allowed.test:443 HTTP/1.1\r\nHost: x.allowed.test:443\r\nhost: evil.test:443', /more than one Host/);
    bad('CONNECT x.allowed.test HTTP/1.1', /no port/);
    bad('CONNECT x.allowed.test:0 HTTP/1.1', /1-65535/);
    bad('CONNECT x.allowed.test:99999 HTTP/1.1', /not host:port|1-65535/);
    bad('CONNECT 192.0.2.2\0.allowed.test:443 HTTP/1.1', /control character/);
    bad('CONNECT 0x7f.1:443 HTTP/1.1', /non-canonical/);
    bad('CONNECT [fe80::1%25lo]:443 HTTP/1.1', /not a host name or IP/);
  });

  test('absolute form: the URL authority is the destination, parsed as written (no URL-parser rewriting)', () => {
    const r = ok('GET http://x.allowed.test?q=1 HTTP/1.1\r\nHost: X.ALLOWED.TEST\r\nAccept: */*');
    assert.deepEqual([r.host, r.port, r.path], ['x.allowed.test', 80, '/?q=1']);
    assert.equal(ok('GET http://x.allowed.test HTTP/1.0').path, '/');
    assert.equal(ok('GET http://[::1]:8081/a HTTP/1.1\r\nHost: [::1]:8081').host, '::1');
    bad('GET http://0x7f.1/ HTTP/1.1', /non-canonical/); // WHATWG URL would have made it 127.0.0.1
    bad('GET http://2130706433/ HTTP/1.1', /non-canonical/);
    bad('GET http://a%00b.allowed.test/ HTTP/1.1', /not a host name/);
    bad('GET http://user@x.allowed.test/ HTTP/1.1', /user name/);
    bad('GET https://x.allowed.test/ HTTP/1.1', /https: is not proxied/);
    bad('GET / HTTP/1.1\r\nHost: x.allowed.test', /absolute form/);
    bad('GET http://x.allowed.test:8080/ HTTP/1.1\r\nHost: x.allowed.test', /Host header names/);
    bad('GET http://x.allowed.test/ HTTP/1.1\r\nHost: evil.test', /Host header names evil\.test/);
  });

  test('no control characters, no folding, no malformed header lines (a hidden second Host)', () => {
    bad('GET http://x.allowed.test/ HTTP/1.1\r\nX: a\nHost: evil.test', /control character/);
    bad('GET http://x.allowed.test/ HTTP/1.1\r\nX: a\rHost: evil.test', /control character/);
    bad('GET http://x.allowed.test/ HTTP/1.1\r\n Host: evil.test', /not a header line/);
    bad('GET http://x.allowed.test/ HTTP/1.1\r\nHost : evil.test', /not a header line/);
    bad('GET  http://x.allowed.test/ HTTP/1.1', /not a request line/);
    bad('GET http://x.allowed.test/ HTTP/1.1 extra', /not a request line/);
    bad('GET http://x.allowed.test/\u00e9 HTTP/1.1', /not a request line/);
    assert.ok(ok('GET http://x.allowed.test/ HTTP/1.1\r\nX-Tab:\ta'));
  });
});
