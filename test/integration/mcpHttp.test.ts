/**
 * Remote (http/sse) servers from the configuration, connected from the extension host through the
 * v2 SDK's client transports, against a 2025 MCP server (the 1.x SDK) the test runs on 127.0.0.1:
 * headers with `${input:}`, the version negotiation (server/discover refused, then initialize at
 * 2025-11-25), tools and Call Tool, a stop that ends the session, the HTTP+SSE fallback, and a
 * 401 (sign-in required without a configured Authorization header; the header refused with one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mergeMcpConfig, parseMcpJson } from '../../src/mcp/config';
import type { McpServerManager } from '../../src/mcp/serverManager';
import { OAUTH_MESSAGE } from '../../src/mcp/remoteTransport';
import { until } from '../helpers/procs';
import { startHttpMcpServer, type HttpMcpServer } from '../helpers/mcpHttpServer';
import { manager, TestExecutorHost, text } from './mcpFixtures';

function managerFor(json: object, answers: Record<string, string>): McpServerManager {
  const m = manager(new TestExecutorHost(), {
    resolveInput: (i) => Promise.resolve(answers[i.id]),
  });
  const layer = parseMcpJson(JSON.stringify(json), { kind: 'mcpJson', file: '/w/.vscode/mcp.json', workspaceFolder: '/w' });
  const config = mergeMcpConfig([layer]);
  assert.deepEqual(
    config.diagnostics.filter((d) => d.severity === 'error'),
    [],
  );
  m.applyConfig(config, { autoStart: false });
  return m;
}

describe('remote MCP servers (http, sse) from mcp.json', () => {
  let http: HttpMcpServer;
  let sseOnly: HttpMcpServer;
  before(async () => {
    http = await startHttpMcpServer({ token: 's3cret' });
    sseOnly = await startHttpMcpServer({ token: 's3cret', sseOnly: true });
  });
  after(async () => {
    await http?.close();
    await sseOnly?.close();
  });

  test('an http server with a ${input:} header: ready with its tools, Call Tool works, a stop ends the session', async () => {
    const m = managerFor(
      {
        inputs: [{ id: 'tok', type: 'promptString', description: 'token', password: true }],
        servers: { web: { type: 'http', url: http.url, headers: { Authorization: 'Bearer ${input:tok}' } } },
      },
      { tok: 's3cret' },
    );
    try {
      const s = m.get('web')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      // A 2025 server: it refused the 2026-07-28 probe, so the session began with initialize.
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.deepEqual(http.methods().slice(0, 3), ['server/discover', 'initialize', 'notifications/initialized']);
      assert.deepEqual(
        s.tools.map((t) => t.name),
        ['shout'],
      );
      assert.equal(text(await s.callTool('shout', { text: 'hi' })), 'HI');
      assert.equal(http.openSessions(), 1);
      assert.ok(s.log.all().some((e) => /Streamable HTTP/.test(e.text)));
      assert.ok(!s.log.all().some((e) => e.text.includes('s3cret')), 'the header value is never logged');
      await s.stop();
      assert.equal(s.state.kind, 'stopped');
      await until(() => http.openSessions() === 0, 5000, 'the session ended on the server');
    } finally {
      await m.shutdown();
    }
  });

  test('type http against an HTTP+SSE-only server falls back to SSE', async () => {
    const m = managerFor({ servers: { old: { url: sseOnly.url, headers: { Authorization: 'Bearer s3cret' } } } }, {});
    try {
      const s = m.get('old')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(text(await s.callTool('shout', { text: 'sse' })), 'SSE');
      assert.ok(s.log.all().some((e) => /HTTP\+SSE/.test(e.text)));
      assert.equal(s.protocolVersion, '2025-11-25');
      // The probe and the first initialize went to the Streamable HTTP POST (refused), the next over SSE.
      assert.deepEqual(sseOnly.methods().slice(0, 3), ['server/discover', 'initialize', 'initialize']);
    } finally {
      await m.shutdown();
    }
    await until(() => sseOnly.openSessions() === 0, 5000, 'the SSE session ended');
  });

  test('type sse: HTTP+SSE from the start, the probe refused on it, 2025-11-25', async () => {
    const m = managerFor({ servers: { old: { type: 'sse', url: sseOnly.url, headers: { Authorization: 'Bearer s3cret' } } } }, {});
    try {
      const before = sseOnly.methods().length;
      const s = m.get('old')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.ok(!s.log.all().some((e) => /trying the HTTP\+SSE transport/.test(e.text)), 'no fallback: it was SSE already');
      assert.deepEqual(sseOnly.methods().slice(before, before + 2), ['server/discover', 'initialize']);
      assert.equal(text(await s.callTool('shout', { text: 'sse' })), 'SSE');
    } finally {
      await m.shutdown();
    }
    await until(() => sseOnly.openSessions() === 0, 5000, 'the SSE session ended');
  });

  test('a 401 without a configured Authorization header: sign-in required (stopped, not crashed)', async () => {
    const m = managerFor({ servers: { locked: { type: 'http', url: http.url } } }, {});
    try {
      const s = m.get('locked')!;
      const before = http.refused();
      await s.start();
      assert.equal(s.state.kind, 'stopped', s.describe());
      assert.ok(http.refused() > before);
      assert.equal(s.auth.status.kind, 'signInRequired');
      const reason = s.state.kind === 'stopped' ? (s.state.reason ?? '') : '';
      assert.match(reason, /sign-in required/);
    } finally {
      await m.shutdown();
    }
  });

  test('a 401 to a configured Authorization header says the header does not authorize (no OAuth then)', async () => {
    const m = managerFor({ servers: { locked: { type: 'http', url: http.url, headers: { Authorization: 'Bearer wrong' } } } }, {});
    try {
      const s = m.get('locked')!;
      await s.start();
      assert.equal(s.state.kind, 'crashed');
      const reason = s.state.kind === 'crashed' ? s.state.reason : '';
      assert.ok(reason.includes(OAUTH_MESSAGE), reason);
      assert.equal(s.auth.status.kind, 'none');
    } finally {
      await m.shutdown();
    }
  });
});
