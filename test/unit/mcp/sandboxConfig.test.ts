import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  mergeMcpConfig,
  parseMcpJson,
  parseSettingsServers,
  readSandboxValue,
  resolveLaunch,
  sandboxJson,
  withAllowedHost,
} from '../../../src/mcp/config';
import { allowEntryFor, blockedPathIn, dirToAllow, hostOfTarget, sandboxedStart } from '../../../src/mcp/serverSandbox';

const source = { kind: 'mcpJson' as const, file: '/w/.vscode/mcp.json', workspaceFolder: '/w' };

test('executorSandbox: a policy name, "none", or an object; mistakes name the sub-key', () => {
  const errors: string[] = [];
  const read = (v: unknown) => readSandboxValue(v, 'executorSandbox', (k, m) => errors.push(`${k}: ${m}`));
  assert.deepEqual(read('read-only'), { policy: 'read-only', network: false, networkAllow: [], writable: [] });
  assert.equal(read('none'), 'none');
  assert.deepEqual(read({ networkAllow: ['registry.npmjs.org', ' *.pypi.org ', 'registry.npmjs.org'] }), {
    policy: 'workspace-write',
    network: false,
    networkAllow: ['registry.npmjs.org', '*.pypi.org'],
    writable: [],
  });
  assert.equal(errors.length, 0);
  assert.equal(read('full-access'), undefined);
  assert.equal(read({ policy: 'workspace-write', networkAllow: ['https://example.com/x'] }), undefined);
  assert.equal(read({ network: true, networkAllow: ['a.example'] }), undefined);
  assert.equal(read({ polcy: 'read-only' }), undefined);
  assert.deepEqual(
    errors.map((e) => e.split(':')[0]),
    ['executorSandbox', 'executorSandbox.networkAllow', 'executorSandbox.network', 'executorSandbox.polcy'],
  );
});

test("the server's key wins over the workspace default; none opts out; remote servers get none; a change is a restart", () => {
  const layer = parseMcpJson(
    JSON.stringify({
      servers: {
        own: { command: 'node', executorSandbox: { policy: 'read-only', networkAllow: ['a.example'] } },
        inherits: { command: 'node' },
        optOut: { command: 'node', executorSandbox: 'none' },
        web: { type: 'http', url: 'https://example.com/mcp' },
      },
    }),
    source,
  );
  const defaults = mergeMcpConfig([layer], {
    sandboxDefault: { policy: 'workspace-write', network: false, networkAllow: [], writable: [] },
  });
  const def = (n: string) => defaults.entries.find((e) => e.name === n)!.definition!;
  assert.deepEqual(def('own').sandbox, {
    settings: { policy: 'read-only', network: false, networkAllow: ['a.example'], writable: [] },
    from: 'server',
  });
  assert.equal(def('inherits').sandbox?.from, 'default');
  assert.equal(def('optOut').sandbox, undefined);
  assert.equal(def('web').sandbox, undefined);
  const plain = mergeMcpConfig([layer]);
  assert.equal(plain.entries.find((e) => e.name === 'inherits')!.definition!.sandbox, undefined);
  assert.notEqual(def('inherits').fingerprint, plain.entries.find((e) => e.name === 'inherits')!.definition!.fingerprint);
});

test("VS Code's own sandbox keys are named for what they are; executorSandbox on a remote server is an error", () => {
  const layer = parseMcpJson(
    JSON.stringify({
      servers: {
        a: { command: 'node', sandboxEnabled: true, sandbox: { network: { allowedDomains: ['x'] } } },
        b: { type: 'http', url: 'https://example.com', executorSandbox: 'read-only' },
      },
    }),
    source,
  );
  const warnings = layer.diagnostics.filter((d) => d.severity === 'warning').map((d) => d.key);
  assert.deepEqual(warnings, ['servers.a.sandboxEnabled', 'servers.a.sandbox']);
  assert.match(layer.diagnostics.find((d) => d.key === 'servers.a.sandbox')!.message, /executorSandbox/);
  assert.deepEqual(
    layer.diagnostics.filter((d) => d.severity === 'error').map((d) => d.key),
    ['servers.b.executorSandbox'],
  );
});

