/**
 * Sign-in to a remote MCP server that requires OAuth, through the manager as the tree uses it,
 * against a local authorization + resource server (test/helpers/oauthTestServer.ts): a start
 * without a sign-in stops with "sign-in required" (no browser, no registration); Sign in… opens
 * the browser once (dynamic registration, PKCE, loopback redirect) and the server is ready as
 * the account; the sign-in is kept (a restart and a new window need no browser); an expired
 * token is refreshed without the user; Sign out deletes the stored entry, stops the server and
 * revokes the tokens at the authorization server (RFC 7009) — a server without a revocation
 * endpoint is only forgotten, one whose endpoint fails or stays silent signs out all the same.
 * No code, token or secret ever reaches the server's log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { McpAuthStatus, StoredAuth } from '../../src/mcp/authSession';
import { MemoryAuthStore } from '../../src/mcp/authStore';
import type { McpServer } from '../../src/mcp/mcpServer';
import { mergeMcpConfig, parseMcpJson } from '../../src/mcp/config';
import type { McpServerManager } from '../../src/mcp/serverManager';
import { followRedirects, startOAuthTestServer, type OAuthTestServer, type RevocationMode } from '../helpers/oauthTestServer';
import { manager, TestExecutorHost, text } from './mcpFixtures';

/** Read afresh (assert.equal narrows what it checked, and these change between awaits). */
const state = (s: McpServer): string => s.state.kind;
const auth = (s: McpServer): McpAuthStatus => s.auth.status;

/** The one stored sign-in of the store (what Sign out is to revoke). */
function storedOf(store: MemoryAuthStore): StoredAuth {
  assert.equal(store.values.size, 1);
  return JSON.parse([...store.values.values()][0]!) as StoredAuth;
}

function managerFor(url: string, store: MemoryAuthStore, opened: URL[], extra: object = {}, revokeTimeoutMs?: number): McpServerManager {
  const m = manager(new TestExecutorHost(), {
    auth: {
      store,
      openBrowser: async (_server, u) => {
        opened.push(u);
        await followRedirects(u);
      },
      ...(revokeTimeoutMs !== undefined ? { revokeTimeoutMs } : {}),
    },
  });
  const layer = parseMcpJson(JSON.stringify({ servers: { tracker: { type: 'http', url, ...extra } } }), {
    kind: 'mcpJson',
    file: '/w/.vscode/mcp.json',
    workspaceFolder: '/w',
  });
  const config = mergeMcpConfig([layer]);
  assert.deepEqual(
    config.diagnostics.filter((d) => d.severity === 'error'),
    [],
  );
  m.applyConfig(config, { autoStart: false });
  return m;
}

