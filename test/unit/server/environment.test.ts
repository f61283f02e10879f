import assert from 'node:assert/strict';
import { test } from 'node:test';
import { environmentInfo, userShell } from '../../../src/server/environment';

test('the shell is $SHELL when it is set', () => {
  assert.equal(
    userShell({ SHELL: '/usr/bin/zsh' }, () => '/bin/bash'),
    '/usr/bin/zsh',
  );
});

test('without $SHELL the login shell of the user database is used (a server under systemd or CI)', () => {
  assert.equal(
    userShell({}, () => '/bin/bash'),
    '/bin/bash',
  );
});

test('no usable login shell falls back to /bin/sh', () => {
  assert.equal(
    userShell({}, () => null),
    '/bin/sh',
  );
  assert.equal(
    userShell({}, () => 'bash'),
    '/bin/sh',
  );
  assert.equal(
    userShell({}, () => {
      throw new Error('ENOENT: no such user');
    }),
    '/bin/sh',
  );
});

test('environment/info names the shell it picked, by path and name', () => {
  const saved = process.env.SHELL;
  process.env.SHELL = '/bin/bash';
  try {
    assert.deepEqual(environmentInfo({ sandbox: false }).shell, { name: 'bash', path: '/bin/bash' });
  } finally {
    if (saved === undefined) delete process.env.SHELL;
    else process.env.SHELL = saved;
  }
});
