import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CommandMarks,
  encodeOsc633,
  escapeOscValue,
  lastMarkedCwd,
  unescapeOscValue,
  integrationDir,
  shellKind,
  withShellIntegration,
} from '../../../src/core/shellIntegration';

test('OSC 633 values escape backslash, semicolon and control characters as VS Code expects', () => {
  assert.equal(escapeOscValue('a;b\\c\nd\x1be é'), 'a\\x3bb\\\\c\\x0ad\\x1be é');
  assert.equal(encodeOsc633({ kind: 'A' }), '\x1b]633;A\x07');
  assert.equal(encodeOsc633({ kind: 'D', exitCode: 2 }), '\x1b]633;D;2\x07');
  assert.equal(encodeOsc633({ kind: 'D' }), '\x1b]633;D\x07');
  assert.equal(encodeOsc633({ kind: 'E', commandLine: 'echo a; ls' }), '\x1b]633;E;echo a\\x3b ls\x07');
  assert.equal(encodeOsc633({ kind: 'cwd', path: '/w/p' }), '\x1b]633;P;Cwd=/w/p\x07');
});

test('a command terminal: cwd, prompt, command line and executed before the first text; finished with the exit code once', () => {
  const marks = new CommandMarks('make', '/w');
  const first = marks.wrap('$ make\r\n', false, undefined);
  assert.equal(first, '\x1b]633;P;Cwd=/w\x07\x1b]633;A\x07\x1b]633;B\x07\x1b]633;E;make\x07\x1b]633;C\x07$ make\r\n');
  assert.equal(marks.wrap('out\r\n', false, undefined), 'out\r\n');
  assert.equal(marks.wrap('[exit code 3]', true, 3), '\x1b]633;D;3\x07[exit code 3]');
  assert.equal(marks.wrap('more', true, 3), 'more');
});

test('bash gets --rcfile, zsh gets ZDOTDIR (through a start wrapper), in a versioned folder under the executor user cache', () => {
  assert.equal(shellKind('/usr/bin/bash'), 'bash');
  assert.equal(shellKind('/bin/zsh'), 'zsh');
  assert.equal(shellKind('/bin/sh'), undefined);
  const dir = integrationDir('/home/me', 'bash');
  assert.match(dir, /^\/home\/me\/\.cache\/exec-bridge\/shell-integration\/bash-[0-9a-f]{16}$/);
  const opts = { argv: ['/bin/bash', '-i'], cwd: '/w', env: { TERM: 'xterm' }, tty: true };
  assert.deepEqual(withShellIntegration(opts, dir, 'bash').argv, ['/bin/bash', '--rcfile', `${dir}/bashrc`, '-i']);
  const z = withShellIntegration({ ...opts, argv: ['/bin/zsh', '-i'] }, '/d', 'zsh');
  // A zsh without startup files keeps the user's ZDOTDIR for our files, points ZDOTDIR at ours, becomes the shell.
  const start = 'export EXEC_BRIDGE_USER_ZDOTDIR="${ZDOTDIR-}" ZDOTDIR="$1"; exec "$0" -i';
  assert.deepEqual([z.argv, z.env], [['/bin/zsh', '-f', '-c', start, '/bin/zsh', '/d'], { TERM: 'xterm' }]);
});

test('the last P;Cwd mark in terminal text gives the cwd, unescaped; none or a relative one gives nothing', () => {
  const dir = '/srv/a;b\\c d';
  assert.equal(unescapeOscValue(escapeOscValue(dir)), dir);
  const text = `${encodeOsc633({ kind: 'cwd', path: '/old' })}$ cd x\r\n${encodeOsc633({ kind: 'cwd', path: dir })}${encodeOsc633({ kind: 'A' })}$ `;
  assert.equal(lastMarkedCwd(text), dir);
  assert.equal(lastMarkedCwd('plain output'), undefined);
  assert.equal(lastMarkedCwd('\x1b]633;P;Cwd=relative\x07'), undefined);
  assert.equal(lastMarkedCwd('\x1b]633;P;Cwd=/cut-off'), undefined, 'an unterminated mark is not taken');
});
