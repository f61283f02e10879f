/**
 * A dependency-free MCP server that tells a test what reached it, for checks through clients we do
 * not control (VS Code's): every call, progress token and `notifications/cancelled` is appended as a
 * JSON line to the file in MCP_PROBE_LOG. Tools:
 * - `whoami`: answers with its pid (which process served the call);
 * - `slow {steps, hold}`: sends `steps` progress notifications when the call has a progress token,
 *   then answers — or, with `hold`, waits until the call is cancelled;
 * - `ask {question}` (listed only when the client announced sampling): sends `sampling/createMessage`
 *   and answers with the client's reply (text and model).
 * - `touch`: answers `touched`; not annotated (a client may confirm it first).
 * `whoami` and `slow` are annotated read-only (a client may skip its confirmation for those).
 * With MCP_PROBE_IGNORE_SIGINT=1 it ignores SIGINT (a stop then terminates it after the grace).
 */
import { appendFileSync } from 'node:fs';

type Id = string | number;
interface Message {
  id?: Id;
  method?: string;
  params?: Record<string, unknown> & { arguments?: Record<string, unknown>; _meta?: { progressToken?: Id } };
  result?: Record<string, unknown>;
  error?: { message: string };
}

const logFile = process.env['MCP_PROBE_LOG'];
const note = (event: Record<string, unknown>) => {
  if (logFile) appendFileSync(logFile, `${JSON.stringify({ pid: process.pid, ...event })}\n`);
};
const write = (msg: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
};
const reply = (id: Id, result: unknown): void => write({ id, result });
const text = (id: Id, value: string): void => reply(id, { content: [{ type: 'text', text: value }] });

let sampling = false;
const readOnly = { readOnlyHint: true };
const tools = () => [
  { name: 'whoami', description: 'Answers with the pid of the server process', inputSchema: { type: 'object' }, annotations: readOnly },
  {
    name: 'slow',
    description: 'Reports progress, then answers (or waits for cancellation)',
    inputSchema: { type: 'object', properties: { steps: { type: 'integer' }, hold: { type: 'boolean' } } },
    annotations: readOnly,
  },
  { name: 'touch', description: 'Answers "touched" (no annotations)', inputSchema: { type: 'object' } },
  ...(sampling
    ? [
        {
          name: 'ask',
          description: "Asks the client's language model (sampling)",
          inputSchema: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
        },
      ]
    : []),
];

/** Calls held until cancelled: request id → nothing (the answer never comes). */
const held = new Set<string>();
/** Our own requests to the client: id → what to do with its answer. */
const pending = new Map<string, (msg: Message) => void>();
let nextId = 0;

function call(id: Id, name: unknown, args: Record<string, unknown>, token: Id | undefined): void {
  note({ event: 'call', name, id, progressToken: token ?? null });
  if (name === 'whoami') return text(id, `pid ${process.pid}`);
  if (name === 'touch') return text(id, 'touched');
  if (name === 'slow') {
    const steps = Number(args['steps'] ?? 0);
    if (token !== undefined)
      for (let i = 1; i <= steps; i++)
        write({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
    if (args['hold'] === true) {
      held.add(String(id));
      return;
    }
    return text(id, `done after ${steps} steps (progress token ${token === undefined ? 'absent' : 'present'})`);
  }
  if (name === 'ask' && sampling) {
    const mine = `probe-${++nextId}`;
    pending.set(mine, (answer) => {
      if (answer.error) return reply(id, { isError: true, content: [{ type: 'text', text: `sampling failed: ${answer.error.message}` }] });
      const content = answer.result?.['content'] as { type: string; text?: string } | undefined;
      note({ event: 'sampled', answer: answer.result ?? null });
      text(id, `model ${String(answer.result?.['model'])} answered: ${content?.text ?? `[${content?.type}]`}`);
    });
    write({
      id: mine,
      method: 'sampling/createMessage',
      params: { messages: [{ role: 'user', content: { type: 'text', text: String(args['question']) } }], maxTokens: 200 },
    });
    return;
  }
  return write({ id, error: { code: -32602, message: `no tool ${String(name)}` } });
}

let buffer = '';
process.stdin.on('data', (d: Buffer) => {
  buffer += d.toString('utf8');
  for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as Message;
    if (msg.method === undefined) {
      // An answer to one of our requests.
      const done = msg.id !== undefined ? pending.get(String(msg.id)) : undefined;
      if (done) {
        pending.delete(String(msg.id));
        done(msg);
      }
      continue;
    }
    if (msg.id === undefined) {
      if (msg.method === 'notifications/cancelled') {
        const requestId = msg.params?.['requestId'] as Id;
        note({ event: 'cancelled', requestId, reason: msg.params?.['reason'] ?? null, wasHeld: held.delete(String(requestId)) });
      }
      continue;
    }
    switch (msg.method) {
      case 'initialize': {
        sampling = (msg.params?.['capabilities'] as { sampling?: unknown } | undefined)?.sampling !== undefined;
        note({ event: 'initialize', sampling });
        reply(msg.id, {
          protocolVersion: msg.params?.['protocolVersion'] ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'probe', version: '1.0.0' },
        });
        break;
      }
      case 'ping':
        reply(msg.id, {});
        break;
      case 'tools/list':
        reply(msg.id, { tools: tools() });
        break;
      case 'tools/call':
        call(msg.id, msg.params?.['name'], msg.params?.arguments ?? {}, msg.params?._meta?.progressToken);
        break;
      default:
        write({ id: msg.id, error: { code: -32601, message: `no ${msg.method}` } });
    }
  }
});
process.stdin.on('end', () => process.exit(0));
// A server that takes its time to stop (it is then terminated): it still hears what a stop sends it.
if (process.env['MCP_PROBE_IGNORE_SIGINT'] === '1') process.on('SIGINT', () => undefined);
