/**
 * A small MCP server for the MCP integration tests (run as `node <out>/test/helpers/mcpFixtureServer.js`).
 * It misbehaves on request, through the environment:
 *
 *  - FIXTURE_GRANDCHILD=1       spawns a grandchild that ignores SIGINT/SIGTERM (`sleep 300`), as
 *                               servers that start helpers do; its pid goes to stderr (`grandchild <pid>`).
 *  - FIXTURE_IGNORE_EOF=1       keeps running after stdin closes.
 *  - FIXTURE_IGNORE_SIGINT=1    ignores SIGINT (so only a kill of the process group stops it).
 *  - FIXTURE_CRASH_AT_START=N   writes a few stderr lines and exits with code N before answering.
 *
 * Tools: `echo {text}`, `crash {code}` (stderr lines, then exit), `add_tool {name}` (registers a
 * tool, which sends `notifications/tools/list_changed`).
 */
import { spawn } from 'node:child_process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const env = process.env;

if (env['FIXTURE_CRASH_AT_START']) {
  process.stderr.write('fixture: reading configuration\n');
  process.stderr.write('fixture: fatal: missing API key\n');
  process.exit(Number(env['FIXTURE_CRASH_AT_START']));
}

if (env['FIXTURE_IGNORE_SIGINT'] === '1') {
  process.on('SIGINT', () => process.stderr.write('fixture: ignoring SIGINT\n'));
}

if (env['FIXTURE_GRANDCHILD'] === '1') {
  // `trap ''` makes the signals ignored, and ignored signals survive the exec into sleep.
  const child = spawn('bash', ['-c', "trap '' INT TERM HUP; exec sleep 300"], { stdio: 'ignore' });
  process.stderr.write(`grandchild ${child.pid}\n`);
}

const server = new McpServer({ name: 'exec-bridge-fixture', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });

server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, ({ text }) => ({
  content: [{ type: 'text', text }],
}));

server.registerTool(
  'crash',
  { description: 'Exits with the given code after writing to stderr', inputSchema: { code: z.number().int() } },
  ({ code }) => {
    for (let i = 1; i <= 25; i++) process.stderr.write(`fixture: crash line ${i}\n`);
    process.stderr.write('fixture: last words', () => process.exit(code));
    return { content: [{ type: 'text', text: 'crashing' }] };
  },
);

server.registerTool(
  'add_tool',
  { description: 'Registers a new tool (sends tools/list_changed)', inputSchema: { name: z.string() } },
  ({ name }) => {
    server.registerTool(name, { description: `added at runtime: ${name}` }, () => ({ content: [{ type: 'text', text: name }] }));
    return { content: [{ type: 'text', text: `added ${name}` }] };
  },
);

const transport = new StdioServerTransport();
void server.connect(transport);

if (env['FIXTURE_IGNORE_EOF'] === '1') {
  process.stdin.on('end', () => process.stderr.write('fixture: stdin closed, staying alive\n'));
  setInterval(() => undefined, 60_000);
} else {
  process.stdin.on('end', () => process.exit(0));
}
