// @ts-check
// A test-only language model (see package.json): registered only when a test calls `enable()`, so
// suites that do not ask for it see no model. It answers "<MODEL> heard: <last user text>" and keeps
// every request it got, for the test to inspect.
'use strict';
const vscode = require('vscode');

const MODEL = {
  id: 'exec-bridge-test-echo',
  name: 'Exec Bridge Test Echo',
  family: 'exec-bridge-test',
  version: '1.0.0',
  maxInputTokens: 8000,
  maxOutputTokens: 1000,
  capabilities: {},
};

/** @type {{ messages: { role: number, text: string }[] }[]} */
const requests = [];

/** @param {readonly vscode.LanguageModelChatRequestMessage[]} messages */
function texts(messages) {
  return messages.map((m) => ({
    role: m.role,
    text: m.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : `[${p.constructor.name}]`)).join(''),
  }));
}

/** Registers the model (VS Code 1.104+, the final registerLanguageModelChatProvider); dispose to remove it. */
function enable() {
  const lm = /** @type {any} */ (vscode.lm);
  if (typeof lm.registerLanguageModelChatProvider !== 'function')
    throw new Error(`VS Code ${vscode.version} has no vscode.lm.registerLanguageModelChatProvider`);
  return lm.registerLanguageModelChatProvider('exec-bridge-test', {
    provideLanguageModelChatInformation: () => [MODEL],
    /** @param {readonly vscode.LanguageModelChatRequestMessage[]} messages */
    provideLanguageModelChatResponse: async (_model, messages, _options, progress) => {
      const got = texts(messages);
      requests.push({ messages: got });
      progress.report(new vscode.LanguageModelTextPart(`${MODEL.name} heard: `));
      progress.report(new vscode.LanguageModelTextPart(got.at(-1)?.text ?? ''));
    },
    provideTokenCount: (_model, text) => Math.ceil((typeof text === 'string' ? text.length : 100) / 4),
  });
}

/**
 * "Exec Bridge Test: Invoke Tool From File": a UI stage (test/vscode/ui/agentReload.ui.ts) cannot
 * call vscode.lm.invokeTool from the browser, so it writes `{id, name, input}` to
 * `<workspace>/.eb-tool-call.json`, runs this command from the palette, and reads
 * `<workspace>/.eb-tool-result.json` (`{id, text}` or `{id, error}`). `{id, task}` runs a tasks.json task instead.
 */
async function invokeToolFromFile() {
  const fs = require('node:fs');
  const path = require('node:path');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!folder) return;
  const call = JSON.parse(fs.readFileSync(path.join(folder, '.eb-tool-call.json'), 'utf8'));
  let answer;
  try {
    if (call.task) {
      // `{id, task: label}`: runs that tasks.json task (the stage's task case), answers once it started.
      const task = (await vscode.tasks.fetchTasks()).find((t) => t.name === call.task);
      if (!task) throw new Error(`no task ${call.task}`);
      await vscode.tasks.executeTask(task);
      answer = { text: 'started' };
      writeAnswer(folder, { id: call.id, ...answer });
      return;
    }
    const result = await vscode.lm.invokeTool(call.name, { input: call.input, toolInvocationToken: undefined });
    answer = { text: result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('') };
  } catch (e) {
    answer = { error: e instanceof Error ? e.message : String(e) };
  }
  writeAnswer(folder, { id: call.id, ...answer });
}

/** Writes the answer whole or not at all (a rename): the stage polls for the file and must never read half of it (CI c30). */
function writeAnswer(folder, answer) {
  const fs = require('node:fs');
  const path = require('node:path');
  const file = path.join(folder, '.eb-tool-result.json');
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(answer));
  fs.renameSync(`${file}.tmp`, file);
}

/** @param {vscode.ExtensionContext} context */
exports.activate = (context) => {
  context.subscriptions.push(vscode.commands.registerCommand('execBridgeTest.invokeToolFromFile', invokeToolFromFile));
  return { model: MODEL, requests, enable };
};
exports.deactivate = () => undefined;
