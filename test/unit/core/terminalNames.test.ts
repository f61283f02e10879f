import assert from 'node:assert/strict';
import { test } from 'node:test';
import { terminalName } from '../../../src/core/terminalNames';

test('a tab is named by its command, then its executor; a shell by its program', () => {
  assert.equal(terminalName({ kind: 'command', commandLine: 'npm test', executor: 'bundled' }), 'npm test · bundled');
  assert.equal(terminalName({ kind: 'shell', commandLine: '/usr/bin/bash', executor: 'devbox' }), 'bash · devbox');
  assert.equal(
    terminalName({ kind: 'command', commandLine: 'make', executor: 'devbox' }, { unsandboxed: true }),
    'make · devbox (unsandboxed)',
  );
});

test('a long or multi-line command is cut to one short line', () => {
  const name = terminalName({ kind: 'command', commandLine: `for i in 1 2 3\ndo echo $i; done; ${'x'.repeat(80)}`, executor: 'b' });
  assert.equal(name, `for i in 1 2 3 do echo $i; done; xxxxxx… · b`);
  assert.ok(!name.includes('\n'));
  assert.ok(!name.startsWith('Exec Bridge'));
});
