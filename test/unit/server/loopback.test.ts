import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackHost } from '../../../src/server/execServer';

test('isLoopbackHost: localhost, IPv4 literals in 127.0.0.0/8 and ::1 in any spelling', () => {
  for (const h of [
    'localhost',
    'LocalHost',
    '127.0.0.1',
    '127.255.255.254',
    '127.1.2.3',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '0::1',
    '[0000::0001]',
  ])
    assert.equal(isLoopbackHost(h), true, h);
});

test('isLoopbackHost: host names that merely start with 127., other addresses and malformed literals are not loopback', () => {
  for (const h of [
    '127.x.example',
    '127.0.0.1.example',
    '127.evil.com',
    '127.',
    '127.0.0',
    '127.0.0.256',
    '127.0.0.01',
    '1127.0.0.1',
    '128.0.0.1',
    '0.0.0.0',
    '::',
    '::2',
    '[::1]/x[',
    '::1]',
    'example.com',
    'localhost.example',
    '',
  ]) {
    assert.equal(isLoopbackHost(h), false, h);
  }
});
