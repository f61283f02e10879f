/**
 * A minimal MCP server with no dependencies (starts in tens of milliseconds, unlike the SDK-based
 * fixture), for tests that start servers many times. Speaks just enough MCP: initialize, ping,
 * tools/list (`echo`, `crash`), tools/call. Same FIXTURE_* switches as mcpFixtureServer.ts
 * (GRANDCHILD, IGNORE_EOF, IGNORE_SIGINT).
 */
import { spawn } from 'node:child_process';

const env = process.env;
if (env['FIXTURE_IGNORE_SIGINT'] === '1') process.on('SIGINT', () => process.stderr.write('tiny: ignoring SIGINT\n'));
if (env['FIXTURE_GRANDCHILD'] === '1') {
  const child = spawn('bash', ['-c', "trap '' INT TERM HUP; exec sleep 300"], { stdio: 'ignore' });
  process.stderr.write(`grandchild ${child.pid}\n`);
}

type Id = string | number;
const send = (id: Id, result: unknown) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\n');
const tools = [
  {
    name: 'echo',
    description: 'Echoes its text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  { name: 'crash', description: 'Exits with the given code', inputSchema: { type: 'object', properties: { code: { type: 'integer' } } } },
];

let buffer = '';
process.stdin.on('data', (d: Buffer) => {
  buffer += d.toString('utf8');
  for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as {
      id?: Id;
      method?: string;
      params?: { protocolVersion?: string; name?: string; arguments?: Record<string, unknown> };
    };
    if (msg.id === undefined || msg.method === undefined) continue;
    switch (msg.method) {
      case 'initialize':
        send(msg.id, {
          protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'tiny', version: '1.0.0' },
        });
        break;
      case 'ping':
        send(msg.id, {});
        break;
      case 'tools/list':
        send(msg.id, { tools });
        break;
      case 'tools/call': {
        const args = msg.params?.arguments ?? {};
        if (msg.params?.name === 'crash') {
          process.stderr.write('tiny: crashing\n', () => process.exit(Number(args['code'] ?? 1)));
        } else {
          send(msg.id, { content: [{ type: 'text', text: String(args['text'] ?? '') }] });
        }
        break;
      }
      default:
        process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `no ${msg.method}` } }) + '\n');
    }
  }
});

if (env['FIXTURE_IGNORE_EOF'] === '1') setInterval(() => undefined, 60_000);
else process.stdin.on('end', () => process.exit(0));
