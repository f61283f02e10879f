import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  describeSshFailure,
  parseSshTarget,
  remoteCommand,
  removeHostKeyCommand,
  sshArgs,
  sshCommandLine,
} from '../../../src/client/sshConnector';
import { isRelayCommand } from '../../../src/client/connectors';
import { parseExecutors } from '../../../src/core/executorConfig';

test('parseSshTarget: [user@]host[:port], IPv6 in brackets; options-looking hosts refused', () => {
  assert.deepEqual(parseSshTarget('devbox'), { host: 'devbox' });
  assert.deepEqual(parseSshTarget('me@devbox.example.com:2222'), { user: 'me', host: 'devbox.example.com', port: 2222 });
  assert.deepEqual(parseSshTarget('root@[::1]:22'), { user: 'root', host: '::1', port: 22 });
  for (const bad of ['', '-oProxyCommand=x', 'a b', 'me@', 'host:99999', 'a@b@c'])
    assert.throws(() => parseSshTarget(bad), /SSH destination|port/, bad);
});

test('sshArgs: BatchMode comes first (ssh keeps the first value), the destination after --', () => {
  const args = sshArgs({ user: 'me', host: 'devbox', port: 2222 }, ['BatchMode=no', 'ProxyJump=bastion'], 'CMD');
  assert.deepEqual(args.slice(0, 3), ['-T', '-o', 'BatchMode=yes']);
  assert.ok(args.indexOf('BatchMode=no') > args.indexOf('BatchMode=yes'));
  assert.deepEqual(args.slice(-3), ['--', 'devbox', 'CMD']);
  assert.deepEqual(args.slice(args.indexOf('-p'), args.indexOf('-p') + 4), ['-p', '2222', '-l', 'me']);
});

test('remoteCommand: one single-quoted sh script; arguments that could break out are refused', () => {
  const cmd = remoteCommand('0.2.0-abcdef', ['--idle-exit-ms', '60000']);
  assert.match(cmd, /^exec \/bin\/sh -c '[^']*'$/);
  assert.throws(() => remoteCommand("x'; rm -rf ~; '"), /unsafe/);
  assert.throws(() => remoteCommand('v1', ['$(id)']), /unsafe/);
});

test('describeSshFailure: each ssh failure is one message with the fix', () => {
  assert.equal(describeSshFailure('d', 'Host key verification failed.\n', 255).kind, 'host-key');
  assert.match(
    describeSshFailure('d', '@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.', 255).message,
    /CHANGED.*ssh-keygen -R/,
  );
  const auth = describeSshFailure('d', 'root@127.0.0.1: Permission denied (publickey).\n', 255);
  assert.equal(auth.kind, 'auth');
  assert.match(auth.message, /ssh-add/);
  assert.equal(describeSshFailure('d', 'ssh: Could not resolve hostname d: Name or service not known', 255).kind, 'unreachable');
  assert.equal(describeSshFailure('d', 'something else', 1).kind, 'other');
});

test('parseExecutors: an ssh entry (with sshOptions); a bad destination or mixed kinds are reported', () => {
  const { executors, problems } = parseExecutors([
    { name: 'devbox', ssh: 'me@devbox:2222', sshOptions: ['ProxyJump=bastion'], cwd: '/srv' },
    { name: 'plain', ssh: 'gpu' },
    { name: 'bad', ssh: '-oProxyCommand=evil' },
    { name: 'both', ssh: 'x', url: 'ws://x:1' },
    { name: 'opt', ssh: 'x', sshOptions: ['-v'] },
  ]);
  assert.deepEqual(executors.slice(1), [
    { kind: 'ssh', name: 'devbox', ssh: 'me@devbox:2222', sshOptions: ['ProxyJump=bastion'], cwd: '/srv' },
    { kind: 'ssh', name: 'plain', ssh: 'gpu', sshOptions: [] },
  ]);
  assert.deepEqual(
    problems.map((p) => p.index),
    [2, 3, 4],
  );
  assert.match(problems[0]!.message, /\[user@\]host\[:port\]/);
  assert.match(problems[1]!.message, /exactly one of/);
});

test('isRelayCommand: a stdio command ending in our relay gets the relay keepalive; anything else does not', () => {
  assert.equal(isRelayCommand('kubectl', ['exec', '-i', 'pod', '--', '/root/.exec-bridge/bin/exec-bridge', 'connect']), true);
  assert.equal(isRelayCommand('ssh', ['devbox', '~/.exec-bridge/bin/exec-bridge connect']), true);
  assert.equal(isRelayCommand('/usr/bin/node', ['/opt/x/dist/cli.js', 'connect']), true);
  assert.equal(isRelayCommand('ssh', ['devbox', 'exec-bridge', 'serve', '--listen', 'stdio']), false);
  assert.equal(isRelayCommand('my-connect', []), false);
  assert.equal(isRelayCommand('ssh', ['host', 'reconnect']), false);
});

// Issue 24 item 6: every command a failure prints works when pasted (`user@host:port` is no ssh syntax).
test('the commands an ssh failure prints are real ssh / ssh-keygen command lines', () => {
  assert.equal(sshCommandLine('ebui@127.0.0.1:37379'), 'ssh -p 37379 ebui@127.0.0.1');
  assert.equal(sshCommandLine('devbox'), 'ssh devbox');
  assert.equal(sshCommandLine('[::1]:2222'), 'ssh -p 2222 ::1');
  assert.equal(
    sshCommandLine('me@gpu', ['ProxyJump=bastion', 'UserKnownHostsFile=/tmp/my hosts']),
    "ssh -o ProxyJump=bastion -o 'UserKnownHostsFile=/tmp/my hosts' me@gpu",
  );
  const unknown = describeSshFailure('ebui@127.0.0.1:37379', 'Host key verification failed.\n', 255, undefined, ['IdentityFile=/k']);
  assert.match(unknown.message, /connect once in a terminal \(ssh -o IdentityFile=\/k -p 37379 ebui@127\.0\.0\.1\) to check/);
  assert.doesNotMatch(unknown.message, /127\.0\.0\.1:37379\)/);

  assert.equal(removeHostKeyCommand('me@gpu:2222'), "ssh-keygen -R '[gpu]:2222'");
  assert.equal(removeHostKeyCommand('gpu:22'), 'ssh-keygen -R gpu');
  assert.equal(removeHostKeyCommand('gpu', ['HostKeyAlias=eb', 'UserKnownHostsFile=/k/known /k/other']), 'ssh-keygen -f /k/known -R eb');
  // ssh's own line, when its warning has one, names the file and the recorded name exactly.
  const changed = describeSshFailure(
    'me@gpu:2222',
    "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nOffending ED25519 key in /root/.ssh/known_hosts:3\n  remove with:\n  ssh-keygen -f '/root/.ssh/known_hosts' -R '[gpu]:2222'\nHost key verification failed.",
    255,
  );
  assert.match(changed.message, /remove the old key \(ssh-keygen -f '\/root\/\.ssh\/known_hosts' -R '\[gpu\]:2222'\)$/);
  assert.doesNotMatch(changed.message, /-R HOST/);
});