describe('OAuth sign-in to a remote MCP server', () => {
  let as: OAuthTestServer;
  before(async () => {
    as = await startOAuthTestServer();
  });
  after(async () => {
    await as?.close();
  });

  test('start → sign-in required; Sign in… → ready as the account; kept, refreshed, signed out; nothing secret logged', async () => {
    const store = new MemoryAuthStore();
    const opened: URL[] = [];
    const m = managerFor(as.url, store, opened);
    const logs: string[] = [];
    try {
      const s = m.get('tracker')!;
      s.log.onDidAppend((e) => logs.push(e.text));

      await s.start();
      assert.equal(state(s), 'stopped', s.describe());
      assert.equal(auth(s).kind, 'signInRequired');
      assert.equal(opened.length, 0, 'a start never opens the browser');
      assert.equal(as.counts().registrations, 0, 'nor registers a client');

      await s.signIn();
      assert.equal(state(s), 'ready', s.describe());
      assert.equal(opened.length, 1);
      const page = opened[0]!;
      assert.equal(page.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(page.searchParams.get('resource'), as.url, 'the RFC 8707 resource is the server');
      assert.equal(page.searchParams.get('scope'), 'mcp', 'the scope the server advertises');
      assert.match(page.searchParams.get('redirect_uri') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      const st = auth(s);
      assert.equal(st.kind, 'signedIn');
      assert.equal(st.kind === 'signedIn' && st.account, as.account);
      assert.equal(text(await s.callTool('whoami', {})), as.account);
      assert.equal(store.values.size, 1, 'one stored entry for the server');

      await s.restart();
      assert.equal(state(s), 'ready', s.describe());
      assert.equal(opened.length, 1, 'a restart uses the stored sign-in');

      as.expireAccessTokens();
      assert.equal(text(await s.callTool('whoami', {})), as.account, 'the call goes through after a refresh');
      assert.equal(as.counts().refreshes, 1);
      assert.equal(opened.length, 1, 'a refresh needs no browser');

      const signedIn = storedOf(store);
      const { access_token: access, refresh_token: refresh } = signedIn.tokens!;
      assert.ok(as.isLive(access) && refresh !== undefined && as.isLive(refresh));
      await s.signOut();
      assert.equal(store.values.size, 0, 'Sign out deletes the stored entry');
      assert.equal(state(s), 'stopped');
      assert.equal(auth(s).kind, 'none');
      // RFC 7009: the refresh token, then the access token, by the client they were issued to.
      assert.deepEqual(as.revocations(), [
        { client: signedIn.client!.client_id, hint: 'refresh_token', named: 'refresh' },
        { client: signedIn.client!.client_id, hint: 'access_token', named: 'access' },
      ]);
      assert.ok(!as.isLive(access) && !as.isLive(refresh), 'the authorization server no longer honours them');
      assert.ok(logs.some((l) => /revoked at the authorization server: the refresh token and the access token/.test(l)));
      await s.start();
      assert.equal(state(s), 'stopped', 'signed out: a start needs a sign-in again');
      assert.equal(auth(s).kind, 'signInRequired');
    } finally {
      await m.shutdown();
    }
    const all = logs.join('\n');
    assert.match(all, /signed in as alice@example\.test/);
    for (const secret of as.secrets()) assert.ok(!all.includes(secret), 'no code, token or secret in the log');
    assert.ok(as.secrets().length >= 5);
  });

  test('a new window (a new manager on the same store) starts signed in', async () => {
    const store = new MemoryAuthStore();
    const opened: URL[] = [];
    const first = managerFor(as.url, store, opened);
    try {
      await first.get('tracker')!.signIn();
      assert.equal(state(first.get('tracker')!), 'ready');
    } finally {
      await first.shutdown();
    }
    const second = managerFor(as.url, store, opened);
    try {
      const s = second.get('tracker')!;
      await s.start();
      assert.equal(state(s), 'ready', s.describe());
      assert.equal(opened.length, 1);
      assert.equal(auth(s).kind, 'signedIn');
    } finally {
      await second.shutdown();
    }
  });

  test('"oauth": false: a 401 is reported, no sign-in is offered', async () => {
    const opened: URL[] = [];
    const m = managerFor(as.url, new MemoryAuthStore(), opened, { oauth: false });
    try {
      const s = m.get('tracker')!;
      await s.start();
      assert.equal(state(s), 'crashed');
      const st = s.state;
      assert.match(st.kind === 'crashed' ? st.reason : '', /HTTP 401/);
      await assert.rejects(s.signIn(), /turned off/);
      assert.equal(opened.length, 0);
    } finally {
      await m.shutdown();
    }
  });
});

describe('Sign out where the authorization server cannot revoke', () => {
  /** Signs in, signs out: what the log said, and the tokens that were stored. */
  async function signInAndOut(as: OAuthTestServer, revokeTimeoutMs?: number) {
    const store = new MemoryAuthStore();
    const m = managerFor(as.url, store, [], {}, revokeTimeoutMs);
    const logs: string[] = [];
    try {
      const s = m.get('tracker')!;
      s.log.onDidAppend((e) => logs.push(e.text));
      await s.signIn();
      assert.equal(state(s), 'ready', s.describe());
      const tokens = storedOf(store).tokens!;
      await s.signOut();
      assert.equal(store.values.size, 0, 'the stored sign-in is deleted all the same');
      assert.equal(auth(s).kind, 'none', 'signed out');
      assert.equal(state(s), 'stopped');
      await s.start();
      assert.equal(auth(s).kind, 'signInRequired', 'the next start needs a sign-in');
      return { logs, tokens };
    } finally {
      await m.shutdown();
    }
  }

  test('no revocation_endpoint in its metadata: the tokens are only forgotten, no request is made', async () => {
    const as = await startOAuthTestServer({ revocation: 'none' });
    try {
      const { logs, tokens } = await signInAndOut(as);
      assert.deepEqual(as.revocations(), []);
      assert.ok(as.isLive(tokens.access_token), 'nothing revoked them');
      assert.ok(logs.some((l) => /no revocation endpoint: the tokens were only forgotten here/.test(l)));
      for (const secret of as.secrets()) assert.ok(!logs.join('\n').includes(secret));
    } finally {
      await as.close();
    }
  });

  for (const mode of ['fail', 'hang'] as RevocationMode[]) {
    test(`a revocation endpoint that ${mode === 'fail' ? 'answers HTTP 500' : 'never answers'}: signed out anyway, the log says revoking failed`, async () => {
      const as = await startOAuthTestServer({ revocation: mode });
      try {
        const { logs } = await signInAndOut(as, mode === 'hang' ? 500 : undefined);
        assert.equal(as.revocations()[0]?.hint, 'refresh_token', 'it was asked');
        const line = logs.find((l) => /revoking the tokens at the authorization server failed/.test(l));
        assert.ok(line, logs.join('\n'));
        assert.match(line, mode === 'fail' ? /HTTP 500/ : /no answer within/);
        for (const secret of as.secrets()) assert.ok(!logs.join('\n').includes(secret), 'no token in the log');
      } finally {
        await as.close();
      }
    });
  }
});
