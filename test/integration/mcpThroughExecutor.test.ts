/**
 * Remote MCP servers only the executor can reach (`"connectFrom": "executor"`): the servers and an
 * exec-server share a network namespace of their own (test/helpers/privateNetwork.ts), the test
 * process talks to the exec-server over a unix socket (ours) or stdio (codex), so every request
 * that reaches a server went through the executor's `http/request`. Streamable HTTP at 2025-11-25
 * (Call Tool, a log message over the standalone SSE stream, a stop that ends the session and the
 * stream), the HTTP+SSE fallback (its stream ended by `execBridge/httpCancel`), the OAuth sign-in
 * against a private authorization server (discovery, registration, token, refresh, revocation —
 * only the browser page is the test's), and the error when the executor cannot reach the URL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient } from '../../src/client';
import type { McpAuthHooks } from '../../src/mcp/authSession';
import { MemoryAuthStore } from '../../src/mcp/authStore';
import { mergeMcpConfig, parseMcpJson } from '../../src/mcp/config';
import type { McpServerManager } from '../../src/mcp/serverManager';
import { FaultProxy } from '../helpers/faultProxy';
import { announcingServer, startHttpMcpServer } from '../helpers/mcpHttpServer';
import { until } from '../helpers/procs';
import { startExecServer } from '../helpers/servers';
import { ANNOUNCEMENT, startPrivateNetwork, type PrivateNetwork } from '../helpers/privateNetwork';
import { manager, TestExecutorHost, text, waitForState } from './mcpFixtures';

function managerOn(client: ExecServerClient | TestExecutorHost, servers: object, auth?: McpAuthHooks): McpServerManager {
  let host = client;
  if (client instanceof ExecServerClient) {
    host = new TestExecutorHost();
    host.set('devbox', client);
  }
  const m = manager(host as TestExecutorHost, auth ? { auth } : {});
  const layer = parseMcpJson(JSON.stringify({ servers }), { kind: 'mcpJson', file: '/w/.vscode/mcp.json', workspaceFolder: '/w' });
  const config = mergeMcpConfig([layer]);
  assert.deepEqual(
    config.diagnostics.filter((d) => d.severity === 'error'),
    [],
  );
  m.applyConfig(config, { autoStart: false });
  return m;
}

/**
 * The user's browser: the authorization page is on the private network, so it is fetched through
 * the executor (a user's browser would get there through their VPN); the redirect to our loopback
 * listener comes back to this process, as in VS Code.
 */
/**
 * A manager with one `web` server at `url` reached through `client` (`"connectFrom": "executor"`),
 * started and ready; its log lines are collected in `messages`. The caller shuts the manager down.
 */
async function startWeb(client: ExecServerClient, url: string) {
  const m = managerOn(client, { web: { type: 'http', url, connectFrom: 'executor' } });
  const s = m.get('web')!;
  const messages: string[] = [];
  s.log.onDidAppend((e) => messages.push(e.text));
  try {
    await s.start();
    assert.equal(s.state.kind, 'ready', s.describe());
  } catch (e) {
    await m.shutdown();
    throw e;
  }
  return { m, s, messages };
}

async function browse(client: ExecServerClient, page: URL, privateOrigin: string): Promise<void> {
  let at = page;
  for (let hop = 0; hop < 10; hop++) {
    let status: number;
    let location: string | undefined;
    if (at.origin === privateOrigin) {
      const r = await client.httpRequestStream({ method: 'GET', url: at.href, headers: [], redirect: 'stop' });
      await r.body.cancel();
      status = r.status;
      location = r.headers.find((h) => h.name === 'location')?.value;
    } else {
      const r = await fetch(at, { redirect: 'manual' });
      await r.body?.cancel();
      status = r.status;
      location = r.headers.get('location') ?? undefined;
    }
    if (status >= 300 && status < 400 && location) {
      at = new URL(location, at);
      continue;
    }
    if (status >= 400) throw new Error(`the page answered HTTP ${status}`);
    return;
  }
  throw new Error('too many redirects');
}