test('writable paths take variables and must be absolute; a settings entry can adjust the sandbox', async () => {
  const layer = parseMcpJson(
    JSON.stringify({ servers: { s: { command: 'node', executorSandbox: { writable: ['${userHome}/.cache/s', 'rel'] } } } }),
    source,
  );
  const config = mergeMcpConfig([layer]);
  const def = config.entries[0]!.definition!;
  const ctx = { userHome: '/home/u', env: {}, resolveInput: () => Promise.resolve(undefined), readFile: () => Promise.resolve('') };
  await assert.rejects(resolveLaunch(def, [], ctx), /writable\[1\].*must be absolute/);
  const ok = mergeMcpConfig([
    parseMcpJson(JSON.stringify({ servers: { s: { command: 'node', executorSandbox: { writable: ['${userHome}/.cache/s'] } } } }), source),
    parseSettingsServers(
      { s: { executorSandbox: { policy: 'workspace-write', writable: ['${userHome}/.cache/s'], networkAllow: ['b.example'] } } },
      {
        kind: 'settings',
        file: 'settings',
      },
    ),
  ]);
  const launch = await resolveLaunch(ok.entries[0]!.definition!, [], ctx);
  assert.deepEqual(launch.sandbox, {
    policy: 'workspace-write',
    network: false,
    networkAllow: ['b.example'],
    writable: ['/home/u/.cache/s'],
  });
});

test('the process/start fields: the sandbox intent, the managed network with live reports, Node told to use the proxy', () => {
  const s = sandboxedStart(
    { policy: 'workspace-write', network: false, networkAllow: ['a.example:443'], writable: ['/var/cache/x'] },
    '/w/sub',
    '/w',
  );
  assert.deepEqual(s.managedNetwork, { allow: ['a.example:443'] });
  assert.equal(s.reportBlocked, true);
  assert.equal(s.env['NODE_USE_ENV_PROXY'], '1');
  assert.deepEqual(s.sandbox?.workspaceRoots, ['file:///w']);
  const entries = JSON.stringify(s.sandbox?.permissions);
  assert.match(entries, /file:\/\/\/var\/cache\/x/);
  const off = sandboxedStart({ policy: 'read-only', network: false, networkAllow: [], writable: [] }, '/w', undefined);
  assert.equal(off.managedNetwork, undefined);
  assert.deepEqual(off.env, {});
  assert.equal((off.sandbox?.permissions as { network?: string }).network, 'restricted');
});

test('Allow: a host by name; a loopback or private address only with its port; a blocked write by its folder', () => {
  assert.equal(hostOfTarget('[::1]:8080'), '::1');
  assert.equal(allowEntryFor({ target: 'registry.npmjs.org:443', host: 'registry.npmjs.org' }), 'registry.npmjs.org');
  for (const [target, host] of [
    ['127.0.0.1:4567', '127.0.0.1'],
    ['localhost:80', 'localhost'],
    ['10.1.2.3:22', '10.1.2.3'],
    ['[::1]:8080', '::1'],
    ['169.254.169.254:80', '169.254.169.254'],
  ])
    assert.equal(allowEntryFor({ target: target!, host: host! }), target);
  const sb = { policy: 'workspace-write' as const, network: false, networkAllow: ['a'], writable: [] };
  assert.deepEqual(withAllowedHost(sb, 'b').networkAllow, ['a', 'b']);
  assert.equal(withAllowedHost(sb, 'a'), sb);
  assert.deepEqual(sandboxJson(withAllowedHost(sb, 'b')), { policy: 'workspace-write', networkAllow: ['a', 'b'] });
  assert.equal(dirToAllow('/home/u/.cache/s/data.json'), '/home/u/.cache/s');
});

test("a blocked write in the server's words: read-only file system, or a permission error outside the writable places", () => {
  assert.deepEqual(blockedPathIn("Error: EROFS: read-only file system, open '/home/u/x.json'", ['/w']), {
    kind: 'path',
    path: '/home/u/x.json',
    evidence: "Error: EROFS: read-only file system, open '/home/u/x.json'",
  });
  assert.equal(blockedPathIn("EACCES: permission denied, open '/w/data/x'", ['/w']), undefined, 'inside a writable root: not the sandbox');
  assert.equal(blockedPathIn("EACCES: permission denied, open '/etc/shadow'", ['/w'])?.kind, 'path');
  assert.equal(blockedPathIn('fetch https://example.com/x failed: 500', ['/w']), undefined);
  assert.equal(blockedPathIn('all good in /w', ['/w']), undefined);
});
