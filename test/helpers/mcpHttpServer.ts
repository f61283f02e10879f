/**
 * An MCP server of 2025 (the 1.x SDK) over HTTP on 127.0.0.1 for the remote-server tests (not a
 * test file): Streamable HTTP at /mcp (stateful sessions) or, with `sseOnly`, only the older
 * HTTP+SSE transport (GET /sse, POST /messages). With `token` it demands `Authorization: Bearer
 * <token>` and answers 401 otherwise. `server` makes the MCP server of each session (default: one
 * `shout` tool). It records the method of every JSON-RPC message POSTed to it, in order.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface HttpMcpServer {
  url: string;
  /** Sessions the server has open now (a stop ends its session with DELETE). */
  openSessions(): number;
  /** Requests answered 401. */
  refused(): number;
  /** GET event streams open now (Streamable HTTP's standalone stream, or HTTP+SSE's). */
  streams(): number;
  /** The methods of the JSON-RPC messages POSTed so far (`?` for a response of the client's). */
  methods(): string[];
  close(): Promise<void>;
}

/** What `announce` of announcingServer sends. */
export const ANNOUNCEMENT = 'hello over the event stream';

/**
 * A server with `shout` and `announce`; the second sends a log message (ANNOUNCEMENT) a moment
 * after it answered, so that it goes over the standalone SSE stream.
 */
export function announcingServer(): Server {
  const s = new Server({ name: 'announcing-test', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
  s.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'shout', description: 'Upper-cases its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
      { name: 'announce', description: 'Sends a log message a moment after it answered', inputSchema: { type: 'object' } },
    ],
  }));
  s.setRequestHandler(CallToolRequestSchema, (req) => {
    if (req.params.name === 'announce') {
      // Not related to the call (which has been answered by then): it goes on the standalone GET stream.
      setTimeout(() => void s.sendLoggingMessage({ level: 'info', data: ANNOUNCEMENT }).catch(() => undefined), 100);
      return { content: [{ type: 'text', text: 'announcing' }] };
    }
    return { content: [{ type: 'text', text: String(req.params.arguments?.['text'] ?? '').toUpperCase() }] };
  });
  return s;
}

function mcpServer(): Server {
  const s = new Server({ name: 'http-test', version: '1.0.0' }, { capabilities: { tools: {} } });
  s.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'shout', description: 'Upper-cases its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    ],
  }));
  s.setRequestHandler(CallToolRequestSchema, (req) => ({
    content: [{ type: 'text', text: String(req.params.arguments?.['text'] ?? '').toUpperCase() }],
  }));
  return s;
}

/** What the server of a session is: anything the SDK's transports connect to. */
type SessionServer = () => { connect(transport: StreamableHTTPServerTransport | SSEServerTransport): Promise<void> };

/** The POSTed body, parsed (undefined for none), its messages' methods appended to `methods`. */
async function readBody(req: IncomingMessage, methods: string[]): Promise<unknown> {
  if (req.method !== 'POST') return undefined;
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  const body = JSON.parse(text) as unknown;
  for (const m of Array.isArray(body) ? body : [body]) methods.push(String((m as { method?: unknown }).method ?? '?'));
  return body;
}

export async function startHttpMcpServer(options: { token?: string; sseOnly?: boolean; server?: SessionServer }): Promise<HttpMcpServer> {
  const streamable = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  const methods: string[] = [];
  const newServer = options.server ?? mcpServer;
  let refused = 0;
  let streams = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (options.token !== undefined && req.headers['authorization'] !== `Bearer ${options.token}`) {
      refused++;
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer realm="test"' }).end('unauthorized');
      return;
    }
    const body = await readBody(req, methods);
    if (req.method === 'GET' && (req.headers['accept'] ?? '').includes('text/event-stream')) {
      streams++;
      res.once('close', () => streams--);
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (options.sseOnly) {
      if (req.method === 'GET' && path === '/sse') {
        const t = new SSEServerTransport('/messages', res);
        sse.set(t.sessionId, t);
        t.onclose = () => sse.delete(t.sessionId);
        await newServer().connect(t);
        return;
      }
      if (req.method === 'POST' && path === '/messages') {
        const t = sse.get(new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '');
        if (t) return t.handlePostMessage(req, res, body);
      }
      res.writeHead(405).end();
      return;
    }
    if (path !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    const t = typeof id === 'string' ? streamable.get(id) : undefined;
    if (!t) {
      if (req.method !== 'POST') {
        res.writeHead(400).end();
        return;
      }
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void streamable.set(sid, fresh),
        onsessionclosed: (sid) => void streamable.delete(sid),
      });
      await newServer().connect(fresh);
      // A request before `initialize` (a 2026 client's server/discover) is refused: no session then.
      await fresh.handleRequest(req, res, body);
      if (fresh.sessionId === undefined) await fresh.close();
      return;
    }
    await t.handleRequest(req, res, body);
  };
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${options.sseOnly ? 'sse' : 'mcp'}`,
    openSessions: () => streamable.size + sse.size,
    refused: () => refused,
    streams: () => streams,
    methods: () => [...methods],
    close: async () => {
      for (const t of streamable.values()) await t.close().catch(() => undefined);
      for (const t of sse.values()) await t.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