describe('remote MCP servers reached through the executor (a private network)', () => {
  let net: PrivateNetwork;
  let ours: { client: ExecServerClient; stop(): Promise<void> };
  before(async () => {
    net = await startPrivateNetwork();
    ours = await net.startOurs();
  });
  after(async () => {
    await ours?.stop();
    await net?.close();
  });

  test("the servers are out of this process's reach: from the window the same URL fails", async () => {
    const before = (await net.state()).mcp.methods.length;
    const m = managerOn(ours.client, { web: { type: 'http', url: net.urls.mcp } });
    try {
      const s = m.get('web')!;
      await s.start();
      assert.notEqual(s.state.kind, 'ready', s.describe());
      assert.equal((await net.state()).mcp.methods.length, before, 'nothing reached the private server');
      const reason = s.state.kind === 'crashed' ? s.state.reason : '';
      assert.match(
        reason,
        /this window could not reach http:\/\/127\.0\.0\.1:\d+; if only the executor can, set "connectFrom": "executor"/,
      );
    } finally {
      await m.shutdown();
    }
  });

  test('Streamable HTTP at 2025-11-25: tools, Call Tool, a message over the SSE stream; a stop ends the session and the stream', async (t) => {
    const { m, s, messages } = await startWeb(ours.client, net.urls.mcp);
    try {
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.equal(s.executor?.id, 'devbox');
      assert.ok(s.log.all().some((e) => /through executor "devbox"/.test(e.text)));
      assert.deepEqual(
        s.tools.map((t) => t.name),
        ['shout', 'announce'],
      );
      assert.equal(text(await s.callTool('shout', { text: 'private' })), 'PRIVATE');
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) assert.equal(text(await s.callTool('shout', { text: `n${i}` })), `N${i}`);
      t.diagnostic(`20 Call Tools through the executor: ${((performance.now() - t0) / 20).toFixed(1)} ms each`);
      // The SDK opens the standalone event stream on its own after initialize: waited for.
      const st = await untilState(net, (x) => x.mcp.streams === 1, 'the standalone event stream open, through the executor');
      assert.deepEqual(st.mcp.methods.slice(0, 3), ['server/discover', 'initialize', 'notifications/initialized']);
      assert.equal(st.mcp.openSessions, 1);
      assert.equal(text(await s.callTool('announce', {})), 'announcing');
      await until(() => messages.some((l) => l.includes(ANNOUNCEMENT)), 10_000, 'the message sent over the event stream');
      await s.stop();
      assert.equal(s.state.kind, 'stopped');
      const end = await untilState(net, (x) => x.mcp.openSessions === 0 && x.mcp.streams === 0, 'the session and its stream ended');
      assert.equal(end.mcp.openSessions, 0);
    } finally {
      await m.shutdown();
    }
  });

  test('an HTTP+SSE-only server: the fallback through the executor; a stop ends its event stream there (execBridge/httpCancel)', async () => {
    const m = managerOn(ours.client, { old: { url: net.urls.sse, connectFrom: 'executor' } });
    try {
      const s = m.get('old')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.ok(s.log.all().some((e) => /HTTP\+SSE/.test(e.text)));
      assert.equal(text(await s.callTool('shout', { text: 'sse' })), 'SSE');
      assert.equal((await net.state()).sse.openSessions, 1);
      await s.stop();
      // HTTP+SSE has no DELETE: only the end of the GET stream ends the session on the server.
      await untilState(net, (x) => x.sse.openSessions === 0 && x.sse.streams === 0, 'the SSE stream ended on the server');
    } finally {
      await m.shutdown();
    }
  });

  test('sign-in against a private authorization server: discovery, registration, token, refresh and revocation through the executor', async () => {
    await signInThrough(ours.client);
  });

  test('the same sign-in through codex exec-server', async () => {
    const client = await ExecServerClient.connect({ endpoint: net.codexEndpoint(), clientName: 'private-net-codex-auth' });
    try {
      await signInThrough(client);
    } finally {
      client.dispose();
    }
  });

  /** Start (sign-in required), Sign in… (the page through `client`), a refresh, Sign Out's revocation: all at the private server. */
  async function signInThrough(client: ExecServerClient): Promise<void> {
    const before = (await net.state()).oauth;
    const store = new MemoryAuthStore();
    const opened: URL[] = [];
    const origin = new URL(net.urls.oauth).origin;
    const auth: McpAuthHooks = {
      store,
      openBrowser: async (_server, u) => {
        opened.push(u);
        await browse(client, u, origin);
      },
    };
    const m = managerOn(client, { tracker: { type: 'http', url: net.urls.oauth, connectFrom: 'executor' } }, auth);
    const logs: string[] = [];
    try {
      const s = m.get('tracker')!;
      s.log.onDidAppend((e) => logs.push(e.text));
      await s.start();
      assert.equal(s.state.kind, 'stopped', s.describe());
      assert.equal(s.auth.status.kind, 'signInRequired');
      assert.equal(opened.length, 0);

      await s.signIn();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(opened.length, 1);
      assert.equal(opened[0]!.origin, origin, 'the authorization page of the private server');
      assert.equal(opened[0]!.searchParams.get('resource'), net.urls.oauth);
      assert.equal(text(await s.callTool('whoami', {})), net.urls.account);
      let st = await net.state();
      assert.equal(st.oauth.counts.registrations, before.counts.registrations + 1, 'dynamic registration reached it');
      assert.equal(st.oauth.counts.authorizations, before.counts.authorizations + 1);

      await net.state('expire');
      assert.equal(text(await s.callTool('whoami', {})), net.urls.account, 'the call goes through after a refresh');
      st = await net.state();
      assert.equal(st.oauth.counts.refreshes, before.counts.refreshes + 1, 'the refresh reached it');
      assert.equal(opened.length, 1);

      const stored = JSON.parse([...store.values.values()][0]!) as { tokens: { access_token: string; refresh_token: string } };
      await s.signOut();
      assert.equal(store.values.size, 0);
      st = await net.state('state', stored.tokens.refresh_token);
      assert.deepEqual(
        st.oauth.revocations.slice(before.revocations.length).map((r) => [r.hint, r.named]),
        [
          ['refresh_token', 'refresh'],
          ['access_token', 'access'],
        ],
      );
      assert.equal(st.live, false, 'the refresh token is dead at the private authorization server');
      assert.ok(logs.some((l) => /revoked at the authorization server/.test(l)));
      const all = logs.join('\n');
      assert.ok(st.oauth.secrets.length >= 5);
      for (const secret of st.oauth.secrets) assert.ok(!all.includes(secret), 'no code, token or secret in the log');
    } finally {
      await m.shutdown();
    }
  }

  test('a switch of the active executor moves the server: its session ends there and begins on the new one', async () => {
    const second = await ExecServerClient.connect({ endpoint: net.urls.ours!, clientName: 'private-net-second' });
    const host = new TestExecutorHost();
    host.set('devbox', ours.client);
    host.set('devbox2', second);
    const m = managerOn(host, { web: { type: 'http', url: net.urls.mcp, connectFrom: 'executor' } });
    try {
      const s = m.get('web')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.executor?.id, 'devbox');
      const sessions = (await net.state()).mcp.openSessions;
      host.active = 'devbox2';
      host.changed();
      await waitForState(s, (x) => x.kind === 'ready' && s.executor?.id === 'devbox2', 20_000, 'ready on devbox2');
      assert.equal(text(await s.callTool('shout', { text: 'moved' })), 'MOVED');
      await untilState(net, (x) => x.mcp.openSessions === sessions, 'the old session ended, the new one is open');
    } finally {
      await m.shutdown();
      second.dispose();
    }
  });

  test('a URL the executor cannot reach: the start fails saying so', async () => {
    const m = managerOn(ours.client, { gone: { type: 'http', url: 'http://127.0.0.1:9/mcp', connectFrom: 'executor' } });
    try {
      const s = m.get('gone')!;
      await s.start();
      assert.equal(s.state.kind, 'crashed', s.describe());
      const reason = s.state.kind === 'crashed' ? s.state.reason : '';
      assert.match(reason, /the executor "devbox" could not reach http:\/\/127\.0\.0\.1:9/);
    } finally {
      await m.shutdown();
    }
  });

  test('on codex exec-server (stdio, same network): Streamable HTTP, Call Tool and the event stream', async () => {
    const client = await ExecServerClient.connect({ endpoint: net.codexEndpoint(), clientName: 'private-net-codex' });
    const { m, s, messages } = await startWeb(client, net.urls.mcp);
    try {
      assert.equal(text(await s.callTool('shout', { text: 'codex' })), 'CODEX');
      assert.equal(text(await s.callTool('announce', {})), 'announcing');
      await until(() => messages.some((l) => l.includes(ANNOUNCEMENT)), 10_000, 'the message sent over the event stream');
      await s.stop();
      // Codex cannot end a stream early; the DELETE ends the session, and the server its stream.
      await untilState(net, (x) => x.mcp.openSessions === 0, 'the session ended');
    } finally {
      await m.shutdown();
      client.dispose();
    }
  });
});

