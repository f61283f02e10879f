import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Layout } from '../../../src/server/sandbox/layout';
import { seatbeltArgs, seatbeltProfile } from '../../../src/server/sandbox/seatbelt';

const WORKSPACE: Layout = {
  root: 'ro',
  mounts: [],
  writableRoots: ['/Users/me/ws', '/private/tmp'],
  protectedPaths: ['/Users/me/ws/.git', '/Users/me/ws/.vscode', '/Users/me/ws/.codex'],
  tmp: 'shared',
};

test('seatbelt: deny by default, read everything, write only the roots minus carve-outs, network off', () => {
  const { profile, params } = seatbeltProfile({ layout: WORKSPACE, network: 'restricted' });
  assert.ok(profile.startsWith('(version 1)\n(deny default)\n'));
  assert.ok(profile.includes('(allow file-read*)\n'));
  assert.ok(
    profile.includes(
      '(allow file-write* (require-all (subpath (param "WRITABLE_ROOT_0")) (require-not (subpath (param "WRITABLE_ROOT_0_EXCLUDED_0")))' +
        ' (require-not (subpath (param "WRITABLE_ROOT_0_EXCLUDED_1"))) (require-not (subpath (param "WRITABLE_ROOT_0_EXCLUDED_2")))))',
    ),
  );
  assert.ok(profile.includes('(allow file-write* (subpath (param "WRITABLE_ROOT_1")))'));
  assert.ok(!/network-outbound|network-inbound|system-socket/.test(profile), 'network off: nothing allowed');
  assert.ok(!profile.includes('/Users/me'), 'paths only travel as parameters');
  assert.deepEqual(params, [
    ['WRITABLE_ROOT_0_EXCLUDED_0', '/Users/me/ws/.git'],
    ['WRITABLE_ROOT_0_EXCLUDED_1', '/Users/me/ws/.vscode'],
    ['WRITABLE_ROOT_0_EXCLUDED_2', '/Users/me/ws/.codex'],
    ['WRITABLE_ROOT_0', '/Users/me/ws'],
    ['WRITABLE_ROOT_1', '/private/tmp'],
  ]);
  // Balanced parentheses: a profile that does not parse would fail closed at runtime, but still.
  let depth = 0;
  for (const ch of profile.replace(/"[^"]*"|;[^\n]*/g, '')) {
    depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
    assert.ok(depth >= 0);
  }
  assert.equal(depth, 0);
});

test('seatbelt: read-only writes nothing; network on allows sockets; a proxy allows only its loopback ports', () => {
  const ro = seatbeltProfile({
    layout: { root: 'ro', mounts: [], writableRoots: [], protectedPaths: [], tmp: 'private' },
    network: 'enabled',
  }).profile;
  assert.ok(!ro.includes('file-write*') || !/\(allow file-write\*/.test(ro));
  assert.ok(ro.includes('(allow network-outbound)') && ro.includes('(allow network-inbound)') && ro.includes('(allow system-socket)'));
  const proxied = seatbeltProfile({ layout: WORKSPACE, network: 'restricted', proxyLoopbackPorts: [3128, 3128, 8080, 0, 70000] }).profile;
  assert.ok(proxied.includes('(allow network-outbound (remote ip "localhost:3128") (remote ip "localhost:8080"))'));
  assert.ok(!proxied.includes('(allow network-outbound)\n'));
});

test('seatbelt: full disk, denials and restricted read', () => {
  const full = seatbeltProfile({
    layout: { root: 'rw', mounts: [], writableRoots: ['/'], protectedPaths: [], tmp: 'shared' },
    network: 'restricted',
    deniedPaths: ['/Users/me/.ssh'],
  });
  assert.ok(full.profile.includes('(allow file-write*)\n'));
  assert.ok(full.profile.includes('(deny file-read* file-write* (subpath (param "DENIED_0")))'));
  assert.ok(full.profile.indexOf('(deny file-read* file-write*') > full.profile.indexOf('(allow file-write*)'), 'later rules win in SBPL');
  const narrow = seatbeltProfile({
    layout: { root: 'empty', mounts: [], writableRoots: [], protectedPaths: [], tmp: 'private' },
    network: 'restricted',
    readableRoots: ['/Users/me/ws'],
  });
  assert.ok(!narrow.profile.includes('(allow file-read*)\n'));
  assert.ok(narrow.profile.includes('(subpath (param "READABLE_ROOT_0"))'));
  assert.deepEqual(seatbeltArgs(narrow, ['/bin/ls', '-l']).slice(2), ['-DREADABLE_ROOT_0=/Users/me/ws', '--', '/bin/ls', '-l']);
  assert.equal(seatbeltArgs(narrow, ['/bin/ls'])[0], '-p');
});
