import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HelpRequested, parseRunArgs, runArgv, UsageError } from '../../../src/cli/runArgs';

test('parseRunArgs: no executor option means the bundled server; the command starts at the first word that is no option', () => {
  const a = parseRunArgs(['--verbose', 'ls', '-la', '--', 'x']);
  assert.equal(a.bundled, true);
  assert.equal(a.verbose, true);
  assert.equal(a.stdin, true);
  assert.equal(a.tty, false);
  assert.deepEqual(a.argv, ['ls', '-la', '--', 'x']);
  assert.deepEqual(parseRunArgs(['--', '-x', 'y']).argv, ['-x', 'y']);
});

test('parseRunArgs: values as the next argument or after =, lists split at commas', () => {
  const a = parseRunArgs([
    '--ssh',
    'me@devbox:2222',
    '--ssh-option=ProxyJump=bastion',
    '--ssh-option',
    'BatchMode=yes',
    '--cwd=/srv',
    '--tty',
    '--no-stdin',
    '--deadline-ms',
    '0',
    '--session-ttl-ms=5000',
    '--sandbox',
    'workspace-write',
    '--sandbox-network-allow',
    'github.com, *.npmjs.org',
    '--sandbox-network-allow=pypi.org',
    '--sandbox-network-deny=evil.github.com',
    'make',
  ]);
  assert.equal(a.bundled, false);
  assert.equal(a.ssh, 'me@devbox:2222');
  assert.deepEqual(a.sshOptions, ['ProxyJump=bastion', 'BatchMode=yes']);
  assert.equal(a.cwd, '/srv');
  assert.equal(a.tty, true);
  assert.equal(a.stdin, false);
  assert.equal(a.deadlineMs, 0);
  assert.equal(a.sessionTtlMs, 5000);
  assert.equal(a.sandbox, 'workspace-write');
  assert.deepEqual(a.networkAllow, ['github.com', '*.npmjs.org', 'pypi.org']);
  assert.deepEqual(a.networkDeny, ['evil.github.com']);
  assert.deepEqual(a.argv, ['make']);
  const url = parseRunArgs(['--url', 'ws://10.0.0.5:4500', '--token-file', '/t', 'true']);
  assert.equal(url.bundled, false);
  assert.equal(url.url, 'ws://10.0.0.5:4500');
  assert.equal(url.tokenFile, '/t');
});

test('parseRunArgs: mistakes are usage errors that say what to do', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--url', 'ws://a', '--bundled', 'x'], /^use one of --url, --bundled and --ssh$/],
    [['--ssh-option', 'X=y', 'x'], /^--ssh-option needs --ssh$/],
    [['--ssh', '-oProxyCommand=x', 'x'], /not an SSH destination/],
    [['--verbose'], /^no command given$/],
    [['--sandbox-network', 'x'], /^--sandbox-network needs --sandbox$/],
    [['--sandbox-network-allow', 'a.com', 'x'], /^--sandbox-network-allow needs --sandbox$/],
    [['--sandbox', 'read-only', '--sandbox-network', '--sandbox-network-allow', 'a.com', 'x'], /^use either --sandbox-network/],
    [['--sandbox', 'read-only', '--sandbox-network-deny', 'a.com', 'x'], /^--sandbox-network-deny needs --sandbox-network-allow$/],
    [['--sandbox', 'none', 'x'], /^--sandbox must be read-only, workspace-write or full-access, got none$/],
    [['--deadline-ms', '-1', 'x'], /^--deadline-ms must be 0 \(never give up\) or a positive integer, got -1$/],
    [['--session-ttl-ms', '0', 'x'], /^--session-ttl-ms must be a positive integer, got 0$/],
    [['--cwd'], /^--cwd needs a value$/],
    [['--nope=1', 'x'], /^unknown option --nope=1$/],
    [['-'], /^unknown option -$/],
  ];
  for (const [args, message] of cases)
    assert.throws(
      () => parseRunArgs(args),
      (e: Error) => e instanceof UsageError && message.test(e.message),
      args.join(' '),
    );
  assert.throws(() => parseRunArgs(['-h']), HelpRequested);
  assert.throws(() => parseRunArgs(['--help', 'x']), HelpRequested);
});

test('runArgv: parsing what it prints gives the same arguments back', () => {
  const cases: string[][] = [
    ['echo', 'hi'],
    ['--ssh', 'me@devbox', '--ssh-option', 'A=b', '--tty', '--cwd', '/w', '--no-stdin', '--', '-x'],
    ['--url', 'ws://h:1', '--token-file', '/t', '--deadline-ms', '0', '--session-ttl-ms', '9', '--verbose', 'x'],
    ['--sandbox', 'read-only', '--sandbox-network-allow', 'a.com,b.com', '--sandbox-network-deny', 'c.a.com', 'x'],
    ['--sandbox', 'full-access', '--sandbox-network', 'x'],
  ];
  for (const args of cases) {
    const parsed = parseRunArgs(args);
    assert.deepEqual(parseRunArgs(runArgv(parsed)), parsed, args.join(' '));
  }
});
