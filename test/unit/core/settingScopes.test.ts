import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSandboxSettings } from '../../../src/core/sandboxSettings';
import { executorsFromScopes, unionOfListScopes, userList } from '../../../src/core/settingScopes';

// Issue 24 item 2: VS Code's `get()` gives the workspace's list alone once there is one; a host the
// user adds to their own setting afterwards must count in that workspace too.
test('the allow-list in effect is the user, workspace and folder lists together', () => {
  const scopes = { defaultValue: [], globalValue: ['npm.test', 'late.test'], workspaceValue: ['127.0.0.1', 'npm.test'] };
  assert.deepEqual(unionOfListScopes(scopes), ['npm.test', 'late.test', '127.0.0.1']);
  assert.deepEqual(readSandboxSettings('workspace-write', false, unionOfListScopes(scopes)).networkAllow, [
    'npm.test',
    'late.test',
    '127.0.0.1',
  ]);
  assert.deepEqual(unionOfListScopes({ ...scopes, workspaceFolderValue: ['folder.test', 'late.test'] }), [
    'npm.test',
    'late.test',
    '127.0.0.1',
    'folder.test',
  ]);
});

test('the default counts only while the user has no value; a scope that is not a list adds nothing', () => {
  assert.deepEqual(unionOfListScopes({ defaultValue: ['d.test'] }), ['d.test']);
  assert.deepEqual(unionOfListScopes({ defaultValue: ['d.test'], globalValue: [] }), []);
  assert.deepEqual(unionOfListScopes({ defaultValue: ['d.test'], workspaceValue: ['w.test'] }), ['d.test', 'w.test']);
  assert.deepEqual(unionOfListScopes({ globalValue: 'u.test', workspaceValue: ['w.test', 7] }), ['w.test', 7]);
  assert.deepEqual(unionOfListScopes({}), []);
  // The entries are checked where they are read: junk is dropped there.
  assert.deepEqual(
    readSandboxSettings('workspace-write', false, unionOfListScopes({ globalValue: 'u.test', workspaceValue: ['w.test', 7] })),
    {
      policy: 'workspace-write',
      network: false,
      networkAllow: ['w.test'],
    },
  );
});

test('executors of every scope together: a more specific scope wins by name, in place', () => {
  const { executors, problems } = executorsFromScopes(
    {
      globalValue: [
        { name: 'devbox', ssh: 'me@devbox.test' },
        { name: 'gpu', url: 'ws://127.0.0.1:7000' },
      ],
      workspaceValue: [
        { name: 'project', command: ['exec-bridge', 'serve', '--listen', 'stdio'] },
        { name: 'gpu', url: 'ws://127.0.0.1:7001' },
      ],
    },
    '/work/project',
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(
    executors.map((e) => [e.name, e.kind === 'websocket' ? e.url : e.kind]),
    [
      ['bundled', 'bundled'],
      ['devbox', 'ssh'],
      ['gpu', 'ws://127.0.0.1:7001'],
      ['project', 'stdio'],
    ],
  );
  assert.deepEqual(executors[0], { kind: 'bundled', name: 'bundled', cwd: '/work/project' });
});

test('a bad executor entry is named with its scope and loses the others nothing', () => {
  const { executors, problems } = executorsFromScopes({
    globalValue: [
      { name: 'devbox', ssh: 'me@devbox.test' },
      { name: 'both', url: 'ws://x', ssh: 'y' },
    ],
    workspaceValue: 'not a list',
  });
  assert.deepEqual(
    executors.map((e) => e.name),
    ['bundled', 'devbox'],
  );
  assert.deepEqual(
    problems.map((p) => p.message),
    ['user settings: entry 2: needs exactly one of "url", "command" or "ssh"', 'workspace settings: execBridge.executors must be a list'],
  );
  // A name used twice within one scope is still a problem there; across scopes it is an override.
  const twice = executorsFromScopes({
    workspaceValue: [
      { name: 'a', ssh: 'h1' },
      { name: 'a', ssh: 'h2' },
    ],
  });
  assert.deepEqual(
    twice.problems.map((p) => p.message),
    ['workspace settings: entry 2: the name "a" is already used'],
  );
  assert.deepEqual(
    executorsFromScopes({}).executors.map((e) => e.name),
    ['bundled'],
  );
});

test("what a command adds to the user settings starts from the user's own list, never the workspace's", () => {
  assert.deepEqual(userList({ globalValue: [{ name: 'mine' }], workspaceValue: [{ name: 'theirs' }] }), [{ name: 'mine' }]);
  assert.deepEqual(userList({ workspaceValue: [{ name: 'theirs' }] }), []);
  const own = [{ name: 'mine' }];
  const copy = userList({ globalValue: own });
  copy.push({ name: 'new' });
  assert.equal(own.length, 1, 'a copy: the inspected value is not changed');
});
