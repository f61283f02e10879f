// The language-model tools (issue 22) in the real extension host, called as a chat calls them:
// through vscode.lm.invokeTool (why not through a chat request: README.md, "Agents"). Each
// run shows in one of our terminals, in the sandbox, with the same approvals as the user's commands;
// on VS Code versions with the final model-provider API, the tool's answer is sent on to the
// test-only model (test/vscode/fake-model) and reaches it.
import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { ApprovalChoice, ExecBridgeApi, PendingApproval } from '../../../src/vscode/api';
import { invoke, nextAgentTerminal } from './agentHelpers';
import { findFiles, getApi, plain, waitFor, waitForText, withSettings } from './helpers';

const TOOLS = [
  'execBridge_runCommand',
  'execBridge_startBackground',
  'execBridge_readBackground',
  'execBridge_writeBackground',
  'execBridge_stopBackground',
  'execBridge_listExecutors',
];
const FAKE_ID = 'exec-bridge-test.fake-model';
const MiB = 1024 * 1024;
/** The model's share of a tool answer (core/agentOutput.ts AGENT_OUTPUT_LIMIT) plus room for the words around it. */
const ANSWER_LIMIT = 16 * 1024 + 2048;
const FLOOD = Number(process.env.EXEC_BRIDGE_AGENT_FLOOD_BYTES ?? 50 * MiB);

/** A row of the Executors view (`execBridge.executors.snapshot`: read through the view's data provider). */
interface ViewRow {
  id?: string;
  label: string;
  description?: string;
  tooltip?: string;
  contextValue: string;
  children: ViewRow[];
}

