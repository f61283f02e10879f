// MCP sampling with a real VS Code language model: the test-only model of test/vscode/fake-model (a
// second development extension the harness loads; registered through the final
// vscode.lm.registerLanguageModelChatProvider, VS Code 1.104+) is what vscode.lm.selectChatModels
// finds. The probe server's `ask` asks for a completion; the consent quick pick is answered as a user
// would (Enter on "Allow Once", Escape to decline), and the model's answer reaches the server.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, withSettings } from './helpers';
import { snapshot, waitForSnapshot } from './mcpProcs';

const PROBE = join(__dirname, '..', '..', 'helpers', 'mcpProbeServer.js');
const FAKE_ID = 'exec-bridge-test.fake-model';

interface FakeModel {
  model: { id: string; name: string };
  requests: { messages: { role: number; text: string }[] }[];
  enable(): vscode.Disposable;
}

const hasFinalApi =
  typeof (vscode.lm as unknown as { registerLanguageModelChatProvider?: unknown }).registerLanguageModelChatProvider === 'function';
const askNode = { kind: 'tool', id: 'mcp:sampler/tools/ask', server: 'sampler', name: 'ask' };

/** Runs `ask` from our tree's Call Tool while `answer` is repeated on the consent prompt (bounded). */
async function askAnswering(question: string, answer: string): Promise<string> {
  let done = false;
  const call = Promise.resolve(
    vscode.commands.executeCommand<{ content: { text: string }[] }>('execBridge.mcp.callTool', askNode, { question }),
  ).finally(() => (done = true));
  for (let i = 0; i < 100 && !done; i++) {
    await new Promise((r) => setTimeout(r, 200));
    if (!done) await vscode.commands.executeCommand(answer);
  }
  return (await call).content.map((c) => c.text).join('\n');
}

suite('MCP sampling with a VS Code language model', () => {
  let restore: (() => Promise<void>) | undefined;
  let fake: FakeModel;
  let registration: vscode.Disposable | undefined;

  suiteSetup(async function () {
    this.timeout(30_000);
    await getApi();
    const ext = vscode.extensions.getExtension<FakeModel>(FAKE_ID);
    assert.ok(ext, `the harness loads ${FAKE_ID}`);
    fake = await ext.activate();
    restore = await withSettings({
      'mcp.servers': { sampler: { command: process.execPath, args: [PROBE], autoStart: false } },
    });
    await waitForSnapshot('the sampler from settings', (s) => s.servers.some((x) => x.name === 'sampler'));
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('execBridge.mcp.stop', 'sampler').then(undefined, () => undefined);
    await restore?.();
    registration?.dispose();
  });

  if (!hasFinalApi) {
    test(`VS Code ${vscode.version} has no registerLanguageModelChatProvider: no model, so sampling is not announced`, async function () {
      this.timeout(30_000);
      assert.throws(() => fake.enable(), /no vscode\.lm\.registerLanguageModelChatProvider/);
      assert.deepEqual(await vscode.lm.selectChatModels(), []);
      await vscode.commands.executeCommand('execBridge.mcp.start', 'sampler');
      const s = await waitForSnapshot('sampler ready', (x) => x.servers.find((v) => v.name === 'sampler')?.state.kind === 'ready');
      assert.deepEqual(s.servers.find((v) => v.name === 'sampler')?.tools, ['whoami', 'slow', 'touch'], 'no ask tool without sampling');
    });
    return;
  }

  test("with the user's consent the model's answer reaches the server; dismissing the prompt declines", async function () {
    this.timeout(90_000);
    registration = fake.enable();
    const deadline = Date.now() + 20_000;
    while (!(await vscode.lm.selectChatModels()).some((m) => m.id === fake.model.id)) {
      assert.ok(Date.now() < deadline, 'the test model in vscode.lm.selectChatModels');
      await new Promise((r) => setTimeout(r, 50));
    }
    // Whether a model exists is read when a server starts (and on onDidChangeChatModels, which may
    // reach our extension after this test saw the model): restart until the probe lists `ask`.
    for (let i = 0; i < 20 && !(await snapshot()).servers.find((x) => x.name === 'sampler')?.tools.includes('ask'); i++) {
      await vscode.commands.executeCommand('execBridge.mcp.restart', 'sampler');
      await waitForSnapshot('sampler ready', (s) => s.servers.find((x) => x.name === 'sampler')?.state.kind === 'ready');
    }
    assert.ok((await snapshot()).servers.find((x) => x.name === 'sampler')?.tools.includes('ask'), 'sampling announced');

    const answered = await askAnswering('What is 6 times 7?', 'workbench.action.acceptSelectedQuickOpenItem');
    assert.equal(answered, `model ${fake.model.id} answered: ${fake.model.name} heard: What is 6 times 7?`);
    assert.equal(fake.requests.at(-1)?.messages.at(-1)?.text, 'What is 6 times 7?', 'the model got the question');

    const before = fake.requests.length;
    const declined = await askAnswering('And 7 times 8?', 'workbench.action.closeQuickOpen');
    assert.match(declined, /sampling failed: .*declined/);
    assert.equal(fake.requests.length, before, 'nothing was sent to the model');
  });
});
