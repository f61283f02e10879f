import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RemoteError } from '../../../src/client/errors';
import {
  ApprovalPolicy,
  MemoryAlwaysAllowStore,
  reportedDenial,
  sandboxUnavailableReason,
  unsandboxedRetry,
  type ApprovalAnswer,
  type ApprovalMode,
  type DeniedRun,
} from '../../../src/core/approvalPolicy';

const RUN: DeniedRun = {
  commandLine: 'touch /etc/x',
  argv: ['touch', '/etc/x'],
  cwd: '/w',
  executor: 'local',
  sandboxLabel: 'workspace-write, network off',
  exitCode: 1,
};

function setup(mode: ApprovalMode, answers: Array<ApprovalAnswer | undefined> = []) {
  const asked: DeniedRun[] = [];
  const store = new MemoryAlwaysAllowStore();
  let current = mode;
  const policy = new ApprovalPolicy({
    mode: () => current,
    store,
    ask: async (run) => {
      asked.push(run);
      return answers.shift();
    },
  });
  return { policy, asked, store, setMode: (m: ApprovalMode) => (current = m) };
}

const live = () => new AbortController().signal;

test('never: a denied run is not re-run and nobody is asked', async () => {
  const { policy, asked } = setup('never');
  const out = await policy.approve(RUN, live());
  assert.deepEqual([out.approved, out.reason], [false, 'never']);
  assert.equal(asked.length, 0);
});

test('autoApprove: re-run without asking', async () => {
  const { policy, asked } = setup('autoApprove');
  const out = await policy.approve(RUN, live());
  assert.deepEqual([out.approved, out.reason], [true, 'autoApprove']);
  assert.equal(asked.length, 0);
});

test('ask: once approves this time only; deny and dismiss do not re-run', async () => {
  const { policy, asked, store } = setup('ask', ['once', 'deny', undefined]);
  assert.deepEqual(await policy.approve(RUN, live()).then((o) => [o.approved, o.reason]), [true, 'approvedOnce']);
  assert.deepEqual(await policy.approve(RUN, live()).then((o) => [o.approved, o.reason]), [false, 'denied']);
  assert.deepEqual(await policy.approve(RUN, live()).then((o) => [o.approved, o.reason]), [false, 'dismissed']);
  assert.equal(asked.length, 3);
  assert.deepEqual(store.get(), [], 'nothing remembered');
});

test('ask: "always" remembers that exact command (argv, cwd, executor) in the workspace', async () => {
  const { policy, asked, store } = setup('ask', ['always', 'deny', 'deny', 'deny']);
  assert.equal((await policy.approve(RUN, live())).reason, 'approvedAlways');
  assert.equal(store.get().length, 1);
  const again = await policy.approve({ ...RUN, exitCode: 2, commandLine: 'whatever' }, live());
  assert.deepEqual([again.approved, again.reason], [true, 'alwaysAllowed']);
  assert.equal(asked.length, 1, 'not asked again');
  // Anything else about the command differs ⇒ asked again.
  for (const other of [
    { ...RUN, argv: ['touch', '/etc/y'] },
    { ...RUN, cwd: '/elsewhere' },
    { ...RUN, executor: 'devbox' },
  ]) {
    assert.equal((await policy.approve(other, live())).approved, false);
  }
  assert.equal(asked.length, 4);
  await policy.forget(RUN);
  assert.equal(policy.isAlwaysAllowed(RUN), false);
});

test('the mode is read on every decision; never overrides a remembered approval', async () => {
  const { policy, setMode } = setup('ask', ['always']);
  await policy.approve(RUN, live());
  setMode('never');
  assert.equal((await policy.approve(RUN, live())).approved, false);
  setMode('ask');
  assert.equal((await policy.approve(RUN, live())).approved, true);
});

test('a terminal closed before or during the prompt cancels', async () => {
  const ac = new AbortController();
  ac.abort();
  const { policy, asked } = setup('ask', ['once']);
  assert.equal((await policy.approve(RUN, ac.signal)).reason, 'cancelled');
  assert.equal(asked.length, 0);
  const during = new AbortController();
  const p = new ApprovalPolicy({
    mode: () => 'ask',
    store: new MemoryAlwaysAllowStore(),
    ask: async () => {
      during.abort();
      return 'once';
    },
  });
  assert.deepEqual(await p.approve(RUN, during.signal).then((o) => [o.approved, o.reason]), [false, 'cancelled']);
});

test('an approved retry keeps argv, cwd and env, drops the sandbox and is marked', () => {
  const start = { argv: ['touch', '/etc/x'], cwd: '/w', env: { A: '1' }, tty: true, sandbox: { permissions: { type: 'disabled' } } };
  const retry = unsandboxedRetry(start);
  assert.deepEqual(retry, { argv: ['touch', '/etc/x'], cwd: '/w', env: { A: '1' }, tty: true, unsandboxedRetry: true });
  assert.ok(!('sandbox' in retry));
});

