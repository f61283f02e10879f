/**
 * One MCP server in two builds, for the protocol-version tests (a fixture, not a test file): the
 * same tools, resource and prompt on the 2026-07-28 SDK (`@modelcontextprotocol/server` 2.x,
 * which answers `server/discover` and asks for input with `input_required` results) and on the
 * 2025 one (`@modelcontextprotocol/sdk` 1.x, which asks with requests of its own).
 *
 * Run as a stdio server: `node mcpSpecServer.js 2026|2025`. `startSpecHttpServer` serves the
 * 2026 build over HTTP on 127.0.0.1 (both eras, as the SDK's handler does by default).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { acceptedContent, createMcpHandler, inputRequired, inputResponse, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { McpServer as McpServer1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport as StdioServerTransport1 } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

export const NOTE_URI = 'note://one';
export const NOTE_TEXT = 'the first note';
const NAME_SCHEMA = z.object({ name: z.string().describe('Your name') });
const SAMPLE = { messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'Say yo' } }], maxTokens: 20 };

/** The 2026-07-28 build: one instance per connection (the SDK's stdio and HTTP entries take a factory). */
export function server2026(): McpServer {
  const s = new McpServer({ name: 'spec-2026', version: '2.0.0' }, { capabilities: { logging: {} } });
  s.registerTool('echo', { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  s.registerTool('ask', { description: 'Asks for a name (elicitation)', inputSchema: z.object({}) }, (_args, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'who', NAME_SCHEMA);
    if (answer) return { content: [{ type: 'text', text: `hello ${answer.name}` }] };
    const view = inputResponse(ctx.mcpReq.inputResponses, 'who');
    if (view.kind === 'elicit') return { content: [{ type: 'text', text: `answer: ${view.action}` }] };
    return inputRequired({ inputRequests: { who: inputRequired.elicit({ message: 'Who are you?', requestedSchema: NAME_SCHEMA }) } });
  });
  s.registerTool('think', { description: 'Asks the client for a completion (sampling)', inputSchema: z.object({}) }, (_args, ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'llm');
    if (view.kind === 'sampling') return { content: [{ type: 'text', text: `model said: ${sampledText(view.result.content)}` }] };
    return inputRequired({ inputRequests: { llm: inputRequired.createMessage(SAMPLE) } });
  });
  s.registerResource('note', NOTE_URI, { mimeType: 'text/plain' }, (uri) => ({ contents: [{ uri: uri.href, text: NOTE_TEXT }] }));
  s.registerPrompt('greet', { argsSchema: z.object({ who: z.string() }) }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Greet ${who}` } }],
  }));
  return s;
}

/** The 2025 build on the 1.x SDK: the same surface, elicitation and sampling as its own requests. */
export function server2025(): McpServer1 {
  const s = new McpServer1({ name: 'spec-2025', version: '1.0.0' });
  s.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  s.registerTool('ask', { description: 'Asks for a name (elicitation)', inputSchema: {} }, async () => {
    const r = await s.server.elicitInput({
      message: 'Who are you?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string', description: 'Your name' } }, required: ['name'] },
    });
    const name = r.content?.['name'];
    return {
      content: [{ type: 'text', text: r.action === 'accept' && typeof name === 'string' ? `hello ${name}` : `answer: ${r.action}` }],
    };
  });
  s.registerTool('think', { description: 'Asks the client for a completion (sampling)', inputSchema: {} }, async () => {
    const r = await s.server.createMessage(SAMPLE);
    return { content: [{ type: 'text', text: `model said: ${sampledText(r.content)}` }] };
  });
  s.registerResource('note', NOTE_URI, { mimeType: 'text/plain' }, (uri) => ({ contents: [{ uri: uri.href, text: NOTE_TEXT }] }));
  s.registerPrompt('greet', { argsSchema: { who: z.string() } }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Greet ${who}` } }],
  }));
  return s;
}

function sampledText(content: unknown): string {
  const parts = (Array.isArray(content) ? content : [content]) as { type?: string; text?: string }[];
  return parts.map((p) => (p.type === 'text' ? (p.text ?? '') : `[${p.type}]`)).join('');
}

/**
 * The 2026 build over Streamable HTTP at `/mcp` on 127.0.0.1 (the SDK's handler; node:http ↔
 * fetch's Request/Response). `methods()`: each POSTed request's method, in order, marked ` +input`
 * when it carries `inputResponses` (a call sent again with the client's answers).
 */
export async function startSpecHttpServer(): Promise<{ url: string; methods(): string[]; close(): Promise<void> }> {
  const handler = createMcpHandler(server2026);
  const methods: string[] = [];
  const http = createServer((req, res) => void serve(req, res));
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      if (body) {
        const m = JSON.parse(body.toString('utf8')) as { method?: string; params?: { inputResponses?: unknown } };
        if (m.method) methods.push(`${m.method}${m.params?.inputResponses !== undefined ? ' +input' : ''}`);
      }
      const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) });
      const response = await handler.fetch(request);
      res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
      if (response.body) for await (const c of response.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
      res.end();
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    }
  };
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods: () => [...methods],
    close: async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

/**
 * The 2025 build behind a gate on stdin, as strict 2025 servers behave: a request before
 * `initialize` is dropped without an answer (`silent`) or ends the process (`strict`, exit 3).
 * Once `initialize` came, every line passes.
 */
function gated2025(mode: 'silent' | 'strict'): void {
  const stdin = new PassThrough();
  let open = false;
  let carry = '';
  process.stdin.on('data', (chunk: Buffer) => {
    if (open) return void stdin.write(chunk);
    const lines = (carry + chunk.toString('utf8')).split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      if (open) stdin.write(`${line}\n`);
      else if (/"method"\s*:\s*"initialize"/.test(line)) {
        open = true;
        stdin.write(`${line}\n`);
      } else if (/"id"\s*:/.test(line)) {
        if (mode === 'strict') process.exit(3);
      } else stdin.write(`${line}\n`);
    }
    if (open && carry) {
      stdin.write(carry);
      carry = '';
    }
  });
  process.stdin.on('end', () => stdin.end());
  void server2025().connect(new StdioServerTransport1(stdin, process.stdout));
}

if (require.main === module) {
  const era = process.argv[2];
  if (era === '2026') serveStdio(server2026);
  else if (era === '2025') void server2025().connect(new StdioServerTransport1());
  else if (era === '2025-silent' || era === '2025-strict') gated2025(era === '2025-silent' ? 'silent' : 'strict');
  else {
    process.stderr.write('usage: mcpSpecServer.js 2026|2025|2025-silent|2025-strict\n');
    process.exit(2);
  }
}
