/**
 * Protocol versions: a 2026-07-28 server (`@modelcontextprotocol/server` 2.x) and a 2025-11-25
 * one (the 1.x SDK), the same tools, resource and prompt, run on the executor over stdio and
 * driven through the manager as the tree drives them. The 2026 one is found with
 * `server/discover` and asks for input with `input_required` results; the 2025 one refuses the
 * probe, gets `initialize`, and asks with requests of its own. Both reach the same elicitation
 * and sampling handlers (the extension's interfaces). Over Streamable HTTP (from the extension
 * host, the v2 SDK's transports) the same two: the 2026 build answers server/discover and asks
 * with input_required results, the 2025 build refuses the probe, gets initialize and asks with
 * its own requests on the session's stream.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CreateMessageRequest, ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { mergeMcpConfig, parseMcpJson } from '../../src/mcp/config';
import type { McpClientFeatures } from '../../src/mcp/clientFeatures';
import type { McpServer } from '../../src/mcp/mcpServer';
import { McpServerManager } from '../../src/mcp/serverManager';
import {
  configOf,
  describeOnExecutors,
  newTag,
  NODE,
  tagged,
  TestExecutorHost,
  text,
  TIMINGS,
  waitForState,
  type Executor,
} from './mcpFixtures';
import { startHttpMcpServer, type HttpMcpServer } from '../helpers/mcpHttpServer';
import { NOTE_TEXT, NOTE_URI, server2025, startSpecHttpServer } from '../helpers/mcpSpecServer';

const SPEC_SERVER = join(__dirname, '..', 'helpers', 'mcpSpecServer.js');

/** What the extension's handlers would be (mcpElicitation.ts, mcpSampling.ts), answering as a user who types "Ann". */
class Answers {
  elicit: ElicitResult = { action: 'accept', content: { name: 'Ann' } };
  readonly asked: ElicitRequestFormParams[] = [];
  readonly sampled: CreateMessageRequest['params'][] = [];
  readonly features: McpClientFeatures = {
    elicit: (_server, params) => {
      this.asked.push(params);
      return Promise.resolve(this.elicit);
    },
    sample: (_server, params) => {
      this.sampled.push(params);
      return Promise.resolve({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'yo' } });
    },
    canSample: () => true,
  };
}

function managerWith(host: TestExecutorHost, answers: Answers): McpServerManager {
  return new McpServerManager({
    host,
    timings: TIMINGS,
    clientInfo: { name: 'exec-bridge-test', version: '0.0.0' },
    client: answers.features,
    trace: () => true,
  });
}

interface Traced {
  dir: 'sent' | 'received';
  msg: { id?: unknown; method?: string; result?: Record<string, unknown>; error?: { code?: number }; params?: Record<string, unknown> };
}

/** The JSON-RPC messages of the server's trace (the log's `→`/`←` lines), in order. */
function wire(s: McpServer): Traced[] {
  return s.log
    .all()
    .filter((e) => e.kind === 'trace')
    .map((e) => ({ dir: e.text.startsWith('→') ? 'sent' : 'received', msg: JSON.parse(e.text.slice(2)) as Traced['msg'] }));
}

/** Requests with `method` in the trace: ours (`sent`) or the server's (`received`). */
function requests(s: McpServer, method: string, dir: Traced['dir']): Traced['msg'][] {
  return wire(s)
    .filter((t) => t.dir === dir && t.msg.method === method && t.msg.id !== undefined)
    .map((t) => t.msg);
}

/** Our requests' answers, by the request's method. */
function answersTo(s: McpServer, method: string): Traced['msg'][] {
  const ids = new Set(requests(s, method, 'sent').map((m) => m.id));
  return wire(s)
    .filter((t) => t.dir === 'received' && t.msg.method === undefined && ids.has(t.msg.id))
    .map((t) => t.msg);
}

/** Lists, Call Tool, Read Resource, Get Prompt, elicitation (accept, decline) and sampling, through the manager. */
async function exercise(s: McpServer, answers: Answers): Promise<void> {
  await exerciseBasics(s);
  await exerciseInput(s, answers);
}

