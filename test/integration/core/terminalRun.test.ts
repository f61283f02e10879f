/**
 * `TerminalRun` against our real exec-server (in process, over a memory transport) and a real
 * client, approval policy and run registry. Only the sandbox is a stand-in: the server's planner
 * seam gets one that runs a sandboxed command with `IN_FAKE_SANDBOX=1` and calls any failure of it
 * a denial, so the command below fails sandboxed and succeeds unsandboxed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, type ConnectionState } from '../../../src/client';
import {
  ApprovalPolicy,
  MemoryAlwaysAllowStore,
  type ApprovalAnswer,
  type ApprovalMode,
  type BeforeRunAnswer,
  type DeniedRun,
  type PlannedRun,
} from '../../../src/core/approvalPolicy';
import { RunRegistry } from '../../../src/core/runRegistry';
import { DEFAULT_SANDBOX, sandboxLabel, sandboxRequest } from '../../../src/core/sandboxSettings';
import { TerminalRun, type RunSpec } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import type { SpawnRequest } from '../../../src/server/spawnPlan';
import { Emitter, type Event } from '../../../src/util/emitter';
import { fakeSandbox, FAKE_SANDBOX_SCRIPT, inProcessConnector } from '../../helpers/inProcessServer';
import type { MemoryTransport } from '../../helpers/memoryTransport';

const SCRIPT = FAKE_SANDBOX_SCRIPT;
const LABEL = sandboxLabel(DEFAULT_SANDBOX);
const WAIT_MS = 10_000;

// Two servers for the whole file, each test with its own client (and so its own session). Both run
// ordinary starts before they close (FifoPool.dispose can fail with ENOTEMPTY while mkfifo runs).
const seen: SpawnRequest[] = [];
let withSandbox: ExecServer;
let withoutSandbox: ExecServer;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-terminal-run-'));
  withSandbox = new ExecServer({ planner: fakeSandbox(seen), sandboxPrewarmMs: 0 });
  // Our real server with its default planner, which refuses every sandboxed start.
  withoutSandbox = new ExecServer({ sandboxPrewarmMs: 0 });
});
after(async () => {
  await withSandbox.close();
  await withoutSandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

function command(overrides: Partial<RunSpec> = {}): RunSpec {
  return {
    kind: 'command',
    executor: 'local',
    commandLine: 'make it',
    argv: ['/bin/sh', '-c', SCRIPT],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MARK: 'kept' },
    tty: false,
    pipeStdin: false,
    sandbox: sandboxRequest(DEFAULT_SANDBOX, dir),
    sandboxLabel: LABEL,
    ...overrides,
  };
}

/** Resolves once `ready()` is true, checked after each event; fails after `WAIT_MS`. */
function when<T>(event: Event<T>, ready: () => boolean, what: string): Promise<void> {
  if (ready()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out waiting for ${what}`));
    }, WAIT_MS);
    const sub = event(() => {
      if (!ready()) return;
      clearTimeout(timer);
      sub.dispose();
      resolve();
    });
  });
}

/** The run's end, or a failure after `WAIT_MS`. */
function ended(run: TerminalRun): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the run never ended')), WAIT_MS)));
  return Promise.race([run.done, limit]).finally(() => clearTimeout(timer));
}

async function setup(
  opts: {
    mode?: ApprovalMode;
    answers?: Array<ApprovalAnswer | undefined>;
    beforeAnswers?: Array<BeforeRunAnswer | undefined>;
    cannotSandbox?: boolean;
  } = {},
) {
  seen.length = 0;
  const server = opts.cannotSandbox ? withoutSandbox : withSandbox;
  const links: MemoryTransport[] = [];
  const client = await ExecServerClient.connect({
    connector: inProcessConnector(server, links),
    keepalive: false,
    backoff: { stepMs: 1, maxMs: 5 },
  });
  const states: ConnectionState[] = [];
  client.onDidChangeState((s) => states.push(s));
  const asked: DeniedRun[] = [];
  const askedEmitter = new Emitter<void>();
  const answers = [...(opts.answers ?? [])];
  const beforeAnswers = [...(opts.beforeAnswers ?? [])];
  const askedBefore: PlannedRun[] = [];
  /** Set to hold the next prompt open until the terminal closes. */
  const prompt = { hold: false };
  const store = new MemoryAlwaysAllowStore();
  const policy = new ApprovalPolicy({
    mode: () => opts.mode ?? 'ask',
    store,
    ask: (run, signal) => {
      asked.push(run);
      askedEmitter.fire();
      if (prompt.hold) return new Promise((resolve) => signal.addEventListener('abort', () => resolve(undefined)));
      return Promise.resolve(answers.shift());
    },
    askBeforeRun: (run) => {
      askedBefore.push(run);
      return Promise.resolve(beforeAnswers.shift());
    },
  });
  const registry = new RunRegistry();
  const logs: string[] = [];
  const runs: TerminalRun[] = [];
  const open = (spec: RunSpec) => {
    const run = new TerminalRun(spec, {
      start: (options) => client.startProcess(options),
      approve: (denial, signal) => policy.approve(denial, signal),
      beforeRun: (planned, signal, onAsk) => policy.beforeRun(planned, signal, onAsk),
      onConnectionState: client.onDidChangeState,
      canResize: () => client.capabilities['processResize'] === true,
      registry,
      log: (line) => logs.push(line),
    });
    runs.push(run);
    let raw = '';
    run.model.onWrite((t) => (raw += t));
    const names: string[] = [];
    run.onDidChangeName((n) => names.push(n));
    run.model.open({ cols: 80, rows: 24 });
    run.start();
    // The terminal's text without colours, `\r\n` as `\n`.
    const text = () => raw.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r\n/g, '\n');
    const record = () => registry.get(run.runId!)!;
    const until = (pattern: RegExp) => when(run.model.onWrite, () => pattern.test(text()), `${pattern}`);
    return { run, text, names, record, until };
  };
  const dispose = () => {
    for (const r of runs) r.dispose();
    client.dispose();
  };
  return { client, links, states, seen, asked, askedBefore, onAsk: askedEmitter.event, prompt, store, registry, logs, open, dispose };
}

describe('a sandbox denial', () => {
  test('ask, approved once: the same argv, cwd and env run again without the sandbox in the same terminal', async (t) => {
    const h = await setup({ answers: ['once'] });
    t.after(h.dispose);
    const { run, text, names, record } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 1);
    assert.deepEqual(h.asked[0], {
      commandLine: 'make it',
      argv: ['/bin/sh', '-c', SCRIPT],
      cwd: dir,
      executor: 'local',
      sandboxLabel: LABEL,
      exitCode: 13,
    });
    assert.equal(h.seen.length, 2, 'started twice');
    const [first, retry] = h.seen as [SpawnRequest, SpawnRequest];
    assert.notEqual(first.sandbox, null);
    assert.equal(retry.sandbox, null, 'the retry has no sandbox');
    assert.deepEqual([retry.argv.slice(1), retry.cwd, retry.env], [first.argv.slice(1), first.cwd, first.env]);
    assert.equal(retry.env.MARK, 'kept');
    const out = text();
    assert.match(out, /^\$ make it$/m);
    assert.match(out, new RegExp(`^sandbox: ${LABEL}$`, 'm'));
    assert.match(out, /^blocked here$/m);
    assert.match(
      out,
      new RegExp(`^The sandbox \\(${LABEL}\\) blocked this command \\(exit code 13\\); what it did before that is done\\.$`, 'm'),
    );
    assert.match(out, /^↻ approved once — re-running WITHOUT the sandbox$/m);
    assert.match(out, /^ran unsandboxed$/m);
    assert.ok(out.indexOf('blocked here') < out.indexOf('ran unsandboxed'), 'the retry comes after the denial');
    assert.equal(run.model.exitCode, 0);
    assert.equal(run.sandboxed, false);
    assert.deepEqual(names, ['make it · local (unsandboxed)']);
    assert.deepEqual([record().status, record().exitCode, record().sandboxed, record().sandboxDenied], ['exited', 0, false, false]);
  });

  test('ask, Always Allow: re-runs; afterwards that command starts without the sandbox, once', async (t) => {
    const h = await setup({ answers: ['always'] });
    t.after(h.dispose);
    const counter = join(dir, `ran-count-${Date.now()}.txt`);
    const appending = command({ argv: ['/bin/sh', '-c', `echo ran >> '${counter}'; ${SCRIPT}`] });
    const first = h.open(appending);
    await ended(first.run);
    assert.equal(first.run.model.exitCode, 0);
    assert.match(first.text(), /^↻ approved: Always Allow This Command — re-running WITHOUT the sandbox$/m);
    assert.equal(h.store.get().length, 1);
    assert.equal(readFileSync(counter, 'utf8'), 'ran\nran\n', 'the first time: the sandboxed attempt and the retry');

    h.seen.length = 0;
    const second = h.open(appending);
    await ended(second.run);
    assert.equal(h.asked.length, 1, 'asked only the first time');
    assert.deepEqual(
      h.seen.map((r) => r.sandbox),
      [null],
      'started once, unsandboxed',
    );
    assert.equal(readFileSync(counter, 'utf8'), 'ran\nran\nran\n', 'one more line, not two');
    assert.match(second.text(), /^this command is always allowed in this workspace — running WITHOUT the sandbox$/m);
    assert.doesNotMatch(second.text(), /blocked/);
    assert.equal(second.run.model.exitCode, 0);
    assert.equal(second.run.sandboxed, false);
    assert.deepEqual(second.names, ['make it · local (unsandboxed)']);
    assert.equal(second.record().sandboxed, false);

    // Another cwd is another command: asked again (and dismissed here).
    const other = h.open(command({ cwd: tmpdir() }));
    await ended(other.run);
    assert.equal(h.asked.length, 2);
    assert.equal(other.run.model.exitCode, 13);
  });

  test('never: an always-allowed command still starts in the sandbox', async (t) => {
    const h = await setup({ mode: 'never' });
    t.after(h.dispose);
    h.store.set([ApprovalPolicy.commandKey(command())]);
    const { run } = h.open(command());
    await ended(run);
    assert.equal(h.seen.length, 1);
    assert.notEqual(h.seen[0]!.sandbox, null);
    assert.equal(run.model.exitCode, 13);
  });

  for (const answer of ['deny', undefined] as const) {
    test(`ask, ${answer ?? 'dismissed'}: not re-run; the denied exit code stays`, async (t) => {
      const h = await setup({ answers: [answer] });
      t.after(h.dispose);
      const { run, text, names, record } = h.open(command());
      await ended(run);
      assert.equal(h.asked.length, 1);
      assert.equal(h.seen.length, 1, 'started once');
      assert.match(text(), answer === 'deny' ? /^not re-run: denied$/m : /^not re-run: the prompt was dismissed$/m);
      assert.doesNotMatch(text(), /ran unsandboxed|WITHOUT the sandbox/);
      assert.match(text(), /\[exit code 13/);
      assert.equal(run.model.exitCode, 13);
      assert.equal(run.sandboxed, true);
      assert.deepEqual(names, []);
      assert.deepEqual([record().status, record().exitCode, record().sandboxDenied, record().sandboxed], ['exited', 13, true, true]);
    });
  }

  test('autoApprove: re-runs without asking', async (t) => {
    const h = await setup({ mode: 'autoApprove' });
    t.after(h.dispose);
    const { run, text } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 0);
    assert.equal(h.seen.length, 2);
    assert.match(text(), /^↻ approved automatically \(approval policy: autoApprove\) — re-running WITHOUT the sandbox$/m);
    assert.equal(run.model.exitCode, 0);
    assert.equal(run.sandboxed, false);
  });

  test('never: not re-run and nobody is asked', async (t) => {
    const h = await setup({ mode: 'never' });
    t.after(h.dispose);
    const { run, text } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 0);
    assert.equal(h.seen.length, 1);
    assert.match(text(), /^not re-run without the sandbox \(approval policy: never\)$/m);
    assert.equal(run.model.exitCode, 13);
  });

  test('a failing unsandboxed retry is an ordinary failure: not asked about again, not a denial', async (t) => {
    const h = await setup({ answers: ['once', 'once'] });
    t.after(h.dispose);
    const { run, record } = h.open(command({ argv: ['/bin/sh', '-c', 'exit 5'] }));
    await ended(run);
    assert.equal(h.asked.length, 1);
    assert.equal(h.seen.length, 2);
    assert.equal(run.model.exitCode, 5);
    assert.deepEqual([record().status, record().sandboxDenied], ['exited', false]);
  });

  test('a shell is never re-run unsandboxed (only commands are)', async (t) => {
    const h = await setup({ mode: 'autoApprove' });
    t.after(h.dispose);
    const { run } = h.open(command({ kind: 'shell' }));
    await ended(run);
    assert.equal(h.seen.length, 1);
    assert.equal(run.model.exitCode, 13);
  });

  test('closing the terminal while the prompt is open cancels it: nothing is re-run', async (t) => {
    const h = await setup();
    h.prompt.hold = true;
    t.after(h.dispose);
    const { run, record } = h.open(command());
    await when(h.onAsk, () => h.asked.length === 1, 'the prompt');
    assert.equal(record().status, 'awaitingApproval');
    run.close();
    await ended(run);
    assert.equal(h.seen.length, 1);
    assert.deepEqual([record().status, record().exitCode, record().sandboxDenied], ['exited', 13, true]);
  });
});

describe('approval policy askBeforeRun', () => {
  test('asks before anything runs; Run in Sandbox runs it sandboxed, and a denial then asks as usual', async (t) => {
    const h = await setup({ mode: 'askBeforeRun', beforeAnswers: ['sandboxed'], answers: ['deny'] });
    t.after(h.dispose);
    const { run, text } = h.open(command());
    await ended(run);
    assert.deepEqual(h.askedBefore, [
      { commandLine: 'make it', argv: ['/bin/sh', '-c', SCRIPT], cwd: dir, executor: 'local', sandboxLabel: LABEL },
    ]);
    assert.equal(h.seen.length, 1);
    assert.notEqual(h.seen[0]!.sandbox, null);
    assert.equal(h.asked.length, 1, 'the denial asks again');
    assert.match(text(), /^approved to run in the sandbox$/m);
    assert.equal(run.model.exitCode, 13);
  });

  test('Run Without Sandbox: runs once, unsandboxed, and asks next time again', async (t) => {
    const h = await setup({ mode: 'askBeforeRun', beforeAnswers: ['once', 'deny'] });
    t.after(h.dispose);
    const first = h.open(command());
    await ended(first.run);
    assert.deepEqual(
      h.seen.map((r) => r.sandbox),
      [null],
    );
    assert.match(first.text(), /^approved once — running WITHOUT the sandbox$/m);
    assert.equal(first.run.model.exitCode, 0);
    assert.equal(first.run.sandboxed, false);
    const second = h.open(command());
    await ended(second.run);
    assert.equal(h.askedBefore.length, 2);
    assert.equal(h.seen.length, 1, 'denied before it ran: nothing started');
    assert.match(second.text(), /^not run: denied$/m);
    assert.match(second.text(), /\[no exit code/);
    assert.equal(second.record().status, 'failed');
  });

  test('Always Allow: runs unsandboxed and is not asked about again', async (t) => {
    const h = await setup({ mode: 'askBeforeRun', beforeAnswers: ['always'] });
    t.after(h.dispose);
    const first = h.open(command());
    await ended(first.run);
    const second = h.open(command());
    await ended(second.run);
    assert.equal(h.askedBefore.length, 1);
    assert.deepEqual(
      h.seen.map((r) => r.sandbox),
      [null, null],
    );
    assert.equal(second.run.model.exitCode, 0);
  });

  test('dismissed: nothing runs; a shell is not asked about (only commands are)', async (t) => {
    const h = await setup({ mode: 'askBeforeRun', beforeAnswers: [undefined] });
    t.after(h.dispose);
    const { run, text } = h.open(command());
    await ended(run);
    assert.equal(h.seen.length, 0);
    assert.match(text(), /^not run: the prompt was dismissed$/m);
    const shell = h.open(command({ kind: 'shell' }));
    await ended(shell.run);
    assert.equal(h.askedBefore.length, 1);
    assert.equal(h.seen.length, 1);
  });
});

describe('an executor that cannot sandbox', () => {
  const REASON = 'this exec-server was started without sandbox support; refusing to run the command unsandboxed';

  test('the command is not run sandboxed; approved, it runs once without the sandbox', async (t) => {
    const h = await setup({ cannotSandbox: true, answers: ['once'] });
    t.after(h.dispose);
    const { run, text, names, record } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 1);
    assert.deepEqual(h.asked[0], {
      commandLine: 'make it',
      argv: ['/bin/sh', '-c', SCRIPT],
      cwd: dir,
      executor: 'local',
      sandboxLabel: LABEL,
      unavailable: REASON,
    });
    const out = text();
    // The reason comes from the error's data, not its message (which says "sandbox unavailable: …").
    assert.match(out, new RegExp(`^The executor cannot run this command in the sandbox \\(${LABEL}\\): ${REASON}$`, 'm'));
    assert.match(out, /^↻ approved once — running WITHOUT the sandbox$/m);
    assert.equal(out.match(/ran unsandboxed/g)?.length, 1);
    assert.equal(run.model.exitCode, 0);
    assert.equal(run.sandboxed, false);
    assert.deepEqual(names, ['make it · local (unsandboxed)']);
    assert.deepEqual([record().status, record().sandboxed], ['exited', false]);
  });

  test('denied, nothing runs', async (t) => {
    const h = await setup({ cannotSandbox: true, answers: ['deny'] });
    t.after(h.dispose);
    const { run, text, record } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 1);
    assert.match(text(), /^not run: denied$/m);
    assert.doesNotMatch(text(), /ran unsandboxed/);
    assert.match(text(), /\[no exit code/);
    assert.equal(run.model.exitCode, undefined);
    assert.equal(record().status, 'failed');
    assert.match(record().error ?? '', /sandbox unavailable/);
  });

  test('never: not run, and nobody is asked', async (t) => {
    const h = await setup({ cannotSandbox: true, mode: 'never' });
    t.after(h.dispose);
    const { run, text } = h.open(command());
    await ended(run);
    assert.equal(h.asked.length, 0);
    assert.match(text(), /^not run without the sandbox \(approval policy: never\)$/m);
    assert.equal(run.model.exitCode, undefined);
  });

  test('an unsandboxed command runs there as usual', async (t) => {
    const h = await setup({ cannotSandbox: true });
    t.after(h.dispose);
    const { run, text } = h.open(command({ sandbox: undefined }));
    await ended(run);
    assert.match(text(), /^sandbox: none$/m);
    assert.match(text(), /^ran unsandboxed$/m);
    assert.equal(h.asked.length, 0);
    assert.equal(run.model.exitCode, 0);
  });
});

describe('other starts and failures', () => {
  test('a start that fails for another reason is reported, never offered unsandboxed', async (t) => {
    const h = await setup({ mode: 'autoApprove' });
    t.after(h.dispose);
    const { run, text, record } = h.open(command({ argv: ['no-such-program-here'] }));
    await ended(run);
    assert.equal(h.asked.length, 0);
    assert.match(text(), /^could not start: process\/start failed: No such file or directory/m);
    assert.equal(record().status, 'failed');
    assert.equal(run.model.exitCode, undefined);
  });

  test('a connection cut mid-run: one recovery line, the run resumes and input still reaches it', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    const { run, text, until } = h.open(
      command({ argv: ['/bin/sh', '-c', 'read line; echo "got $line"'], pipeStdin: true, sandbox: undefined }),
    );
    await when(h.registry.onDidChange, () => run.process !== undefined, 'the process');
    h.links[0]!.close('cut');
    await when(
      h.client.onDidChangeState,
      () => h.states.some((s) => s.kind === 'recovering') && h.client.state.kind === 'connected',
      'recovery',
    );
    assert.equal(h.links.length, 2, 'reconnected once');
    run.model.handleInput('hello\r');
    await until(/^got hello$/m);
    await ended(run);
    assert.equal(text().match(/connection lost — resuming…/g)?.length, 1);
    assert.equal(run.model.exitCode, 0);
  });

  test('the executor gone for good: the run ends failed with the reason', async (t) => {
    const h = await setup();
    t.after(h.dispose);
    const { run, text, record } = h.open(command({ argv: ['/bin/sh', '-c', 'read line'], pipeStdin: true, sandbox: undefined }));
    await when(h.registry.onDidChange, () => run.process !== undefined, 'the process');
    h.client.dispose();
    await ended(run);
    assert.equal(record().status, 'failed');
    assert.match(text(), /^(disconnected: )?the connection to the exec-server was closed$/m);
    assert.equal(text().match(/the connection to the exec-server was closed/g)?.length, 1, 'said once');
    assert.equal(record().error, 'the connection to the exec-server was closed');
    assert.equal(run.model.exitCode, undefined);
  });
});
