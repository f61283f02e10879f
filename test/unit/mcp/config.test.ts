import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatDiagnostic,
  isToolEnabled,
  McpConfigError,
  mergeMcpConfig,
  parseEnvFile,
  parseMcpJson,
  parseSettingsServers,
  resolveLaunch,
  type McpConfigSource,
  type McpServerDefinition,
  type VariableContext,
} from '../../../src/mcp/config';

const jsonSource: McpConfigSource = { kind: 'mcpJson', file: '/ws/.vscode/mcp.json', workspaceFolder: '/ws' };
const settingsSource: McpConfigSource = { kind: 'settings', file: 'settings: execBridge.mcp.servers' };

function defOf(config: ReturnType<typeof mergeMcpConfig>, name: string): McpServerDefinition {
  const e = config.entries.find((x) => x.name === name);
  assert.ok(e?.definition, `server ${name} should be valid: ${JSON.stringify(e?.errors)}`);
  return e.definition;
}

const ctx = (over: Partial<VariableContext> = {}): VariableContext => ({
  userHome: '/home/u',
  env: { TOKEN_FROM_ENV: 'e1' },
  resolveInput: () => Promise.resolve(undefined),
  readFile: () => Promise.reject(new Error('no files here')),
  ...over,
});

test('parses VS Code mcp.json with comments, trailing commas, defaults and our keys', () => {
  const text = `{
    // three servers
    "inputs": [{ "type": "promptString", "id": "key", "description": "API key", "password": true }],
    "servers": {
      "memory": { "type": "stdio", "command": "node", "args": ["\${workspaceFolder}/mem.js"], "env": { "A": "1", "N": 2, "GONE": null }, },
      "fs": { "command": "node", "args": ["fs.js", "/tmp"], "startupTimeoutMs": 5000, "autoStart": true, "restart": "onCrash",
              "enabledTools": ["read"], "disabledTools": ["write"], "executor": "devbox", "dev": { "watch": "x" } },
    },
  }`;
  const config = mergeMcpConfig([parseMcpJson(text, jsonSource)]);
  assert.deepEqual(config.diagnostics, []);
  assert.deepEqual(
    config.entries.map((e) => e.name),
    ['memory', 'fs'],
  );
  const mem = defOf(config, 'memory');
  assert.equal(mem.command, 'node');
  assert.deepEqual(mem.env, { A: '1', N: '2', GONE: null });
  assert.equal(mem.startupTimeoutMs, 30_000);
  assert.equal(mem.autoStart, false);
  assert.equal(mem.restart, 'never');
  assert.equal(mem.executor, undefined);
  const fs = defOf(config, 'fs');
  assert.equal(fs.startupTimeoutMs, 5000);
  assert.equal(fs.autoStart, true);
  assert.equal(fs.restart, 'onCrash');
  assert.equal(fs.executor, 'devbox');
  assert.deepEqual(
    config.inputs.map((i) => [i.id, i.password]),
    [['key', true]],
  );
});

