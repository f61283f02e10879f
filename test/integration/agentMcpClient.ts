/**
 * `exec-bridge mcp` as an agent starts it: the MCP SDK's Client over stdio spawns
 * `node CLI mcp --verbose ARGS…` (for agentMcp*.test.ts; not a test file itself).
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export interface Answer {
  text: string;
  isError: boolean;
}

export interface Mcp {
  client: Client;
  /** The `exec-bridge mcp` process. */
  pid: number;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /** A tool call: the text of its content, and whether it is a tool error. */
  call(name: string, args?: Record<string, unknown>): Promise<Answer>;
  close(): Promise<void>;
}

export async function startMcp(
  cli: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; clientName: string; callTimeoutMs?: number },
): Promise<Mcp> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', '--verbose', ...args],
    cwd: options.cwd,
    env: options.env,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: options.clientName, version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid!,
    stderr: () => err,
    call: async (name, a = {}) => {
      const r = (await client.callTool(
        { name, arguments: a },
        undefined,
        options.callTimeoutMs !== undefined ? { timeout: options.callTimeoutMs } : undefined,
      )) as { content: Array<{ type: string; text?: string }>; isError?: boolean };
      return { text: r.content.map((c) => c.text ?? '').join(''), isError: r.isError === true };
    },
    close: () => client.close(),
  };
}

/** A command that writes `FIRST`, `bytes` x's and `LAST` (each on a line of its own). */
export function floodCommand(bytes: number): string {
  return `echo FIRST; head -c ${bytes} /dev/zero | tr '\\0' x; echo; echo LAST`;
}

/** Its answer: within the default bound (16 KiB) as head and tail, the marker with the exact count between. */
export function assertBoundedFlood(r: Answer, bytes: number): void {
  assert.equal(r.isError, false, r.text.slice(0, 300));
  const total = 'FIRST\n'.length + bytes + '\nLAST\n'.length;
  assert.ok(r.text.includes(`\nOutput (stdout and stderr, ${total.toLocaleString('en-US')} bytes):\n`), r.text.slice(0, 300));
  const m = /\n\[… ([\d,]+) bytes left out …\]\n/.exec(r.text);
  assert.ok(m, 'the marker');
  assert.equal(Number(m[1]!.replace(/,/g, '')), total - 16 * 1024);
  assert.ok(Buffer.byteLength(r.text) <= 16 * 1024 + 300, `${Buffer.byteLength(r.text)} bytes answered`);
  assert.match(r.text, /\nFIRST\nxxx/);
  assert.ok(r.text.endsWith('xxx\nLAST\n'));
}
