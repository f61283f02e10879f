import assert from 'node:assert/strict';
import { test } from 'node:test';
import { denialText, shellFor } from '../../../src/cli/mcpTools';

test('shellFor: the login shell when it is a POSIX one, else /bin/sh', () => {
  assert.equal(shellFor('/bin/bash'), '/bin/bash');
  assert.equal(shellFor('/usr/bin/zsh'), '/usr/bin/zsh');
  assert.equal(shellFor('/usr/bin/fish'), '/bin/sh');
  assert.equal(shellFor(''), '/bin/sh');
  assert.equal(shellFor(undefined), '/bin/sh');
});

test('denialText: what was blocked, then re-run only if the user allowed it, or why this server will not', () => {
  const fs = denialText('touch /etc/x', { exitCode: 1 }, 'workspace-write, network off', true);
  assert.equal(
    fs,
    'blocked by the sandbox: `touch /etc/x` ended with exit code 1 because the sandbox (workspace-write, network off) stopped something it tried; re-run with unsandboxed: true only if the user allowed it.',
  );
  const net = denialText(
    'curl https://x.org',
    { exitCode: 56, sandboxDeniedTarget: 'x.org:443' },
    'workspace-write, network only github.com',
    false,
  );
  assert.match(net, /^blocked by the sandbox: the network allow-list has no x\.org:443 /);
  assert.match(net, /started without --allow-unsandboxed/);
  assert.doesNotMatch(net, /re-run with unsandboxed: true/);
});
