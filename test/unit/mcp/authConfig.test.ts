/**
 * The `oauth` key of remote servers (src/mcp/config/auth.ts) and the parts of sign-in that need no
 * server: the provider's background rules (no registration and no browser outside "Sign in…", no
 * refresh for a step-up), the account shown in the tree, and the stored entry of a sign-out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accountOf, isSignInRequired, McpAuthSession } from '../../../src/mcp/authSession';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileAuthStore, MemoryAuthStore } from '../../../src/mcp/authStore';
import { mergeMcpConfig, parseMcpJson, resolveRemote, type McpServerEntry } from '../../../src/mcp/config';

const source = { kind: 'mcpJson' as const, file: '/w/.vscode/mcp.json', workspaceFolder: '/w' };
const entries = (json: object): McpServerEntry[] => mergeMcpConfig([parseMcpJson(JSON.stringify(json), source)]).entries;
const inputs = [
  { id: 'secret', type: 'promptString', description: 's', password: true },
  { id: 'key', type: 'promptString', description: 'k', password: true },
];

test('oauth: pre-registered, client credentials, cross-app access and off parse; mistakes name the key', () => {
  const [pre, m2m, xaa, off, bad, stdio, undeclared] = entries({
    inputs,
    servers: {
      pre: { url: 'https://h/mcp', oauth: { clientId: 'c', clientSecret: '${input:secret}', scopes: ['read'], callbackPort: 33418 } },
      m2m: { url: 'https://h/mcp', oauth: { grant: 'clientCredentials', clientId: 'c', privateKey: '${input:key}' } },
      xaa: {
        url: 'https://h/mcp',
        oauth: {
          grant: 'crossAppAccess',
          clientId: 'c',
          clientSecret: 's',
          idp: { tokenEndpoint: 'https://idp/t', clientId: 'i', idToken: 'x' },
        },
      },
      off: { url: 'https://h/mcp', oauth: false },
      bad: { url: 'https://h/mcp', oauth: { grant: 'password', scopes: ['a b'], callbackPort: 0, color: 1 } },
      stdio: { command: 'node', oauth: {} },
      undeclared: { url: 'https://h/mcp', oauth: { clientId: 'c', clientSecret: '${input:nope}' } },
    },
  });
  assert.deepEqual(pre!.definition?.remote?.oauth, {
    enabled: true,
    grant: 'authorizationCode',
    clientId: 'c',
    clientSecret: '${input:secret}',
    scopes: ['read'],
    callbackPort: 33418,
  });
  assert.equal(m2m!.definition?.remote?.oauth?.grant, 'clientCredentials');
  assert.equal(xaa!.definition?.remote?.oauth?.idp?.tokenEndpoint, 'https://idp/t');
  assert.equal(off!.definition?.remote?.oauth?.enabled, false);
  assert.deepEqual(bad!.errors.map((e) => e.key).sort(), [
    'servers.bad.oauth.callbackPort',
    'servers.bad.oauth.color',
    'servers.bad.oauth.grant',
    'servers.bad.oauth.scopes',
  ]);
  assert.equal(stdio!.errors[0]?.key, 'servers.stdio.oauth');
  assert.match(undeclared!.errors[0]?.message ?? '', /\$\{input:nope\} refers to an input that no "inputs" entry declares/);
  // A changed sign-in setting is a changed server (restart to apply).
  const [again] = entries({ inputs, servers: { pre: { url: 'https://h/mcp', oauth: { clientId: 'other' } } } });
  assert.notEqual(again!.definition!.fingerprint, pre!.definition!.fingerprint);
});

test('resolveRemote fills the variables of oauth (a secret from an input)', async () => {
  const [pre] = entries({ inputs, servers: { pre: { url: 'https://h/mcp', oauth: { clientId: 'c', clientSecret: '${input:secret}' } } } });
  const r = await resolveRemote(pre!.definition!, mergeMcpConfig([parseMcpJson(JSON.stringify({ inputs }), source)]).inputs, {
    userHome: '/home/u',
    env: {},
    resolveInput: (i) => Promise.resolve(i.id === 'secret' ? 's3' : undefined),
    readFile: () => Promise.reject(new Error('none')),
  });
  assert.equal(r.oauth?.clientSecret, 's3');
});

function session(store = new MemoryAuthStore()): { s: McpAuthSession; lines: string[]; opened: URL[] } {
  const lines: string[] = [];
  const opened: URL[] = [];
  const s = new McpAuthSession(
    'srv',
    {
      store,
      openBrowser: (_server, u) => {
        opened.push(u);
        return Promise.resolve();
      },
    },
    (l) => lines.push(l),
    'Exec Bridge',
  );
  return { s, lines, opened };
}

test('outside "Sign in…" the provider registers no client and opens no browser: it says sign-in required', async () => {
  const { s, opened } = session();
  await s.bind(new URL('https://h/mcp'), undefined);
  assert.throws(
    () => s.provider.clientInformation(),
    (e: unknown) => isSignInRequired(e),
  );
  assert.equal(s.status.kind, 'signInRequired');
  await assert.rejects(
    Promise.resolve(s.provider.redirectToAuthorization(new URL('https://as/authorize?scope=read+write'))),
    (e: unknown) => isSignInRequired(e) && e.scope === 'read write',
  );
  assert.equal(opened.length, 0);
  // A pre-registered client is known without registering; a client-credentials one needs no redirect.
  await s.bind(new URL('https://h/mcp'), { enabled: true, grant: 'clientCredentials', clientId: 'c', clientSecret: 'x' });
  assert.deepEqual(s.provider.clientInformation(), { client_id: 'c', client_secret: 'x' });
  assert.equal(s.provider.redirectUrl, undefined);
  assert.equal((await s.provider.prepareTokenRequest('a'))?.get('grant_type'), 'client_credentials');
});

test('tokens: stored per server, refresh withheld for a step-up, the account from the JWT, Sign out deletes the entry', async () => {
  const store = new MemoryAuthStore();
  const { s, lines } = session(store);
  await s.bind(new URL('https://h/mcp'), undefined);
  const claims = Buffer.from(JSON.stringify({ email: 'bob@example.test' })).toString('base64url');
  await s.provider.saveTokens({ access_token: `e30.${claims}.sig`, token_type: 'Bearer', refresh_token: 'r-secret', expires_in: 60 });
  assert.equal(store.values.size, 1);
  const st = s.status;
  assert.equal(st.kind === 'signedIn' && st.account, 'bob@example.test');
  assert.equal(s.provider.tokens()?.refresh_token, 'r-secret');
  s.stepUpScope = 'admin';
  assert.equal(s.provider.tokens()?.refresh_token, undefined, 'a refresh cannot widen the grant');
  // A second window reads the same entry.
  const other = session(store).s;
  await other.bind(new URL('https://h/mcp'), undefined);
  assert.equal(other.status.kind, 'signedIn');
  assert.equal(await other.isStored(), true);
  await other.signOut();
  assert.equal(store.values.size, 0);
  assert.equal(await s.isStored(), false);
  assert.ok(!lines.join('\n').includes('r-secret'));
  assert.equal(accountOf({ access_token: 'opaque', token_type: 'Bearer' }), undefined);
});

test('the file store (command lines): one 0600 JSON file, saves in a row all kept, delete removes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'auth-store-'));
  try {
    const path = join(dir, 'sub', 'mcp-oauth.json');
    const store = new FileAuthStore(path);
    await Promise.all([store.set('a', '1'), store.set('b', '2'), store.set('c', '3')]);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { a: '1', b: '2', c: '3' });
    await store.delete('b');
    assert.equal(await new FileAuthStore(path).get('b'), undefined);
    assert.equal(await new FileAuthStore(path).get('c'), '3');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