test('an unsandboxed run is never reported as denied', () => {
  assert.equal(reportedDenial({ sandboxed: false, sandboxDenied: true }), false);
  assert.equal(reportedDenial({ sandboxed: true, sandboxDenied: true }), true);
  assert.equal(reportedDenial({ sandboxed: true, sandboxDenied: false }), false);
});

test('always-allow memory is bounded, oldest first', async () => {
  const { policy, store } = setup(
    'ask',
    Array.from({ length: 502 }, () => 'always' as const),
  );
  for (let i = 0; i < 502; i++) await policy.approve({ ...RUN, argv: ['cmd', String(i)] }, live());
  assert.equal(store.get().length, 500);
  assert.equal(policy.isAlwaysAllowed({ ...RUN, argv: ['cmd', '0'] }), false, 'oldest forgotten first');
  assert.equal(policy.isAlwaysAllowed({ ...RUN, argv: ['cmd', '501'] }), true);
});

test('an executor that cannot sandbox is recognised from its error, and its run is "not run", never "not re-run"', async () => {
  const reason = 'the sandbox needs bubblewrap (bwrap), which is not installed on the executor; install it. The command was not run.';
  const err = new RemoteError('process/start', -32603, `sandbox unavailable: ${reason}`, { kind: 'sandboxUnavailable', reason });
  assert.equal(sandboxUnavailableReason(err), reason);
  // The reason is the data's field, whatever the message says.
  assert.equal(
    sandboxUnavailableReason(new RemoteError('process/start', -32603, 'worded otherwise', { kind: 'sandboxUnavailable', reason })),
    reason,
  );
  // An older server of ours sends no reason: its message, as it is, is the reason.
  assert.equal(
    sandboxUnavailableReason(new RemoteError('process/start', -32603, `sandbox unavailable: ${reason}`, { kind: 'sandboxUnavailable' })),
    `sandbox unavailable: ${reason}`,
  );
  assert.equal(sandboxUnavailableReason(new RemoteError('process/start', -32603, 'x', null)), undefined);
  assert.equal(sandboxUnavailableReason(new RemoteError('process/start', -32603, 'spawn failed', { kind: 'spawnFailed' })), undefined);
  assert.equal(sandboxUnavailableReason(new Error('sandbox unavailable: x')), undefined);
  const policy = new ApprovalPolicy({ mode: () => 'ask', store: new MemoryAlwaysAllowStore(), ask: async () => 'deny' });
  const run = {
    commandLine: 'make',
    argv: ['sh', '-c', 'make'],
    cwd: '/w',
    executor: 'box',
    sandboxLabel: 'workspace-write, network off',
    unavailable: reason,
  };
  assert.deepEqual(await policy.approve(run, new AbortController().signal), { approved: false, reason: 'denied', note: 'not run: denied' });
});

test('beforeRun: only an always-allowed command starts unsandboxed; never keeps the sandbox', async () => {
  const { policy, store, setMode } = setup('ask', ['always']);
  assert.deepEqual((await policy.beforeRun(RUN, live())).decision, 'sandboxed');
  await policy.approve(RUN, live());
  assert.equal(store.get().length, 1);
  const allowed = await policy.beforeRun(RUN, live());
  assert.deepEqual([allowed.decision, allowed.reason], ['unsandboxed', 'alwaysAllowed']);
  setMode('autoApprove');
  assert.equal((await policy.beforeRun(RUN, live())).decision, 'unsandboxed');
  setMode('never');
  assert.equal((await policy.beforeRun(RUN, live())).decision, 'sandboxed');
  const aborted = new AbortController();
  aborted.abort();
  setMode('ask');
  assert.equal((await policy.beforeRun(RUN, aborted.signal)).decision, 'cancel');
});

test('beforeRun in askBeforeRun mode asks (and says so first); "always" is remembered', async () => {
  const asked: string[] = [];
  const store = new MemoryAlwaysAllowStore();
  const answers = ['sandboxed', 'once', 'deny', undefined, 'always'] as const;
  let i = 0;
  const policy = new ApprovalPolicy({
    mode: () => 'askBeforeRun',
    store,
    ask: () => Promise.resolve('deny'),
    askBeforeRun: async (run) => {
      asked.push(run.commandLine);
      return answers[i++];
    },
  });
  let onAsk = 0;
  const decide = async () => (await policy.beforeRun(RUN, live(), () => onAsk++)).decision;
  assert.deepEqual(
    [await decide(), await decide(), await decide(), await decide(), await decide()],
    ['sandboxed', 'unsandboxed', 'cancel', 'cancel', 'unsandboxed'],
  );
  assert.equal(onAsk, 5);
  assert.equal(store.get().length, 1);
  assert.equal(await decide(), 'unsandboxed', 'always allowed now');
  assert.equal(asked.length, 5, 'not asked the sixth time');
});
