import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientCapabilities, elicitFields, parseElicitValue, progressStep, rootsFor, samplingTurns } from '../../../src/mcp/clientFeatures';
import { mergeMcpConfig, parseMcpJson, parseSettingsServers, resolveRemote, type McpServerEntry } from '../../../src/mcp/config';
import { buildProxyDefinitions, definitionsKey } from '../../../src/mcp/vscodeDefinitions';

const source = { kind: 'mcpJson' as const, file: '/w/.vscode/mcp.json', workspaceFolder: '/w' };
const entries = (json: object): McpServerEntry[] => mergeMcpConfig([parseMcpJson(JSON.stringify(json), source)]).entries;

test('http and sse servers parse (url, headers with variables); a url-only server is http; bad ones say why', () => {
  const [web, old, bare, ftp, mixed, badHeader] = entries({
    inputs: [{ id: 'tok', type: 'promptString', description: 't' }],
    servers: {
      web: { type: 'http', url: 'https://h/mcp', headers: { Authorization: 'Bearer ${input:tok}' } },
      old: { type: 'sse', url: 'http://h/sse' },
      bare: { url: 'http://h/mcp' },
      ftp: { type: 'http', url: 'ftp://h' },
      mixed: { type: 'http', url: 'http://h', command: 'node' },
      badHeader: { type: 'http', url: 'http://h', headers: { X: 1 } },
    },
  });
  assert.deepEqual(web!.definition?.remote, {
    type: 'http',
    url: 'https://h/mcp',
    headers: { Authorization: 'Bearer ${input:tok}' },
    connectFrom: 'window',
  });
  assert.equal(old!.definition?.remote?.type, 'sse');
  assert.equal(bare!.definition?.remote?.type, 'http');
  assert.match(ftp!.errors[0]!.message, /http:\/\/ or https:\/\//);
  assert.match(mixed!.errors[0]!.message, /"url", not a "command"/);
  assert.equal(badHeader!.errors[0]!.key, 'servers.badHeader.headers.X');
  // A changed header is a changed server (restart to apply; a new version for VS Code).
  const [again] = entries({
    inputs: [{ id: 'tok', type: 'promptString', description: 't' }],
    servers: { web: { type: 'http', url: 'https://h/mcp', headers: { Authorization: 'Token ${input:tok}' } } },
  });
  assert.notEqual(again!.definition!.fingerprint, web!.definition!.fingerprint);
});

test('connectFrom: "window" by default, "executor" reaches it through the executor; wrong values and places are reported', () => {
  const config = mergeMcpConfig([
    parseMcpJson(
      JSON.stringify({
        servers: {
          web: { type: 'http', url: 'http://127.0.0.1:8080/mcp' },
          dev: { type: 'http', url: 'http://127.0.0.1:8080/mcp', connectFrom: 'executor', executor: 'devbox' },
          bad: { type: 'sse', url: 'http://h/sse', connectFrom: 'devbox' },
          stdio: { command: 'node', connectFrom: 'executor' },
          lost: { type: 'http', url: 'http://h/mcp', executor: 'devbox' },
        },
      }),
      source,
    ),
  ]);
  const [web, dev, bad, stdio, lost] = config.entries;
  assert.equal(web!.definition?.remote?.connectFrom, 'window');
  assert.equal(dev!.definition?.remote?.connectFrom, 'executor');
  assert.equal(dev!.definition?.executor, 'devbox');
  assert.notEqual(dev!.definition!.fingerprint, web!.definition!.fingerprint, 'a change of it is a restart to apply');
  assert.deepEqual(
    bad!.errors.map((e) => [e.key, e.message]),
    [['servers.bad.connectFrom', '"connectFrom" must be "window" or "executor", got "devbox"']],
  );
  assert.match(stdio!.errors[0]!.message, /"connectFrom" belongs to an "http" or "sse" server/);
  assert.ok(lost!.definition, 'a warning only');
  const warning = config.diagnostics.find((d) => d.server === 'lost');
  assert.equal(warning?.severity, 'warning');
  assert.match(warning?.message ?? '', /"executor" has no effect on a remote server connected from the window/);
  // A settings entry adjusts the team's mcp.json server: reached through the executor, for me.
  const adjusted = mergeMcpConfig([
    parseMcpJson(JSON.stringify({ servers: { web: { type: 'http', url: 'http://127.0.0.1:8080/mcp' } } }), source),
    parseSettingsServers({ web: { connectFrom: 'executor', executor: 'devbox' } }, { kind: 'settings', file: 'settings' }),
  ]);
  assert.deepEqual(adjusted.diagnostics, []);
  assert.equal(adjusted.entries[0]!.definition?.remote?.connectFrom, 'executor');
  // VS Code's list says where its requests go.
  const launch = { execPath: '/n', cliPath: '/c', socketPath: '/s', electron: false, activeExecutor: 'bundled' };
  assert.deepEqual(
    buildProxyDefinitions([web!, dev!], launch).map((d) => d.label),
    ['web · http', 'dev · http via devbox'],
  );
});

test('an http server in settings is a server of its own, not an adjustment of an mcp.json one', () => {
  const config = mergeMcpConfig([
    parseSettingsServers({ web: { type: 'http', url: 'http://h/mcp' } }, { kind: 'settings', file: 'settings' }),
  ]);
  assert.deepEqual(config.diagnostics, []);
  assert.equal(config.entries[0]!.definition?.remote?.url, 'http://h/mcp');
});

test('resolveRemote fills ${input:} and ${env:} in url and headers', async () => {
  const [web] = entries({
    inputs: [{ id: 'tok', type: 'promptString', description: 't' }],
    servers: { web: { type: 'http', url: 'http://127.0.0.1:${env:PORT}/mcp', headers: { Authorization: 'Bearer ${input:tok}' } } },
  });
  const r = await resolveRemote(
    web!.definition!,
    mergeMcpConfig([parseMcpJson(JSON.stringify({ inputs: [{ id: 'tok', type: 'promptString', description: 't' }], servers: {} }), source)])
      .inputs,
    {
      userHome: '/h',
      env: { PORT: '8123' },
      resolveInput: () => Promise.resolve('abc'),
      readFile: () => Promise.reject(new Error('no')),
    },
  );
  assert.deepEqual(r, { url: 'http://127.0.0.1:8123/mcp', headers: { Authorization: 'Bearer abc' } });
});

test('VS Code definitions: one per valid server, labelled with the executor, no secret, a version that follows the configuration', () => {
  const es = entries({
    servers: {
      a: { command: 'node', args: ['a.js'], env: { TOKEN: 'secret-value' } },
      b: { command: 'node', executor: 'devbox' },
      broken: { command: 'node', startupTimeoutMs: -1 },
      web: { type: 'http', url: 'http://h/mcp' },
    },
  });
  const launch = {
    execPath: '/usr/bin/node',
    electron: false,
    cliPath: '/ext/dist/cli.js',
    socketPath: '/tmp/ebmcp-x/s',
    activeExecutor: 'bundled',
  };
  const defs = buildProxyDefinitions(es, launch);
  assert.deepEqual(
    defs.map((d) => d.label),
    ['a · bundled', 'b · devbox', 'web · http'],
  );
  assert.deepEqual(defs[0]!.args, ['/ext/dist/cli.js', 'mcp-proxy', '/tmp/ebmcp-x/s', 'a']);
  assert.deepEqual(defs[0]!.env, {});
  assert.ok(!JSON.stringify(defs).includes('secret-value'), "the server's env stays with us");
  assert.deepEqual(buildProxyDefinitions(es, { ...launch, electron: true })[0]!.env, { ELECTRON_RUN_AS_NODE: '1' });
  // Same input, same key; a changed server or a new active executor changes the version.
  assert.equal(definitionsKey(buildProxyDefinitions(es, launch)), definitionsKey(defs));
  const changed = buildProxyDefinitions(
    entries({ servers: { a: { command: 'node', args: ['a2.js'] }, b: { command: 'node', executor: 'devbox' } } }),
    launch,
  );
  assert.notEqual(changed[0]!.version, defs[0]!.version);
  assert.equal(changed[1]!.version, defs[1]!.version);
  const moved = buildProxyDefinitions(es, { ...launch, activeExecutor: 'other' });
  assert.equal(moved[0]!.label, 'a · other');
  assert.notEqual(moved[0]!.version, defs[0]!.version);
});

test('capability negotiation: only what is provided is announced', () => {
  assert.deepEqual(clientCapabilities(undefined), {});
  const roots = { list: () => [], onDidChange: () => ({ dispose: () => undefined }) };
  assert.deepEqual(clientCapabilities({ roots }), { roots: { listChanged: true } });
  assert.deepEqual(clientCapabilities({ roots, elicit: () => Promise.resolve({ action: 'decline' as const }) }), {
    roots: { listChanged: true },
    elicitation: { form: {} },
  });
  // Sampling only when a sampler (a language model with consent) is given.
  assert.deepEqual(Object.keys(clientCapabilities({ sample: () => Promise.reject(new Error('x')) })), ['sampling']);
});

test('roots: an executor gets its own folders; local folders only where it is this machine', () => {
  const folders = [
    { scheme: 'file', authority: '', path: '/home/me/app', name: 'app' },
    { scheme: 'execbridge', authority: 'devbox', path: '/srv/repo', name: 'repo' },
    { scheme: 'execbridge', authority: 'other', path: '/x', name: 'x' },
  ];
  assert.deepEqual(rootsFor(folders, 'devbox', false), [{ uri: 'file:///srv/repo', name: 'repo' }]);
  assert.deepEqual(rootsFor(folders, 'bundled', true), [{ uri: 'file:///home/me/app', name: 'app' }]);
});

test('elicitation forms: fields in order with kinds; values convert and validate', () => {
  const fields = elicitFields({
    message: 'm',
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', title: 'Name' },
        age: { type: 'integer', minimum: 0 },
        ok: { type: 'boolean' },
        pet: { type: 'string', enum: ['c', 'd'], enumNames: ['Cat', 'Dog'] },
      },
      required: ['name'],
    },
  });
  assert.deepEqual(
    fields.map((f) => [f.key, f.kind, f.required]),
    [
      ['name', 'string', true],
      ['age', 'integer', false],
      ['ok', 'boolean', false],
      ['pet', 'enum', false],
    ],
  );
  assert.deepEqual(fields[3]!.options, [
    { value: 'c', label: 'Cat' },
    { value: 'd', label: 'Dog' },
  ]);
  assert.deepEqual(parseElicitValue(fields[0]!, ''), { error: 'Name is required' });
  assert.equal(parseElicitValue(fields[1]!, '42'), 42);
  assert.deepEqual(parseElicitValue(fields[1]!, '-1'), { error: 'at least 0' });
  assert.deepEqual(parseElicitValue(fields[1]!, '1.5'), { error: 'a whole number is needed' });
  assert.equal(parseElicitValue(fields[1]!, ''), undefined);
  assert.equal(parseElicitValue(fields[2]!, 'yes'), true);
});

test('progress steps: message with the count; increments add up to the fraction done', () => {
  const a = progressStep({ progress: 1, total: 4, message: 'copying' }, 0);
  assert.deepEqual(a, { message: 'copying (1/4)', increment: 25 });
  const b = progressStep({ progress: 3, total: 4 }, 25);
  assert.deepEqual(b, { message: '3/4', increment: 50 });
  assert.deepEqual(progressStep({ progress: 7 }, 0), { message: '7' });
});

test('sampling turns: the system prompt first, text parts as text, other parts named', () => {
  assert.deepEqual(
    samplingTurns({
      systemPrompt: 'be brief',
      maxTokens: 10,
      messages: [
        { role: 'user', content: { type: 'text', text: 'hi' } },
        { role: 'assistant', content: { type: 'image', data: 'AA==', mimeType: 'image/png' } },
      ],
    }),
    [
      { role: 'user', text: 'be brief' },
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: '[image]' },
    ],
  );
});
