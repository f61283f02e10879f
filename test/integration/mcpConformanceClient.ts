/**
 * The client the official MCP conformance suite (@modelcontextprotocol/conformance) runs for its
 * client scenarios (not a test file: mcpConformanceClient.test.ts runs the suite with this). It
 * drives our manager the way a user does: a configuration with an `http` server at the suite's
 * URL (the scenario's context becomes the `oauth` keys a user would write, secrets as inputs),
 * Start, Sign in… when the server asks for it, then Call Tool on each of its tools — with Sign
 * in… once more when a call needs more access. The browser is a function that follows the
 * authorization page's redirects with fetch (the suite's authorization servers answer at once),
 * as the suite's own client harness does; the redirect lands on our loopback listener.
 *
 * Usage (by the suite): MCP_CONFORMANCE_SCENARIO=… [MCP_CONFORMANCE_CONTEXT=…] node mcpConformanceClient.js URL
 * Exit 0 when every step worked. Every line it prints is what the manager logged (no token may
 * appear: the test checks).
 */
import type { ElicitRequestFormParams, ElicitResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { MemoryAuthStore } from '../../src/mcp/authStore';
import { isSignInRequired } from '../../src/mcp/authSession';
import { mergeMcpConfig, parseMcpJson } from '../../src/mcp/config';
import type { McpExecutorHost } from '../../src/mcp/executorHost';
import type { McpServer } from '../../src/mcp/mcpServer';
import { McpServerManager } from '../../src/mcp/serverManager';
import { Emitter } from '../../src/util/emitter';
import { errorMessage } from '../../src/util/errorMessage';
import { followRedirects } from '../helpers/oauthTestServer';

/** The Client ID Metadata Document URL the suite's CIMD scenarios accept (a user's own would be theirs). */
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';

/** A remote server needs no executor. */
const noExecutors: McpExecutorHost = {
  onDidChange: new Emitter<void>().event,
  acquire: () => Promise.reject(new Error('no executor in the conformance client')),
  resolveId: () => undefined,
};

/** The user accepts a form as it is offered (each field's default filled in). */
function acceptDefaults(_server: string, params: ElicitRequestFormParams): Promise<ElicitResult> {
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [k, p] of Object.entries(params.requestedSchema.properties)) {
    const d = (p as { default?: unknown }).default;
    if (typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean') content[k] = d;
    else if (Array.isArray(d)) content[k] = d.map(String);
  }
  return Promise.resolve({ action: 'accept', content });
}

/** What a user types for a tool's arguments: a value of the right type for each required one. */
function argumentsFor(tool: Tool): Record<string, unknown> {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
  const out: Record<string, unknown> = {};
  for (const name of tool.inputSchema.required ?? []) {
    const t = props[name]?.type;
    out[name] = t === 'number' || t === 'integer' ? 2 : t === 'boolean' ? true : 'x';
  }
  return out;
}

interface Context {
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
  idp_client_id?: string;
  idp_id_token?: string;
  idp_token_endpoint?: string;
}

/** The configuration a user would write for this scenario: secrets as `${input:…}`, answered from `answers`. */
function configFor(scenario: string, url: string, ctx: Context): { json: object; answers: Record<string, string> } {
  const answers: Record<string, string> = {};
  const input = (id: string, value: string | undefined) => {
    answers[id] = value ?? '';
    return `\${input:${id}}`;
  };
  let oauth: Record<string, unknown> = { clientMetadataUrl: CIMD_URL };
  if (scenario === 'auth/pre-registration') oauth = { clientId: ctx.client_id, clientSecret: input('secret', ctx.client_secret) };
  else if (scenario === 'auth/client-credentials-basic')
    oauth = { grant: 'clientCredentials', clientId: ctx.client_id, clientSecret: input('secret', ctx.client_secret) };
  else if (scenario === 'auth/client-credentials-jwt')
    oauth = {
      grant: 'clientCredentials',
      clientId: ctx.client_id,
      privateKey: input('key', ctx.private_key_pem),
      signingAlgorithm: ctx.signing_algorithm ?? 'ES256',
    };
  else if (scenario === 'auth/cross-app-access-complete-flow')
    oauth = {
      grant: 'crossAppAccess',
      clientId: ctx.client_id,
      clientSecret: input('secret', ctx.client_secret),
      idp: { tokenEndpoint: ctx.idp_token_endpoint, clientId: ctx.idp_client_id, idToken: input('idToken', ctx.idp_id_token) },
    };
  const inputs = Object.keys(answers).map((id) => ({ id, type: 'promptString', description: id, password: true }));
  return { json: { inputs, servers: { conformance: { type: 'http', url, oauth } } }, answers };
}

async function callTools(server: McpServer): Promise<void> {
  for (const tool of server.tools) {
    const args = argumentsFor(tool);
    try {
      await server.callTool(tool.name, args);
    } catch (e) {
      if (!isSignInRequired(e)) throw e;
      // "This call needs more access": the user signs in again and calls once more.
      await server.signIn();
      await server.callTool(tool.name, args);
    }
    console.log(`called ${tool.name}`);
  }
}

async function main(): Promise<number> {
  const scenario = process.env['MCP_CONFORMANCE_SCENARIO'] ?? '';
  const url = process.argv[2];
  if (!url) throw new Error('usage: mcpConformanceClient.js SERVER_URL');
  const ctx = JSON.parse(process.env['MCP_CONFORMANCE_CONTEXT'] ?? '{}') as Context;
  const { json, answers } = configFor(scenario, url, ctx);
  const manager = new McpServerManager({
    host: noExecutors,
    clientInfo: { name: 'exec-bridge-conformance', version: '0.1.0' },
    resolveInput: (i) => Promise.resolve(answers[i.id]),
    client: { elicit: acceptDefaults },
    auth: { store: new MemoryAuthStore(), openBrowser: (_server, u) => followRedirects(u), signInTimeoutMs: 20_000 },
  });
  const config = mergeMcpConfig([parseMcpJson(JSON.stringify(json), { kind: 'mcpJson', file: '/conformance/.vscode/mcp.json' })]);
  const errors = config.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((d) => d.message).join('; '));
  manager.applyConfig(config, { autoStart: false });
  const server = manager.get('conformance')!;
  server.log.onDidAppend((e) => console.log(`[${e.kind}] ${e.text}`));
  try {
    await server.start();
    if (server.state.kind !== 'ready' && server.auth.status.kind === 'signInRequired') await server.signIn();
    if (server.state.kind !== 'ready') throw new Error(`the server is ${server.describe()}`);
    await callTools(server);
    return 0;
  } finally {
    await manager.shutdown();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`error: ${errorMessage(e)}`);
    process.exit(1);
  },
);
