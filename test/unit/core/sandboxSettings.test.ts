import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  allowHostForWorkspace,
  hostOfTarget,
  managedNetworkFor,
  readSandboxSettings,
  sandboxLabel,
  sandboxRequest,
} from '../../../src/core/sandboxSettings';
import { unionOfListScopes } from '../../../src/core/settingScopes';
import { SandboxContext } from '../../../src/protocol/sandbox';

test('settings fall back to workspace-write with the network off', () => {
  assert.deepEqual(readSandboxSettings(undefined, undefined), { policy: 'workspace-write', network: false });
  assert.deepEqual(readSandboxSettings('bogus', 'yes'), { policy: 'workspace-write', network: false });
  assert.deepEqual(readSandboxSettings('read-only', true), { policy: 'read-only', network: true });
  assert.equal(sandboxLabel({ policy: 'full-access', network: false }), 'full-access, network off');
});

test('every policy yields a sandbox value the protocol schema accepts', () => {
  for (const policy of ['read-only', 'workspace-write', 'full-access'] as const) {
    const value = sandboxRequest({ policy, network: false }, '/work/p', ['/work/p', '/work/q']);
    assert.ok(value, policy);
    const parsed = SandboxContext.parse(value);
    assert.equal(parsed.cwd, 'file:///work/p');
    if (policy === 'workspace-write') assert.deepEqual(parsed.workspaceRoots, ['file:///work/p', 'file:///work/q']);
    assert.equal(parsed.permissions.type, 'managed');
  }
});

test('workspace-write without roots makes the cwd the root; full access with network means no sandbox', () => {
  const value = SandboxContext.parse(sandboxRequest({ policy: 'workspace-write', network: false }, '/srv/app dir'));
  assert.deepEqual(value.workspaceRoots, ['file:///srv/app%20dir']);
  assert.equal(sandboxRequest({ policy: 'full-access', network: true }, '/srv'), undefined);
});

test('"/" is never a writable root: workspace-write there falls back to read-only', () => {
  const atRoot = SandboxContext.parse(sandboxRequest({ policy: 'workspace-write', network: false }, '/'));
  const readOnly = SandboxContext.parse(sandboxRequest({ policy: 'read-only', network: false }, '/'));
  assert.deepEqual(atRoot.permissions, readOnly.permissions);
  const mixed = SandboxContext.parse(sandboxRequest({ policy: 'workspace-write', network: false }, '/w', ['/', '/w']));
  assert.deepEqual(mixed.workspaceRoots, ['file:///w']);
});

test('the managed network: an allow-list applies only with the network off; labels and denied hosts', () => {
  const s = readSandboxSettings('workspace-write', false, [' registry.npmjs.org ', 'registry.npmjs.org', 7, '', '*.github.com:443']);
  assert.deepEqual(s.networkAllow, ['registry.npmjs.org', '*.github.com:443']);
  assert.deepEqual(managedNetworkFor(s), { allow: ['registry.npmjs.org', '*.github.com:443'] });
  assert.equal(sandboxLabel(s), 'workspace-write, network only registry.npmjs.org, *.github.com:443');
  assert.equal(managedNetworkFor(readSandboxSettings('workspace-write', true, ['x.test'])), undefined, 'the network on reaches everything');
  assert.equal(managedNetworkFor(readSandboxSettings('workspace-write', false, [])), undefined);
  assert.deepEqual(readSandboxSettings('read-only', false, 'not-a-list'), { policy: 'read-only', network: false });
  assert.equal(hostOfTarget('api.example.com:443'), 'api.example.com');
  assert.equal(hostOfTarget('[::1]:8080'), '::1');
});

// Issue 24 item 2: the allow-list in effect is every scope's list together (settingScopes.test.ts),
// so "Allow HOST for this workspace" adds HOST to the workspace's own list, copying nothing.
test('"Allow HOST for this workspace" adds the host to the workspace list, and says the user\'s stay allowed', () => {
  const first = allowHostForWorkspace({ defaultValue: [], globalValue: ['npm.test', '*.pkg.test:443'] }, '127.0.0.1');
  assert.deepEqual(first.workspaceValue, ['127.0.0.1']);
  assert.equal(
    first.where,
    "added to execBridge.sandboxNetworkAllow in the workspace settings (your user setting's npm.test, *.pkg.test:443 stay allowed too)",
  );
  // A workspace value of its own keeps its order; the host joins at the end.
  const second = allowHostForWorkspace({ globalValue: ['npm.test', 'git.test'], workspaceValue: ['a.test', 'git.test'] }, 'b.test');
  assert.deepEqual(second.workspaceValue, ['a.test', 'git.test', 'b.test']);
  assert.match(second.where, /^added to .* user setting's npm\.test stay allowed too\)$/);
  // No user value: nothing to say about the user's.
  const alone = allowHostForWorkspace({ defaultValue: [] }, ' x.test ');
  assert.deepEqual(alone.workspaceValue, ['x.test']);
  assert.equal(alone.where, 'added to execBridge.sandboxNetworkAllow in the workspace settings');
  // Already there: nothing to write.
  const again = allowHostForWorkspace({ globalValue: ['npm.test'], workspaceValue: ['x.test'] }, 'x.test');
  assert.equal(again.workspaceValue, undefined);
  assert.match(again.where, /^already in execBridge\.sandboxNetworkAllow in the workspace settings/);
  // Junk in the workspace scope is dropped, as readSandboxSettings does.
  assert.deepEqual(allowHostForWorkspace({ globalValue: ['npm.test'], workspaceValue: [' a.test ', 7, ''] }, 'x.test').workspaceValue, [
    'a.test',
    'x.test',
  ]);
  // Every host allowed before is allowed after (with the scopes read together), in every case.
  for (const scopes of [{ globalValue: ['u1', 'u2'] }, { globalValue: ['u1'], workspaceValue: ['w1'] }, { workspaceValue: ['w1'] }]) {
    const before = new Set(unionOfListScopes(scopes));
    const after = new Set(unionOfListScopes({ ...scopes, workspaceValue: allowHostForWorkspace(scopes, 'new.test').workspaceValue }));
    for (const h of before) assert.ok(after.has(h), `${h} stays allowed`);
    assert.ok(after.has('new.test'));
  }
});