async function exerciseBasics(s: McpServer): Promise<void> {
  assert.deepEqual(s.tools.map((t) => t.name).sort(), ['ask', 'echo', 'think']);
  assert.deepEqual(
    s.resources.map((r) => r.uri),
    [NOTE_URI],
  );
  assert.deepEqual(
    s.prompts.map((p) => p.name),
    ['greet'],
  );
  assert.equal(text(await s.callTool('echo', { text: 'over the wire' })), 'over the wire');
  const note = await s.readResource(NOTE_URI);
  assert.deepEqual(
    note.contents.map((c) => ('text' in c ? c.text : '')),
    [NOTE_TEXT],
  );
  const prompt = await s.getPrompt('greet', { who: 'Bo' });
  assert.deepEqual(
    prompt.messages.map((m) => (m.content.type === 'text' ? m.content.text : '')),
    ['Greet Bo'],
  );
}

async function exerciseInput(s: McpServer, answers: Answers): Promise<void> {
  assert.equal(text(await s.callTool('ask', {})), 'hello Ann');
  assert.equal(answers.asked.length, 1);
  assert.equal(answers.asked[0]?.message, 'Who are you?');
  assert.deepEqual(Object.keys(answers.asked[0]?.requestedSchema.properties ?? {}), ['name']);
  answers.elicit = { action: 'decline' };
  assert.equal(text(await s.callTool('ask', {})), 'answer: decline');
  assert.equal(answers.asked.length, 2);

  assert.equal(text(await s.callTool('think', {})), 'model said: yo');
  assert.equal(answers.sampled.length, 1);
  assert.deepEqual(
    answers.sampled[0]?.messages.map((m) => (!Array.isArray(m.content) && m.content.type === 'text' ? m.content.text : '')),
    ['Say yo'],
  );
}