/** Waits (bounded) until the Executors view lists a run under `executor` that `match` accepts. */
async function viewRun(executor: string, match: (row: ViewRow) => boolean, what: string, timeoutMs = 15_000): Promise<ViewRow> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; ; i++) {
    const rows = (await vscode.commands.executeCommand<ViewRow[] | undefined>('execBridge.executors.snapshot')) ?? [];
    const runs = rows.find((r) => r.label === executor)?.children.filter((c) => c.contextValue.startsWith('run;')) ?? [];
    const row = runs.find(match);
    if (row) return row;
    if (Date.now() > deadline || i > 2000)
      throw new Error(`the Executors view shows no ${what}; its runs: ${JSON.stringify(runs.map((r) => [r.label, r.description]))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The extension's log ("Exec Bridge" LogOutputChannel files). */
function logText(api: ExecBridgeApi): string {
  return findFiles(api.logUri.fsPath, /Exec Bridge\.log$/)
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Answers every approval notification with `choice` (or the function's answer) while `during` runs. */
async function answering<T>(
  api: ExecBridgeApi,
  choice: ApprovalChoice | ((p: PendingApproval) => ApprovalChoice),
  during: () => Promise<T>,
) {
  const asked: PendingApproval[] = [];
  const sub = api.onDidRequestApproval((p) => {
    asked.push(p);
    p.respond(typeof choice === 'function' ? choice(p) : choice);
  });
  try {
    return { result: await during(), asked };
  } finally {
    sub.dispose();
  }
}

suite('language-model tools', () => {
  let restore: () => Promise<void>;
  let workspace: string;
  const FILE = 'agent-approval.txt';

  suiteSetup(async () => {
    restore = await withSettings({ sandbox: 'workspace-write', sandboxNetwork: false, approvalPolicy: 'ask' });
    workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    await (await getApi()).connect('bundled');
  });
  suiteTeardown(async () => {
    await restore();
    rmSync(join(workspace, FILE), { force: true });
  });

  test('are offered to models: six tools with descriptions and input schemas', () => {
    for (const name of TOOLS) {
      const tool = vscode.lm.tools.find((t) => t.name === name);
      assert.ok(tool, `${name} is in vscode.lm.tools`);
      assert.ok(tool.description.length > 80, `${name} has a description for a model`);
      assert.equal((tool.inputSchema as { type?: string } | undefined)?.type, 'object');
    }
  });

  test('a command runs on the bundled executor in the sandbox, in its own terminal, and its answer reaches the model', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const opened = nextAgentTerminal(api);
    const answer = await invoke('execBridge_runCommand', { command: 'echo "agent-ran-$((6*7))"; exit 3' });
    assert.match(answer, /^Ran `echo "agent-ran-\$\(\(6\*7\)\)"; exit 3` on bundled in /);
    assert.match(answer, /^Exit: exit code 3\.$/m);
    assert.match(answer, /^agent-ran-42$/m);
    const t = await opened;
    assert.equal(t.executor, 'bundled');
    assert.match(t.terminal.name, /^agent: echo "agent-ran-.* · bundled$/);
    assert.equal(t.sandboxed, true, 'in the sandbox by default');
    await waitForText(t, /^agent-ran-42\r?$/m);
    assert.match(plain(t.text()), /sandbox: workspace-write, network off/);
    assert.match(answer, new RegExp(`the terminal "${escape(t.terminal.name)}"`));

    // The answer goes on to a model (the test model, where VS Code has the final provider API).
    const ext = vscode.extensions.getExtension<{ enable(): vscode.Disposable; requests: { messages: { text: string }[] }[] }>(FAKE_ID);
    const lm = vscode.lm as unknown as { registerLanguageModelChatProvider?: unknown };
    if (!ext || typeof lm.registerLanguageModelChatProvider !== 'function') return;
    const fake = await ext.activate();
    const registration = fake.enable();
    try {
      let model: vscode.LanguageModelChat | undefined;
      for (let i = 0; i < 200 && !model; i++) {
        [model] = await vscode.lm.selectChatModels({ vendor: 'exec-bridge-test' });
        if (!model) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(model, 'the test model is offered');
      const response = await model.sendRequest([vscode.LanguageModelChatMessage.User(`Tool result:\n${answer}`)]);
      let said = '';
      for await (const part of response.text) said += part;
      assert.match(said, /agent-ran-42/);
      assert.ok(fake.requests.some((r) => r.messages.some((m) => m.text.includes('Exit: exit code 3.'))));
    } finally {
      registration.dispose();
    }
  });

  test('a sandbox denial raises the approval notification; the model is told it was approved and re-run', async function () {
    this.timeout(60_000);
    const undo = await withSettings({ sandbox: 'read-only' });
    try {
      const api = await getApi();
      rmSync(join(workspace, FILE), { force: true });
      const { result, asked } = await answering(api, 'Run Without Sandbox', () =>
        invoke('execBridge_runCommand', { command: `echo written > ${FILE} && cat ${FILE}` }),
      );
      assert.deepEqual(
        asked.map((a) => a.kind),
        ['denied'],
      );
      assert.match(asked[0]!.message, /blocked/);
      assert.match(
        result,
        /The sandbox \(read-only, network off\) blocked the command \(exit code \d+\)\. The user approved it \(approved once\), and it was run again without the sandbox\./,
      );
      assert.match(result, /Output of the blocked attempt in the sandbox .*\n.*Read-only file system/);
      assert.match(result, /^written$/m);
      assert.equal(readFileSync(join(workspace, FILE), 'utf8'), 'written\n');

      rmSync(join(workspace, FILE), { force: true });
      const refused = await answering(api, 'Deny', () => invoke('execBridge_runCommand', { command: `echo written > ${FILE}` }));
      assert.match(refused.result, /The user refused to run it without the sandbox \(not re-run: denied\)\. Do not retry it unsandboxed/);
      assert.equal(existsSync(join(workspace, FILE)), false);
    } finally {
      await undo();
    }
  });

  test('approvalPolicy askBeforeRun asks before anything runs; a denied command never starts', async function () {
    this.timeout(60_000);
    const undo = await withSettings({ approvalPolicy: 'askBeforeRun' });
    try {
      const api = await getApi();
      const { result, asked } = await answering(api, 'Deny', () => invoke('execBridge_runCommand', { command: `echo no > ${FILE}` }));
      assert.deepEqual(
        asked.map((a) => a.kind),
        ['beforeRun'],
      );
      assert.match(result, /did not allow it \(not run: denied\): nothing ran/);
      assert.equal(existsSync(join(workspace, FILE)), false);
      const sandboxed = await answering(api, 'Run in Sandbox', () => invoke('execBridge_runCommand', { command: 'echo in-sandbox' }));
      assert.match(sandboxed.result, /The user approved running it in the sandbox \(workspace-write, network off\)\./);
      assert.match(sandboxed.result, /^in-sandbox$/m);
    } finally {
      await undo();
    }
  });

  test(`${FLOOD / MiB} MiB of output: the model gets at most the bound, the terminal all of it`, async function () {
    this.timeout(300_000);
    const api = await getApi();
    const opened = nextAgentTerminal(api);
    let chars = 0;
    const counting = opened.then((t) => t.onDidWrite((text) => (chars += text.length)));
    const line = '0123456789'.repeat(10);
    const t0 = Date.now();
    const answer = await invoke('execBridge_runCommand', {
      command: `yes ${line} | head -c ${FLOOD}; echo END-OF-FLOOD`,
      timeoutSeconds: 280,
    });
    const ms = Date.now() - t0;
    (await counting).dispose();
    console.log(`agent flood: ${FLOOD / MiB} MiB in ${ms} ms; ${Buffer.byteLength(answer)} bytes to the model`);
    assert.ok(Buffer.byteLength(answer) <= ANSWER_LIMIT, `${Buffer.byteLength(answer)} bytes to the model`);
    assert.match(answer, /^Exit: exit code 0\.$/m);
    assert.match(answer, /\[… [\d,]+ bytes left out; the full output is in the terminal …\]/);
    assert.match(answer, /END-OF-FLOOD\n/);
    assert.match(answer, new RegExp(`Output \\(stdout and stderr, ${(FLOOD + 13).toLocaleString('en-US')} bytes\\)`));
    assert.ok(chars >= FLOOD, `the terminal was given ${chars} characters`);
  });

  test("the chat's cancel stops the command; its terminal says so", async function () {
    this.timeout(60_000);
    const api = await getApi();
    const opened = nextAgentTerminal(api);
    const cancel = new vscode.CancellationTokenSource();
    const running = invoke('execBridge_runCommand', { command: 'echo started; sleep 60' }, cancel.token).catch(
      (e: Error) => `rejected: ${e.message}`,
    );
    const t = await opened;
    await waitForText(t, /^started\r?$/m);
    const completion = t.process!.completion;
    cancel.cancel();
    const answer = await running;
    // VS Code may answer a cancelled call itself; either way the process ends and the terminal says why.
    assert.match(answer, /The chat request was cancelled, so it was stopped|rejected: /);
    const end = await completion;
    assert.equal(end.exitCode, 137, 'killed');
    await waitForText(t, /■ stopped: the chat request was cancelled/);
  });

  test('a background process: start, write to its stdin, read what is new, stop', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const opened = nextAgentTerminal(api);
    const started = await invoke('execBridge_startBackground', {
      command: 'echo listening; while read -r l; do echo "echo:$l"; done',
      waitSeconds: 1,
    });
    const id = /as "(bg-[0-9a-f]+)"/.exec(started)?.[1];
    assert.ok(id, started);
    assert.match(started, /New output \(10 bytes\):\nlistening\n/);
    const t = await opened;
    assert.match(t.terminal.name, /^agent: echo listening; .* · bundled$/);
    assert.match(await invoke('execBridge_writeBackground', { id, text: 'hello' }), /Wrote 6 bytes/);
    const read = await invoke('execBridge_readBackground', { id, waitSeconds: 2 });
    assert.match(read, /State: running in the sandbox/);
    assert.match(read, /^echo:hello$/m);
    assert.doesNotMatch(read, /listening/, 'only what is new');
    await waitForText(t, /› hello\\n/);
    assert.match(
      await invoke('execBridge_listExecutors', {}),
      new RegExp(`- bundled \\(active\\): .*connected[\\s\\S]*- ${id}: \`echo listening;`),
    );
    const stopped = await invoke('execBridge_stopBackground', { id });
    assert.match(stopped, new RegExp(`^Stopped "${id}"\\.\\nState: ended, exit code \\d+.*\\(stopped by the agent\\)`));
    await waitForText(t, /■ stopped: stopped by the agent/);
    await assert.rejects(invoke('execBridge_readBackground', { id: 'bg-nope' }), /There is no background process "bg-nope"/);
  });
  test("each run is in the Executors view's process list while it runs, and shown ended after; the view's Stop ends a background one", async function () {
    this.timeout(90_000);
    const api = await getApi();
    const tag = `${process.pid}-${Date.now()}`;
    const gate = `agent-view-gate-${tag}`;
    const command = `echo view-${tag}; while [ ! -e ${gate} ]; do sleep 0.1; done; echo through`;
    const opened = nextAgentTerminal(api);
    const running = invoke('execBridge_runCommand', { command, timeoutSeconds: 60 });
    try {
      const t = await opened;
      await waitForText(t, new RegExp(`^view-${tag}\\r?$`, 'm'));
      const row = await viewRun('bundled', (r) => r.label === command && r.description === 'running', 'running foreground run');
      assert.match(row.contextValue, /;running;canStop;/);
      assert.equal(row.tooltip, `Command on bundled (process ${t.process!.processId})`);
    } finally {
      writeFileSync(join(workspace, gate), '');
    }
    const answer = await running;
    assert.match(answer, /^Exit: exit code 0\.$/m);
    assert.match(answer, /^through$/m);
    const ended = await viewRun('bundled', (r) => r.label === command && r.description === 'exit code 0', 'ended foreground run');
    assert.doesNotMatch(ended.contextValue, /running;/);
    rmSync(join(workspace, gate), { force: true });

    // A background one, stopped by the user from the view: the model reads that it ended.
    const bgCommand = `echo bg-view-${tag}; exec sleep 600`;
    const started = await invoke('execBridge_startBackground', { command: bgCommand, waitSeconds: 1 });
    const id = /as "(bg-[0-9a-f]+)"/.exec(started)?.[1];
    assert.ok(id, started);
    const bg = await viewRun('bundled', (r) => r.label === bgCommand && r.description === 'running', 'running background run');
    const runId = /^run:(.+)$/.exec(bg.id ?? '')?.[1];
    assert.ok(runId, JSON.stringify(bg));
    await vscode.commands.executeCommand('execBridge.run.stop', { kind: 'run', executor: 'bundled', runId });
    const read = await invoke('execBridge_readBackground', { id, waitSeconds: 30 });
    assert.match(read, /^State: ended, exit code 137 \(killed\)\.$/m);
    const bgEnded = await viewRun(
      'bundled',
      (r) => r.label === bgCommand && r.description === 'exit code 137 (killed)',
      'ended background run',
    );
    assert.doesNotMatch(bgEnded.contextValue, /running;/);
  });

  test('settings that leave runs unsandboxed: prepareInvocation asks to confirm each run (VS Code shows it; the log says so); a sandboxed run asks nothing', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const tag = `${process.pid}-${Date.now()}`;
    const inSandbox = `echo confirm-none-${tag}`;
    assert.match(await invoke('execBridge_runCommand', { command: inSandbox }), new RegExp(`^confirm-none-${tag}$`, 'm'));
    const undo = await withSettings({ sandbox: 'full-access', sandboxNetwork: true });
    try {
      const opened = nextAgentTerminal(api);
      const command = `echo confirm-${tag}`;
      // Outside a chat request VS Code confirms in a dialog, which extension tests answer "yes" by themselves.
      const answer = await invoke('execBridge_runCommand', { command });
      assert.match(answer, /^Exit: exit code 0\.$/m);
      assert.equal((await opened).sandboxed, false, 'it ran without a sandbox, as the settings say');
      const bgCommand = `echo confirm-bg-${tag}`;
      assert.match(await invoke('execBridge_startBackground', { command: bgCommand, waitSeconds: 5 }), /and it already ended/);
      const asked = (tool: string, cmd: string) =>
        new RegExp(
          `language-model tool ${tool} asks the user to confirm: Run without a sandbox\\? Run \`${escape(cmd)}\` on \\*\\*bundled\\*\\* \\(no sandbox\\)\\? The workspace's setting \`execBridge\\.sandbox\` is full-access with the network on, so this command runs without the sandbox\\.`,
        );
      const log = await waitFor(
        'both confirmations in the log',
        () => {
          const text = logText(api);
          return asked('execBridge_runCommand', command).test(text) && asked('execBridge_startBackground', bgCommand).test(text) && text;
        },
        15_000,
      );
      // The sandboxed run came first (so its lines are in the log): invoked, never confirmed.
      assert.ok(log.includes(`language-model tool execBridge_runCommand: {"command":"${inSandbox}"}`), 'the sandboxed run was invoked');
      assert.doesNotMatch(log, new RegExp(`asks the user to confirm: .*confirm-none-${tag}`));
    } finally {
      await undo();
    }
  });
});
