/**
 * The language-model tools' logic (core/agentTools.ts) over runs built by core/executorRun.ts — the
 * one builder of every run — against our real exec-server in process and a real client and approval
 * policy. The sandbox is a stand-in (as in terminalRun.test): a sandboxed start gets
 * `IN_FAKE_SANDBOX=1` and any failure of it is a denial, so SCRIPT fails sandboxed and succeeds without.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ExecServerClient } from '../../../src/client';
import { AGENT_OUTPUT_LIMIT } from '../../../src/core/agentOutput';
import { AgentTools, type OpenedRun } from '../../../src/core/agentTools';
import {
  ApprovalPolicy,
  MemoryAlwaysAllowStore,
  type ApprovalAnswer,
  type ApprovalMode,
  type BeforeRunAnswer,
} from '../../../src/core/approvalPolicy';
import { executorRun } from '../../../src/core/executorRun';
import { RunRegistry } from '../../../src/core/runRegistry';
import { DEFAULT_SANDBOX, sandboxLabel, sandboxRequest } from '../../../src/core/sandboxSettings';
import type { TerminalInfo } from '../../../src/core/sessionMemory';
import { STATUS_REPLY, STATUS_REQUEST } from '../../../src/core/terminalFlow';
import { terminalName } from '../../../src/core/terminalNames';
import type { RunSpec, TerminalRun } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import type { SpawnRequest } from '../../../src/server/spawnPlan';
import { connectInProcess, fakeSandbox, FAKE_SANDBOX_SCRIPT } from '../../helpers/inProcessServer';

const SCRIPT = FAKE_SANDBOX_SCRIPT;
const LABEL = sandboxLabel(DEFAULT_SANDBOX);
const MiB = 1024 * 1024;

const seen: SpawnRequest[] = [];
let server: ExecServer;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-agent-tools-'));
  server = new ExecServer({ planner: fakeSandbox(seen), sandboxPrewarmMs: 0 });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(resumeSessionId?: string): Promise<ExecServerClient> {
  return connectInProcess(server, { outputSpool: true, ...(resumeSessionId ? { resumeSessionId } : {}) });
}

/** A terminal's side of a run: answers the flow's status requests (as xterm does), keeps the text. */
function showInTerminal(run: TerminalRun): { text(): string; bytes(): number } {
  let raw = '';
  let bytes = 0;
  run.model.onWrite((t) => {
    bytes += t.length;
    if (raw.length < 64 * 1024) raw += t;
    const requests = t.split(STATUS_REQUEST).length - 1;
    if (requests > 0)
      setImmediate(() => {
        for (let i = 0; i < requests; i++) run.model.handleInput(STATUS_REPLY);
      });
  });
  run.model.open({ cols: 120, rows: 30 });
  run.start();
  return {
    text: () =>
      raw
        .split(STATUS_REQUEST)
        .join('')
        .replace(/\x1b\[[0-9;]*m/g, '')
        .replace(/\r\n/g, '\n'),
    bytes: () => bytes,
  };
}

async function setup(
  opts: { mode?: ApprovalMode; answers?: (ApprovalAnswer | undefined)[]; before?: (BeforeRunAnswer | undefined)[] } = {},
) {
  seen.length = 0;
  const client = await connect();
  const answers = [...(opts.answers ?? [])];
  const beforeAnswers = [...(opts.before ?? [])];
  const asked: string[] = [];
  const policy = new ApprovalPolicy({
    mode: () => opts.mode ?? 'ask',
    store: new MemoryAlwaysAllowStore(),
    ask: () => {
      asked.push('denied');
      return Promise.resolve(answers.shift());
    },
    askBeforeRun: () => {
      asked.push('beforeRun');
      return Promise.resolve(beforeAnswers.shift());
    },
  });
  const registry = new RunRegistry();
  const remembered = new Map<string, TerminalInfo>();
  const reads: { processId: string; seq: number }[] = [];
  const terminals: { text(): string; bytes(): number }[] = [];
  const conn = {
    name: 'local',
    connect: () => Promise.resolve(client),
    get client() {
      return client;
    },
    onClientState: client.onDidChangeState,
    rememberTerminal: (processId: string, info: TerminalInfo) => remembered.set(processId, info),
  };
  const services = { approvals: policy, registry, log: () => undefined };
  const spec = (commandLine: string, agent: RunSpec['agent'], sandboxed: boolean): RunSpec => ({
    kind: 'command',
    executor: 'local',
    commandLine,
    argv: ['/bin/sh', '-c', commandLine],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    tty: false,
    pipeStdin: agent?.backgroundId !== undefined,
    ...(sandboxed ? { sandbox: sandboxRequest(DEFAULT_SANDBOX, dir) } : {}),
    sandboxLabel: sandboxed ? LABEL : 'none',
    ...(agent ? { agent } : {}),
  });
  let sandboxed = true;
  const tools = new AgentTools({
    open: (request) => {
      const s = spec(request.commandLine, request.backgroundId ? { backgroundId: request.backgroundId } : {}, sandboxed);
      const run = executorRun(conn, s, services);
      terminals.push(showInTerminal(run));
      return Promise.resolve({ run, executor: 'local', cwd: dir, terminalName: terminalName(s) });
    },
    executors: () => [{ name: 'local', active: true, state: 'connected', description: 'test server', cwd: dir }],
    registry,
    rememberRead: (_executor, processId, seq) => reads.push({ processId, seq }),
    newId: (() => {
      let n = 0;
      return () => `bg-${++n}`;
    })(),
  });
  const signal = new AbortController().signal;
  return {
    client,
    seen,
    tools,
    asked,
    remembered,
    reads,
    terminals,
    signal,
    registry,
    conn,
    services,
    spec,
    unsandboxed: () => (sandboxed = false),
    dispose: () => {
      tools.dispose();
      client.dispose();
    },
  };
}

describe('execBridge_runCommand', () => {
  test('runs in the sandbox in a terminal and returns the exit code and the output', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    const text = await h.tools.runCommand({ command: 'echo out; echo err >&2; exit 3' }, h.signal);
    assert.match(text, /^Ran `echo out; echo err >&2; exit 3` on local in /);
    assert.match(text, /^Exit: exit code 3\.$/m);
    assert.match(text, /^Output \(stdout and stderr, 8 bytes\):\nout\nerr\n/m);
    assert.match(text, /the terminal "agent: echo out; echo err >&2; exit 3 · local"/);
    assert.equal(h.seen.length, 1);
    assert.notEqual(h.seen[0]!.sandbox, null, 'in the sandbox');
    assert.match(h.terminals[0]!.text(), /^out\nerr\n/m);
    assert.ok(
      [...h.remembered.values()].every((i) => i.agent && i.title.startsWith('agent: ')),
      'remembered for a reload',
    );
  });

  test('3 MiB of output: the model gets at most the bound with the marker, the terminal gets all of it', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    const text = await h.tools.runCommand({ command: `echo START; head -c ${3 * MiB} /dev/zero | tr '\\0' x; echo; echo END` }, h.signal);
    const output = text.slice(text.indexOf('Output ('));
    assert.ok(Buffer.byteLength(output) <= AGENT_OUTPUT_LIMIT + 300, `${Buffer.byteLength(output)} bytes to the model`);
    assert.match(
      output,
      /^Output \(stdout and stderr, 3,145,739 bytes\):\nSTART\nx+\n\[… [\d,]+ bytes left out; the full output is in the terminal …\]\nx+\nEND\n/m,
    );
    assert.ok(h.terminals[0]!.bytes() >= 3 * MiB, `the terminal got ${h.terminals[0]!.bytes()} characters`);
  });

  test('a denial approved once: the result says it was blocked, approved and re-run without the sandbox', async (t) => {
    const h = await setup({ answers: ['once'] });
    t.after(h.dispose);
    const text = await h.tools.runCommand({ command: SCRIPT }, h.signal);
    assert.deepEqual(h.asked, ['denied']);
    assert.match(
      text,
      new RegExp(
        `The sandbox \\(${LABEL}\\) blocked the command \\(exit code 13\\)\\. The user approved it \\(approved once\\), and it was run again without the sandbox\\.`,
      ),
    );
    assert.match(text, /^Exit: exit code 0 \(run without the sandbox\)\.$/m);
    assert.match(text, /Output of the blocked attempt in the sandbox \(13 bytes\):\nblocked here\n/);
    assert.match(text, /^Output \(stdout and stderr, 16 bytes\):\nran unsandboxed\n/m);
    assert.equal(h.seen.length, 2);
  });

  test('a denial the user refuses: the result says so, and tells the model not to retry unsandboxed', async (t) => {
    const h = await setup({ answers: ['deny'] });
    t.after(h.dispose);
    const text = await h.tools.runCommand({ command: SCRIPT }, h.signal);
    assert.match(text, /The user refused to run it without the sandbox \(not re-run: denied\)\. Do not retry it unsandboxed/);
    assert.match(text, /^Exit: exit code 13\.$/m);
    assert.match(text, /blocked here/);
    assert.equal(h.seen.length, 1);
  });

  test('askBeforeRun, denied: nothing runs, and the model is told', async (t) => {
    const h = await setup({ mode: 'askBeforeRun', before: ['deny'] });
    t.after(h.dispose);
    const text = await h.tools.runCommand({ command: 'touch never' }, h.signal);
    assert.deepEqual(h.asked, ['beforeRun']);
    assert.equal(h.seen.length, 0, 'nothing started');
    assert.match(text, /did not allow it \(not run: denied\): nothing ran/);
    assert.doesNotMatch(text, /^Exit:/m);
  });

  test('always allowed: the same command then starts once, without the sandbox', async (t) => {
    const h = await setup({ answers: ['always'] });
    t.after(h.dispose);
    await h.tools.runCommand({ command: SCRIPT }, h.signal);
    h.seen.length = 0;
    const text = await h.tools.runCommand({ command: SCRIPT }, h.signal);
    assert.equal(h.seen.length, 1, 'started once');
    assert.equal(h.seen[0]!.sandbox, null);
    assert.match(text, /always allows this command in this workspace, so it ran without the sandbox/);
    assert.match(text, /ran unsandboxed/);
  });

  test('a timeout stops the process and says so; a cancel does too', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    const t0 = Date.now();
    const timedOut = await h.tools.runCommand({ command: 'echo begun; sleep 30', timeoutSeconds: 1 }, h.signal);
    assert.ok(Date.now() - t0 < 10_000);
    assert.match(timedOut, /It did not finish within 1 s and was stopped \(exit code \d+/);
    assert.match(timedOut, /begun/);
    assert.match(h.terminals[0]!.text(), /■ stopped: the tool's timeout \(1 s\) passed/);

    const cancel = new AbortController();
    const running = h.tools.runCommand({ command: 'echo waiting; sleep 30' }, cancel.signal);
    await waitUntil(() => /waiting/.test(h.terminals[1]?.text() ?? ''));
    cancel.abort();
    const cancelled = await running;
    assert.match(cancelled, /The chat request was cancelled, so it was stopped/);
    assert.match(h.terminals[1]!.text(), /■ stopped: the chat request was cancelled/);
  });
});