describeOnExecutors('MCP protocol versions over stdio', (exec: () => Executor) => {
  test('a 2026-07-28 server: found with server/discover, input_required answered by our handlers', async () => {
    const tag = newTag();
    const answers = new Answers();
    const m = managerWith(exec().host, answers);
    try {
      m.applyConfig(configOf({ spec: { command: NODE, args: [SPEC_SERVER, '2026'], env: { MCP_TEST_TAG: tag } } }));
      const s = m.get('spec')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.protocolVersion, '2026-07-28');
      assert.deepEqual(s.serverInfo, { name: 'spec-2026', version: '2.0.0' });
      assert.ok(s.capabilities?.tools && s.capabilities.resources && s.capabilities.prompts, JSON.stringify(s.capabilities));
      // The session began with server/discover, answered with the revision; no initialize at all.
      assert.equal(requests(s, 'server/discover', 'sent').length, 1);
      assert.deepEqual(answersTo(s, 'server/discover')[0]?.result?.['supportedVersions'], ['2026-07-28']);
      assert.deepEqual(requests(s, 'initialize', 'sent'), []);
      assert.ok(s.log.all().some((e) => e.text.includes('protocol 2026-07-28')));

      await exercise(s, answers);
      // Input arrived inside results (input_required), never as a request of the server's.
      assert.deepEqual(requests(s, 'elicitation/create', 'received'), []);
      assert.deepEqual(requests(s, 'sampling/createMessage', 'received'), []);
      const calls = answersTo(s, 'tools/call');
      assert.equal(calls.filter((r) => r.result?.['inputRequests'] !== undefined).length, 3, 'ask twice, think once: input_required');
      const resent = requests(s, 'tools/call', 'sent').filter((r) => r.params?.['inputResponses'] !== undefined);
      assert.equal(resent.length, 3, 'each call sent again with the answers');
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('a 2025-11-25 server: refuses server/discover, gets initialize, asks with its own requests', async () => {
    const tag = newTag();
    const answers = new Answers();
    const m = managerWith(exec().host, answers);
    try {
      m.applyConfig(configOf({ spec: { command: NODE, args: [SPEC_SERVER, '2025'], env: { MCP_TEST_TAG: tag } } }));
      const s = m.get('spec')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.deepEqual(s.serverInfo, { name: 'spec-2025', version: '1.0.0' });
      assert.equal(requests(s, 'server/discover', 'sent').length, 1, 'probed once');
      assert.equal(answersTo(s, 'server/discover')[0]?.error?.code, -32601, 'the probe refused as an unknown method');
      assert.equal(requests(s, 'initialize', 'sent').length, 1);

      await exercise(s, answers);
      assert.equal(requests(s, 'elicitation/create', 'received').length, 2, 'the server asked with elicitation/create');
      assert.equal(requests(s, 'sampling/createMessage', 'received').length, 1, 'and with sampling/createMessage');
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
  test('a 2025 server that exits on a request before initialize: started again with initialize at once, and every later start skips the probe', async () => {
    const tag = newTag();
    const answers = new Answers();
    const m = managerWith(exec().host, answers);
    try {
      m.applyConfig(configOf({ spec: { command: NODE, args: [SPEC_SERVER, '2025-strict'], env: { MCP_TEST_TAG: tag } } }));
      const s = m.get('spec')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.equal(requests(s, 'server/discover', 'sent').length, 1, 'probed once');
      assert.deepEqual(answersTo(s, 'server/discover'), [], 'it exited instead of answering');
      assert.ok(
        s.log.all().some((e) => e.text.includes('starting it once more with initialize only')),
        'the log says why it was started again',
      );
      await exerciseBasics(s);
      await s.restart();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(requests(s, 'server/discover', 'sent').length, 1, 'no probe on the next start');
      assert.equal(requests(s, 'initialize', 'sent').length, 2);
      assert.equal(text(await s.callTool('echo', { text: 'again' })), 'again');
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });

  test('a 2025 server that ignores requests before initialize: the probe waits its time once, later starts go straight to initialize', async () => {
    const tag = newTag();
    const answers = new Answers();
    const m = managerWith(exec().host, answers);
    try {
      m.applyConfig(configOf({ spec: { command: NODE, args: [SPEC_SERVER, '2025-silent'], env: { MCP_TEST_TAG: tag } } }));
      const s = m.get('spec')!;
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.equal(requests(s, 'server/discover', 'sent').length, 1);
      assert.deepEqual(answersTo(s, 'server/discover'), [], 'never answered');
      await s.restart();
      assert.equal(s.state.kind, 'ready', s.describe());
      assert.equal(requests(s, 'server/discover', 'sent').length, 1, 'no probe on the next start');
      assert.equal(requests(s, 'initialize', 'sent').length, 2);
      await exercise(s, answers);
    } finally {
      await m.shutdown();
    }
    assert.deepEqual(tagged(tag), []);
  });
});

/** A manager with one `http` server at `url`, not started. */
function httpManager(url: string, answers: Answers): McpServerManager {
  const m = managerWith(new TestExecutorHost(), answers);
  const layer = parseMcpJson(JSON.stringify({ servers: { web: { type: 'http', url } } }), {
    kind: 'mcpJson',
    file: '/w/.vscode/mcp.json',
    workspaceFolder: '/w',
  });
  m.applyConfig(mergeMcpConfig([layer]), { autoStart: false });
  return m;
}

describe('MCP protocol versions over HTTP', () => {
  let http: Awaited<ReturnType<typeof startSpecHttpServer>>;
  let old: HttpMcpServer;
  before(async () => {
    http = await startSpecHttpServer();
    old = await startHttpMcpServer({ server: server2025 });
  });
  after(async () => {
    await http?.close();
    await old?.close();
  });

  test('a 2026-07-28 server over Streamable HTTP: found with server/discover, input_required answered by our handlers', async () => {
    const answers = new Answers();
    const m = httpManager(http.url, answers);
    try {
      const s = m.get('web')!;
      await s.start();
      await waitForState(s, (st) => st.kind === 'ready', 20_000, 'ready');
      assert.equal(s.protocolVersion, '2026-07-28');
      assert.deepEqual(s.serverInfo, { name: 'spec-2026', version: '2.0.0' });
      assert.ok(s.log.all().some((e) => e.text.includes('over Streamable HTTP, protocol 2026-07-28')));
      // The session began with server/discover; no initialize at all (2026-07-28 has none).
      assert.equal(http.methods()[0], 'server/discover');
      assert.ok(!http.methods().includes('initialize'), http.methods().join(', '));

      await exercise(s, answers);
      // Each input came inside a result: the call went again with the answers (ask twice, think once).
      assert.equal(http.methods().filter((x) => x === 'tools/call +input').length, 3, http.methods().join(', '));
    } finally {
      await m.shutdown();
    }
  });

  test('a 2025-11-25 server over Streamable HTTP: refuses server/discover, gets initialize, asks with its own requests', async () => {
    const answers = new Answers();
    const m = httpManager(old.url, answers);
    try {
      const s = m.get('web')!;
      await s.start();
      await waitForState(s, (st) => st.kind === 'ready', 20_000, 'ready');
      assert.equal(s.protocolVersion, '2025-11-25');
      assert.deepEqual(s.serverInfo, { name: 'spec-2025', version: '1.0.0' });
      assert.deepEqual(old.methods().slice(0, 2), ['server/discover', 'initialize']);

      await exercise(s, answers);
      // The server's own elicitation/create and sampling/createMessage were answered (our responses).
      assert.equal(old.methods().filter((x) => x === '?').length, 3, old.methods().join(', '));
    } finally {
      await m.shutdown();
    }
  });
});
