/**
 * The official MCP conformance suite's server scenarios (@modelcontextprotocol/conformance, a
 * devDependency) through our gateway, the way VS Code's MCP list reaches our servers: the suite's
 * client → Streamable HTTP (this test's front, the SDK's server transport) → `mcp-proxy` (the
 * definition we give VS Code) → gateway → our client → exec-server → a stdio server that does what
 * the scenarios ask (mcpConformanceServer.ts). Every server scenario the suite lists passes, except
 * the ones about an HTTP server's own transport (docs/mcp.md, "Conformance"), which this front —
 * not ours — would answer. What the server asks while serving the suite's calls (elicitation,
 * sampling) is asked of the suite's client, never of ours. The suite needs a Node newer than 20:
 * it runs on the Node 24 the VS Code tests install (scripts/codeServer.mjs).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isJSONRPCRequest, isJSONRPCResultResponse, isJSONRPCErrorResponse, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpGateway } from '../../src/mcp/gateway';
import { buildProxyDefinitions } from '../../src/mcp/vscodeDefinitions';
import { CLI_JS, REPO_ROOT } from '../helpers/servers';
import { configOf, manager, NODE, startExecutor, type Executor } from './mcpFixtures';

const SUITE = join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const FIXTURE = join(__dirname, '..', 'helpers', 'mcpConformanceServer.js');

/**
 * Not run, by design (the reason is in docs/mcp.md, "Conformance"): they test an HTTP server's
 * transport — resumable SSE streams, concurrent POST streams, Host/Origin checks — and our gateway
 * is a unix socket in a 0700 folder, spoken to over stdio by `mcp-proxy`; through this test's HTTP
 * front they would test the SDK's transport, not us.
 */
const NOT_OURS = ['server-sse-polling', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/** The Node 24 of the VS Code tests (installed from npm once, as they do). */
async function node24(): Promise<string> {
  const lib = (await import(pathToFileURL(join(REPO_ROOT, 'scripts', 'codeServer.mjs')).href)) as {
    ensureNode(version: string): string;
    VSCODE_TARGETS: { newest: { node: string } };
  };
  return join(lib.ensureNode(lib.VSCODE_TARGETS.newest.node), 'bin', 'node');
}

/**
 * Streamable HTTP in front of `mcp-proxy`: one proxy (one gateway session, as VS Code has) per
 * HTTP session. What the proxy sends that is not an answer goes on the stream of the request it
 * belongs to (progress by its token, anything else to the latest request in flight), else on the
 * session's GET stream, as a server SDK sends `extra.sendNotification` / `sendRequest`.
 */
async function startFront(proxy: {
  command: string;
  args: string[];
  env: Record<string, string>;
}): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, { http: StreamableHTTPServerTransport; stdio: StdioClientTransport }>();
  const open = async (): Promise<StreamableHTTPServerTransport> => {
    const stdio = new StdioClientTransport({
      command: proxy.command,
      args: proxy.args,
      env: { ...(process.env as Record<string, string>), ...proxy.env },
      stderr: 'pipe',
    });
    const inFlight: (string | number)[] = [];
    const byToken = new Map<string | number, string | number>();
    const http = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { http, stdio }),
    });
    http.onmessage = (msg: JSONRPCMessage) => {
      if (isJSONRPCRequest(msg)) {
        inFlight.push(msg.id);
        const token = (msg.params as { _meta?: { progressToken?: string | number } } | undefined)?._meta?.progressToken;
        if (token !== undefined) byToken.set(token, msg.id);
      }
      void stdio.send(msg).catch(() => undefined);
    };
    stdio.onmessage = (msg: JSONRPCMessage) => {
      if (isJSONRPCResultResponse(msg) || isJSONRPCErrorResponse(msg)) {
        const i = inFlight.indexOf(msg.id as string | number);
        if (i >= 0) inFlight.splice(i, 1);
        void http.send(msg).catch(() => undefined);
        return;
      }
      const token = (msg as { params?: { progressToken?: string | number } }).params?.progressToken;
      const related = (token !== undefined ? byToken.get(token) : undefined) ?? inFlight.at(-1);
      void http.send(msg, related !== undefined ? { relatedRequestId: related } : undefined).catch(() => undefined);
    };
    http.onclose = () => void stdio.close().catch(() => undefined);
    stdio.onclose = () => void http.close().catch(() => undefined);
    await stdio.start();
    return http;
  };
  const server: HttpServer = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const id = req.headers['mcp-session-id'];
      const known = typeof id === 'string' ? sessions.get(id) : undefined;
      if (known) return known.http.handleRequest(req, res);
      if (req.method !== 'POST') {
        res.writeHead(400).end('no session');
        return;
      }
      const http = await open();
      await http.handleRequest(req, res);
    })().catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: async () => {
      for (const s of sessions.values()) await s.stdio.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
  description?: string;
}