describe('a remote server through an executor whose connection drops', () => {
  test("the session goes on: Call Tool after the resume, the server's messages on the stream opened again", async () => {
    const http = await startHttpMcpServer({ server: announcingServer });
    const exec = await startExecServer('ours');
    const proxy = await FaultProxy.forUrl(exec.url);
    const client = await ExecServerClient.connect({
      endpoint: { kind: 'websocket', url: proxy.url },
      keepalive: { intervalMs: 250, timeoutMs: 500 },
      attemptTimeoutMs: 1_000,
    });
    const { m, s, messages } = await startWeb(client, http.url);
    try {
      await until(() => http.streams() === 1, 10_000, 'the event stream is open');
      let resumed = false;
      const sub = client.onDidChangeState((st) => {
        if (st.kind === 'connected') resumed = true;
      });
      proxy.cut();
      await until(() => resumed, 15_000, 'the exec connection resumed');
      sub.dispose();
      assert.equal(text(await s.callTool('shout', { text: 'after' })), 'AFTER');
      assert.equal(s.state.kind, 'ready', s.describe());
      // The old stream ended with the old connection; the SDK opens it again (after its own delay):
      // a message reaches us once it is open. Bounded: 10 tries of 2 s.
      let heard = false;
      for (let i = 0; i < 10 && !heard; i++) {
        const before = messages.filter((l) => l.includes(ANNOUNCEMENT)).length;
        await s.callTool('announce', {});
        heard = await until(() => messages.filter((l) => l.includes(ANNOUNCEMENT)).length > before, 2_000, 'a message').then(
          () => true,
          () => false,
        );
      }
      assert.ok(heard, `no message over the reopened stream: ${messages.join('\n')}`);
      assert.equal(http.streams(), 1, 'one stream, the new one');
    } finally {
      await m.shutdown();
      client.dispose();
      await proxy.close();
      await exec.stop();
      await http.close();
    }
  });
});

/** Asks the private servers until `pred` holds (bounded: 10 s); returns that state. */
async function untilState(net: PrivateNetwork, pred: (s: Awaited<ReturnType<PrivateNetwork['state']>>) => boolean, what: string) {
  const deadline = Date.now() + 30_000;
  for (let i = 0; i < 600; i++) {
    const s = await net.state();
    if (pred(s)) return s;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await net.state())}`);
}