test('one bad server does not hide the others; errors name the file, server, key and position', () => {
  const text = [
    '{',
    '  "servers": {',
    '    "good": { "command": "node" },',
    '    "badArgs": { "command": "node", "args": ["ok", 7] },',
    '    "badTimeout": { "command": "node", "startupTimeoutMs": "30s" },',
    '    "noCommand": { "args": [] },',
    '    "http": { "type": "http", "url": "ftp://x" },',
    '    "badVar": { "command": "${workspaceRoot}/x" },',
    '    "badInput": { "command": "node", "env": { "K": "${input:missing}" } },',
    '    "badRestart": { "command": "node", "restart": "always" }',
    '  }',
    '}',
  ].join('\n');
  const config = mergeMcpConfig([parseMcpJson(text, jsonSource)]);
  const byName = new Map(config.entries.map((e) => [e.name, e]));
  assert.ok(byName.get('good')?.definition);
  for (const name of ['badArgs', 'badTimeout', 'noCommand', 'http', 'badVar', 'badInput', 'badRestart']) {
    const e = byName.get(name);
    assert.ok(e, name);
    assert.equal(e.definition, undefined, name);
    assert.ok(e.errors.length > 0, name);
    for (const d of e.errors) {
      assert.equal(d.file, jsonSource.file);
      assert.equal(d.server, name);
    }
  }
  const argErr = byName.get('badArgs')?.errors[0];
  assert.equal(argErr?.key, 'servers.badArgs.args[1]');
  assert.equal(argErr?.range?.line, 3);
  assert.match(
    formatDiagnostic(argErr!),
    /^\/ws\/\.vscode\/mcp\.json:4:\d+, server "badArgs", key "servers\.badArgs\.args\[1\]": each argument must be a string, got 7$/,
  );
  assert.equal(byName.get('badTimeout')?.errors[0]?.key, 'servers.badTimeout.startupTimeoutMs');
  assert.match(byName.get('badTimeout')?.errors[0]?.message ?? '', /whole number of milliseconds/);
  assert.equal(byName.get('noCommand')?.errors[0]?.key, 'servers.noCommand.command');
  assert.match(byName.get('http')?.errors[0]?.message ?? '', /must start with http:\/\/ or https:\/\//);
  assert.match(byName.get('badVar')?.errors[0]?.message ?? '', /unknown variable \$\{workspaceRoot\}/);
  assert.match(byName.get('badInput')?.errors[0]?.message ?? '', /input:missing.*no "inputs" entry/);
  assert.equal(byName.get('badInput')?.errors[0]?.key, 'servers.badInput.env.K');
  assert.match(byName.get('badRestart')?.errors[0]?.message ?? '', /"never" or "onCrash"/);
});

test('invalid JSON is one diagnostic with a position, and still yields what parsed', () => {
  const text = '{\n  "servers": {\n    "a": { "command": "node" }\n    "b": { "command": "x" }\n  }\n}';
  const layer = parseMcpJson(text, jsonSource);
  const jsonErr = layer.diagnostics.find((d) => d.message.startsWith('invalid JSON'));
  assert.ok(jsonErr);
  assert.equal(jsonErr.range?.line, 3);
  assert.match(jsonErr.message, /comma expected/);
  assert.ok(layer.servers.some((s) => s.name === 'a'));

  const empty = parseMcpJson('', jsonSource);
  assert.equal(empty.diagnostics.length, 1);
  assert.equal(empty.diagnostics[0]?.severity, 'error');

  const notObject = parseMcpJson('{"servers": []}', jsonSource);
  assert.match(notObject.diagnostics[0]?.message ?? '', /expected an object mapping server names/);
});

test('unknown keys are warnings, not errors', () => {
  const config = mergeMcpConfig([parseMcpJson('{"servers":{"a":{"command":"node","comand":"typo"}},"extra":1}', jsonSource)]);
  assert.ok(defOf(config, 'a'));
  assert.deepEqual(
    config.diagnostics.map((d) => [d.severity, d.key]),
    [
      ['warning', 'extra'],
      ['warning', 'servers.a.comand'],
    ],
  );
});

test('settings adjust an mcp.json server without a command, or define/replace one with it', () => {
  const json = parseMcpJson('{"servers":{"mem":{"command":"node","args":["m.js"]},"fs":{"command":"node"}}}', jsonSource);
  const settings = parseSettingsServers(
    {
      mem: { autoStart: true, executor: 'box', startupTimeoutMs: 1000 },
      fs: { command: 'python3', args: ['fs.py'] },
      extra: { command: 'extra-server' },
      orphan: { autoStart: true },
      bad: { command: 5 },
    },
    settingsSource,
  );
  const config = mergeMcpConfig([json, settings]);
  const mem = defOf(config, 'mem');
  assert.deepEqual([mem.command, mem.args, mem.autoStart, mem.executor, mem.startupTimeoutMs], ['node', ['m.js'], true, 'box', 1000]);
  assert.equal(mem.source, jsonSource);
  assert.equal(mem.adjustedBy, settingsSource);
  const fs = defOf(config, 'fs');
  assert.deepEqual([fs.command, fs.args, fs.source.kind], ['python3', ['fs.py'], 'settings']);
  assert.equal(defOf(config, 'extra').command, 'extra-server');
  const orphan = config.entries.find((e) => e.name === 'orphan');
  assert.equal(orphan?.definition, undefined);
  assert.match(orphan?.errors[0]?.message ?? '', /no server named "orphan" in \.vscode\/mcp\.json to adjust/);
  assert.equal(orphan?.errors[0]?.file, settingsSource.file);
  const bad = config.entries.find((e) => e.name === 'bad');
  assert.equal(bad?.errors[0]?.key, 'command');
  assert.equal(bad?.errors.length, 1, 'a bad command is reported once, not again as "required"');
});

test('a second mcp.json with the same server name is reported and ignored', () => {
  const other: McpConfigSource = { kind: 'mcpJson', file: '/ws2/.vscode/mcp.json', workspaceFolder: '/ws2' };
  const config = mergeMcpConfig([
    parseMcpJson('{"servers":{"a":{"command":"one"}}}', jsonSource),
    parseMcpJson('{"servers":{"a":{"command":"two"}}}', other),
  ]);
  assert.equal(defOf(config, 'a').command, 'one');
  assert.equal(config.entries.length, 1);
  assert.match(config.diagnostics[0]?.message ?? '', /already defined in \/ws\/\.vscode\/mcp\.json/);
});

test('fingerprint changes with the launch, not with tool filters or policy', () => {
  const fp = (server: object) => defOf(mergeMcpConfig([parseSettingsServers({ s: server }, settingsSource)]), 's').fingerprint;
  const base = fp({ command: 'node', args: ['a'], env: { B: '1', A: '2' } });
  assert.equal(fp({ command: 'node', args: ['a'], env: { A: '2', B: '1' } }), base, 'env order does not matter');
  assert.equal(
    fp({ command: 'node', args: ['a'], env: { B: '1', A: '2' }, autoStart: true, disabledTools: ['x'], restart: 'onCrash' }),
    base,
  );
  assert.notEqual(fp({ command: 'node', args: ['b'], env: { B: '1', A: '2' } }), base);
  assert.notEqual(fp({ command: 'node', args: ['a'], env: { B: '1', A: '3' } }), base);
  assert.notEqual(fp({ command: 'node', args: ['a'], env: { B: '1', A: '2' }, executor: 'x' }), base);
});

test('resolveLaunch substitutes variables, asks each input once, merges envFile under env', async () => {
  const text = JSON.stringify({
    inputs: [{ type: 'promptString', id: 'tok', description: 'Token', password: true }],
    servers: {
      s: {
        command: '${userHome}/bin/srv',
        args: [
          '--root=${workspaceFolder}',
          '${workspaceFolderBasename}',
          'a${pathSeparator}b',
          '${env:TOKEN_FROM_ENV}',
          '${env:NOPE}x',
          '${input:tok}',
        ],
        env: { KEY: '${input:tok}', FROM_FILE: 'overridden', DROP: null },
        envFile: '${workspaceFolder}/.env',
        cwd: '${workspaceFolder}/sub',
      },
    },
  });
  const config = mergeMcpConfig([parseMcpJson(text, jsonSource)]);
  const asked: string[] = [];
  const read: string[] = [];
  const launch = await resolveLaunch(
    defOf(config, 's'),
    config.inputs,
    ctx({
      resolveInput: (i) => {
        asked.push(i.id);
        return Promise.resolve('s3cret');
      },
      readFile: (p) => {
        read.push(p);
        return Promise.resolve('FROM_FILE=file\nONLY_FILE="a b"\n# c\n');
      },
    }),
  );
  assert.deepEqual(launch.argv, ['/home/u/bin/srv', '--root=/ws', 'ws', 'a/b', 'e1', 'x', 's3cret']);
  assert.equal(launch.cwd, '/ws/sub');
  assert.deepEqual(launch.env, { FROM_FILE: 'overridden', ONLY_FILE: 'a b', KEY: 's3cret' });
  assert.deepEqual(launch.unsetEnv, ['DROP']);
  assert.deepEqual(asked, ['tok']);
  assert.deepEqual(read, ['/ws/.env']);
});

test('resolveLaunch fails with a diagnostic naming the key', async () => {
  const config = mergeMcpConfig([
    parseMcpJson(
      JSON.stringify({
        inputs: [{ type: 'promptString', id: 'tok' }],
        servers: {
          cancel: { command: 'x', env: { K: '${input:tok}' } },
          nofile: { command: 'x', envFile: '/nope/.env' },
          rel: { command: 'x', cwd: 'relative' },
        },
      }),
      jsonSource,
    ),
  ]);
  await assert.rejects(resolveLaunch(defOf(config, 'cancel'), config.inputs, ctx()), (e: unknown) => {
    assert.ok(e instanceof McpConfigError);
    assert.equal(e.diagnostic.key, 'servers.cancel.env.K');
    assert.match(e.message, /no value was given for input "tok"/);
    return true;
  });
  await assert.rejects(
    resolveLaunch(defOf(config, 'nofile'), config.inputs, ctx()),
    /key "servers\.nofile\.envFile": cannot read the envFile "\/nope\/\.env": no files here/,
  );
  await assert.rejects(resolveLaunch(defOf(config, 'rel'), config.inputs, ctx()), /"cwd" must be an absolute path/);

  // ${workspaceFolder} in a settings server with no folder open.
  const s = mergeMcpConfig([parseSettingsServers({ s: { command: '${workspaceFolder}/x' } }, settingsSource)]);
  await assert.rejects(resolveLaunch(defOf(s, 's'), [], ctx()), /no workspace folder is open/);
});

test('parseEnvFile handles export, quotes, escapes, comments and reports bad lines', () => {
  const { values, errors } = parseEnvFile(
    [
      '# comment',
      'export A=1',
      'B = two words # trailing',
      "C='single $X \\n'",
      'D="line\\nnext \\"q\\""',
      'E="multi',
      'line"',
      'not a pair',
      '',
      'F=',
    ].join('\r\n'),
  );
  assert.deepEqual(values, { A: '1', B: 'two words', C: 'single $X \\n', D: 'line\nnext "q"', E: 'multi\nline', F: '' });
  assert.deepEqual(errors, ['line 8: expected KEY=value']);
  assert.deepEqual(parseEnvFile('G="open').errors, ['line 1: unterminated double-quoted value for G']);
});

test('isToolEnabled applies the allow-list, then the deny-list', () => {
  assert.equal(isToolEnabled({ disabledTools: [] }, 'a'), true);
  assert.equal(isToolEnabled({ enabledTools: ['a', 'b'], disabledTools: ['b'] }, 'a'), true);
  assert.equal(isToolEnabled({ enabledTools: ['a', 'b'], disabledTools: ['b'] }, 'b'), false);
  assert.equal(isToolEnabled({ enabledTools: ['a'], disabledTools: [] }, 'c'), false);
});

test('inputs are validated: bad ones are reported, good ones kept', () => {
  const layer = parseMcpJson(
    JSON.stringify({
      inputs: [
        { type: 'promptString', id: 'ok' },
        { type: 'pickString', id: 'pick', options: ['a', 'b'], default: 'a' },
        { type: 'promptString' },
        { type: 'command', id: 'c' },
        { type: 'pickString', id: 'nopts' },
        { type: 'promptString', id: 'ok' },
      ],
      servers: {},
    }),
    jsonSource,
  );
  assert.deepEqual(
    layer.inputs.map((i) => i.id),
    ['ok', 'pick'],
  );
  assert.deepEqual(layer.inputs[1]?.options, ['a', 'b']);
  assert.deepEqual(
    layer.diagnostics.map((d) => d.key),
    ['inputs[2].id', 'inputs[3].type', 'inputs[4].options', 'inputs[5].id'],
  );
});