function findChecks(dir: string): string[] {
  let out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out = out.concat(findChecks(p));
    else if (e.name === 'checks.json') out.push(p);
  }
  return out;
}

function runScenario(
  node: string,
  url: string,
  scenario: string,
  results: string,
): Promise<{ scenario: string; code: number | null; checks: Check[]; output: string }> {
  return new Promise((resolve) => {
    const out = join(results, scenario);
    const p = spawn(node, [SUITE, 'server', '--url', url, '--scenario', scenario, '-o', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    let output = '';
    p.stdout.on('data', (d: Buffer) => (output += d.toString()));
    p.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000);
    p.on('close', (code) => {
      clearTimeout(timer);
      const checks = findChecks(out).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as Check[]);
      resolve({ scenario, code, checks, output });
    });
  });
}

describe('MCP conformance suite: server scenarios through the gateway', () => {
  let exec: Executor;
  let node = '';
  let scenarios: string[] = [];
  let results = '';
  before(async () => {
    node = await node24();
    results = mkdtempSync(join(tmpdir(), 'mcp-conformance-server-'));
    const list = spawnSync(node, [SUITE, 'list'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(list.status, 0, list.stderr);
    const section = (list.stdout.split(/Server scenarios[^\n]*\n/)[1] ?? '').split(/\n\s*\n/)[0] ?? '';
    scenarios = [...section.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]!);
    exec = await startExecutor('ours');
  });
  after(async () => {
    await exec?.close();
    rmSync(results, { recursive: true, force: true });
  });

  test('every server scenario passes but the HTTP-transport ones; elicitation and sampling reach the calling client', async () => {
    assert.ok(scenarios.length >= 30, `the suite lists ${scenarios.length} server scenarios: ${scenarios.join(', ')}`);
    for (const s of NOT_OURS) assert.ok(scenarios.includes(s), `"${s}" is no longer a scenario: update NOT_OURS and docs/mcp.md`);
    const ours: string[] = [];
    const m = manager(exec.host, {
      // Announced, so the server may ask; answered by the client that made the call (the suite's).
      client: {
        elicit: () => {
          ours.push('elicit');
          return Promise.resolve({ action: 'decline' });
        },
        sample: () => {
          ours.push('sample');
          return Promise.reject(new Error('our client was asked'));
        },
        canSample: () => true,
      },
    });
    const gateway = new McpGateway(m);
    let front: Awaited<ReturnType<typeof startFront>> | undefined;
    try {
      m.applyConfig(configOf({ conformance: { command: NODE, args: [FIXTURE] } }));
      const socketPath = await gateway.listen();
      const [def] = buildProxyDefinitions(m.config.entries, {
        execPath: NODE,
        electron: false,
        cliPath: CLI_JS,
        socketPath,
        activeExecutor: 'local',
      });
      front = await startFront({ command: def!.command, args: def!.args, env: def!.env });
      const outcomes = [];
      for (const s of scenarios.filter((x) => !NOT_OURS.includes(x))) outcomes.push(await runScenario(node, front.url, s, results));
      const failed = outcomes.filter((o) => o.code !== 0 || o.checks.length === 0 || o.checks.some((c) => c.status === 'FAILURE'));
      const report = failed.map(
        (o) =>
          `${o.scenario} (exit ${o.code}): ${o.checks
            .filter((c) => c.status === 'FAILURE')
            .map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`)
            .join('; ')}\n${o.output.slice(-1200)}`,
      );
      console.log(`conformance: ${outcomes.length - failed.length} of ${outcomes.length} server scenarios passed through the gateway`);
      assert.deepEqual(report, [], report.join('\n\n'));
      assert.deepEqual(ours, [], "the server's questions went to the client that made the call");
      // The log level the suite set reached the server, and its log lines reached us as well.
      assert.ok(
        m
          .get('conformance')!
          .log.all()
          .some((e) => e.kind === 'message' && e.text.includes('Tool execution started')),
      );
    } finally {
      await front?.close();
      await gateway.dispose();
      await m.shutdown();
    }
  });
});
