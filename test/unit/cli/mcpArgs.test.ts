import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MCP_SESSION_TTL_MS, parseMcpArgs } from '../../../src/cli/mcpArgs';
import { HelpRequested, UsageError } from '../../../src/cli/runArgs';

test('parseMcpArgs: no executor means the bundled one, in our directory, sandboxed workspace-write without the network', () => {
  const a = parseMcpArgs([], '/work/proj');
  assert.deepEqual(a.executors, [{ config: { kind: 'bundled', name: 'bundled', cwd: '/work/proj' } }]);
  assert.deepEqual(a.sandbox, { policy: 'workspace-write', network: false });
  assert.equal(a.allowUnsandboxed, false);
  assert.equal(a.sessionTtlMs, DEFAULT_MCP_SESSION_TTL_MS);
  assert.equal(a.maxOutputBytes, DEFAULT_MAX_OUTPUT_BYTES);
});

test('parseMcpArgs: several executors, the first the default; per-executor options follow theirs', () => {
  const a = parseMcpArgs(
    [
      '--url',
      'ws://10.0.0.5:4500',
      '--token-file',
      '/t',
      '--cwd',
      '/srv/app',
      '--ssh',
      'me@devbox',
      '--ssh-option',
      'ProxyJump=bastion',
      '--name',
      'dev',
      '--bundled',
      '--cwd',
      'sub',
      '--stdio',
      'docker exec -i box exec-bridge serve --listen stdio',
      '--url=ws://10.0.0.5:4500',
    ],
    '/work/proj',
  );
  assert.deepEqual(
    a.executors.map((e) => e.config),
    [
      { kind: 'websocket', name: '10.0.0.5:4500', url: 'ws://10.0.0.5:4500', tokenSecret: '10.0.0.5:4500', cwd: '/srv/app' },
      { kind: 'ssh', name: 'dev', ssh: 'me@devbox', sshOptions: ['ProxyJump=bastion'] },
      { kind: 'bundled', name: 'bundled', cwd: '/work/proj/sub' },
      { kind: 'stdio', name: 'docker', command: ['docker', 'exec', '-i', 'box', 'exec-bridge', 'serve', '--listen', 'stdio'] },
      { kind: 'websocket', name: '10.0.0.5:4500-2', url: 'ws://10.0.0.5:4500', tokenSecret: '10.0.0.5:4500-2' },
    ],
  );
  assert.equal(a.executors[0]!.tokenFile, '/t');
  assert.equal(a.executors[4]!.tokenFile, undefined);
});

test('parseMcpArgs: sandbox, unsandboxed, TTL, output bound', () => {
  const a = parseMcpArgs([
    '--sandbox',
    'read-only',
    '--sandbox-network-allow',
    'github.com, *.npmjs.org',
    '--sandbox-network-allow=pypi.org',
    '--allow-unsandboxed',
    '--session-ttl-ms',
    '5000',
    '--max-output-bytes',
    '4096',
    '--verbose',
  ]);
  assert.deepEqual(a.sandbox, { policy: 'read-only', network: false, networkAllow: ['github.com', '*.npmjs.org', 'pypi.org'] });
  assert.equal(a.allowUnsandboxed, true);
  assert.equal(a.sessionTtlMs, 5000);
  assert.equal(a.maxOutputBytes, 4096);
  assert.equal(a.verbose, true);
  assert.deepEqual(parseMcpArgs(['--sandbox', 'full-access', '--sandbox-network']).sandbox, { policy: 'full-access', network: true });
});

test('parseMcpArgs: mistakes are usage errors that say what to do', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--cwd', '/x'], /--cwd belongs to an executor: put it after --bundled, --url, --ssh or --stdio/],
    [['--url', 'http://x'], /--url must start with ws:\/\/ or wss:\/\//],
    [['--ssh', '-oProxyCommand=x'], /not an SSH destination/],
    [['--bundled', '--bundled'], /--bundled is given twice/],
    [['--bundled', '--name', 'x'], /always named bundled/],
    [['--bundled', '--token-file', '/t'], /--token-file belongs to --url/],
    [['--url', 'ws://a', '--ssh-option', 'X=y'], /--ssh-option belongs to --ssh/],
    [['--url', 'ws://a', '--cwd', 'rel'], /--cwd of a remote executor must be an absolute path/],
    [['--url', 'ws://a', '--name', 'x', '--url', 'ws://b', '--name', 'x'], /two executors are named x/],
    [['--sandbox', 'none'], /--sandbox must be read-only, workspace-write or full-access/],
    [['--sandbox-network', '--sandbox-network-allow', 'a.com'], /either --sandbox-network .* or --sandbox-network-allow/],
    [['--session-ttl-ms', '0'], /--session-ttl-ms must be an integer of at least 1/],
    [['--max-output-bytes', '100'], /--max-output-bytes must be an integer of at least 1024/],
    [['--max-output-bytes', '2000000'], /--max-output-bytes may be at most 1048576 \(1 MiB\)/],
    [['--stdio', '  '], /--stdio needs a command/],
    [['--url'], /--url needs a value/],
    [['--nope'], /unknown option --nope/],
  ];
  for (const [args, message] of cases)
    assert.throws(
      () => parseMcpArgs(args, '/w'),
      (e: Error) => e instanceof UsageError && message.test(e.message),
      args.join(' '),
    );
  assert.throws(() => parseMcpArgs(['--help']), HelpRequested);
});
