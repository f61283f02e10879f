/**
 * A dependency-free MCP server for the sandboxed-server tests (not a test file). Tools:
 * - `fetch {url, direct?}`: GETs an http:// URL — through `HTTP_PROXY` when the environment names one
 *   (as a sandbox with a managed network does) unless `direct`, else directly — and answers with
 *   the status and body;
 * - `write {path}`: writes a file and answers `wrote PATH`, or the error (isError);
 * - `reach {path}`: connects to a unix socket at `path` and answers `connected` or the error;
 * - `list {path}`: the names in a directory, or the error.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

type Id = string | number;
interface Message {
  id?: Id;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown> } & Record<string, unknown>;
}

const write = (msg: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const text = (id: Id, value: string, isError = false): void =>
  write({ id, result: { content: [{ type: 'text', text: value }], ...(isError ? { isError: true } : {}) } });

const tools = [
  {
    name: 'fetch',
    description: 'GET an http URL',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
  },
  {
    name: 'write',
    description: 'Write a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'reach', description: 'Connect to a unix socket', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'list', description: 'List a directory', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
];

function fetchUrl(id: Id, url: string, direct: boolean): void {
  const proxy = direct ? undefined : (process.env['HTTP_PROXY'] ?? process.env['http_proxy']);
  const target = new URL(url);
  const p = proxy ? new URL(proxy) : undefined;
  // Through a proxy the request line carries the absolute URL (RFC 9112 §3.2.2). An agent of its
  // own: with NODE_USE_ENV_PROXY (set for a managed network) Node 24's global agent would proxy the
  // request once more, and refuse our Host header for the proxy's authority.
  const agent = new Agent();
  const req = request(
    p
      ? { host: p.hostname, port: p.port, path: url, headers: { host: target.host }, timeout: 10_000, agent }
      : { host: target.hostname, port: target.port, path: target.pathname, timeout: 10_000, agent },
    (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => text(id, `status ${res.statusCode}: ${body.trim()}`, res.statusCode !== 200));
    },
  );
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', (e) => text(id, `fetch failed: ${e.message}`, true));
  req.end();
}

function call(id: Id, name: string | undefined, args: Record<string, unknown>): void {
  if (name === 'fetch') return fetchUrl(id, String(args['url']), args['direct'] === true);
  if (name === 'write') {
    const path = String(args['path']);
    try {
      writeFileSync(path, 'x');
      return text(id, `wrote ${path}`);
    } catch (e) {
      return text(id, `write failed: ${(e as Error).message}`, true);
    }
  }
  if (name === 'list') {
    try {
      return text(id, `entries: ${JSON.stringify(readdirSync(String(args['path'])))}`);
    } catch (e) {
      return text(id, `list failed: ${(e as Error).message}`, true);
    }
  }
  if (name === 'reach') {
    const s = connect(String(args['path']));
    s.once('connect', () => {
      s.destroy();
      text(id, 'connected');
    });
    s.once('error', (e) => text(id, `could not connect: ${e.message}`, true));
    return;
  }
  write({ id, error: { code: -32602, message: `no tool ${String(name)}` } });
}

let buffer = '';
process.stdin.on('data', (d: Buffer) => {
  buffer += d.toString('utf8');
  for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as Message;
    if (msg.id === undefined || msg.method === undefined) continue;
    if (msg.method === 'initialize')
      write({
        id: msg.id,
        result: {
          protocolVersion: msg.params?.['protocolVersion'] ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'sandboxed', version: '1.0.0' },
        },
      });
    else if (msg.method === 'ping') write({ id: msg.id, result: {} });
    else if (msg.method === 'tools/list') write({ id: msg.id, result: { tools } });
    else if (msg.method === 'tools/call') call(msg.id, msg.params?.name, msg.params?.arguments ?? {});
    else write({ id: msg.id, error: { code: -32601, message: `no ${msg.method}` } });
  }
});
process.stdin.on('end', () => process.exit(0));