describe('background processes', () => {
  test('start, write, read what is new, stop', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    h.unsandboxed();
    const started = await h.tools.startBackground(
      { command: 'echo ready; while read -r l; do echo "got $l"; done', waitSeconds: 0.3 },
      h.signal,
    );
    assert.match(started, /Started `.*` in the background as "bg-1" on local/);
    assert.match(started, /State: running without the sandbox\./);
    assert.match(started, /New output \(6 bytes\):\nready\n/);
    assert.match(await h.tools.writeBackground({ id: 'bg-1', text: 'hello' }), /Wrote 6 bytes to the stdin of "bg-1"/);
    const read = await h.tools.readBackground({ id: 'bg-1', waitSeconds: 0.5 }, h.signal);
    assert.match(read, /New output \(10 bytes\):\ngot hello\n/);
    assert.doesNotMatch(read, /ready/, 'only what is new');
    assert.match(await h.tools.readBackground({ id: 'bg-1' }, h.signal), /No new output\./);
    assert.match(h.terminals[0]!.text(), /› hello\\n/, 'the user sees what the model typed');
    assert.match(h.tools.listExecutors(), /- bg-1: `echo ready; .*` on local, running/);
    const stopped = await h.tools.stopBackground({ id: 'bg-1' });
    assert.match(stopped, /^Stopped "bg-1"\.\nState: ended, exit code \d+ \(killed\) \(stopped by the agent\)\./);
    await assert.rejects(h.tools.readBackground({ id: 'bg-9' }, h.signal), /There is no background process "bg-9"/);
  });

  test('after a window reload the same id reads on where the model left off', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    h.unsandboxed();
    const gate = join(dir, 'agent-gate');
    await h.tools.startBackground(
      { command: `mkfifo ${gate}; echo before-1; echo before-2; read -r _ < ${gate}; echo after-1; sleep 30`, waitSeconds: 0.5 },
      h.signal,
    );
    const first = await h.tools.readBackground({ id: 'bg-1', waitSeconds: 0.2 }, h.signal);
    assert.match(first, /No new output\.|before/);
    const processId = [...h.remembered.keys()][0]!;
    assert.equal(h.remembered.get(processId)!.agent?.backgroundId, 'bg-1');
    const readSeq = h.reads.filter((r) => r.processId === processId).at(-1)!.seq;
    assert.ok(readSeq > 0);

    // The window goes away: its client with it; the process keeps running in the detached session.
    h.tools.dispose();
    h.client.dispose('window reload');
    const next = await connect(h.client.sessionId);
    try {
      writeFileSync(gate, 'go\n');
      const tools = new AgentTools({ open: () => Promise.reject(new Error('no new runs')), executors: () => [], registry: h.registry });
      const spec: RunSpec = { ...h.spec('(reopened)', { backgroundId: 'bg-1', readSeq }, false), argv: [] };
      const run = executorRun(
        { ...h.conn, connect: () => Promise.resolve(next), client: next, onClientState: next.onDidChangeState },
        spec,
        h.services,
        {
          attach: () => next.attachProcess(processId, { tty: false, stdinWritable: true }),
        },
      );
      const opened: OpenedRun = { run, executor: 'local', cwd: dir, terminalName: 'agent: reopened · local' };
      tools.adopt('bg-1', opened, readSeq);
      const terminal = showInTerminal(run);
      const read = await tools.readBackground({ id: 'bg-1', waitSeconds: 1 }, h.signal);
      assert.match(read, /New output \(8 bytes\):\nafter-1\n/);
      assert.doesNotMatch(read, /before-/, 'what was read before the reload is not given again');
      assert.match(terminal.text(), /before-1\nbefore-2\n/, 'the terminal shows everything');
      assert.match(await tools.stopBackground({ id: 'bg-1' }), /Stopped "bg-1"/);
      tools.dispose();
    } finally {
      next.dispose();
    }
  });
});

async function waitUntil(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
