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

exports.activate = () => ({ model: MODEL, requests, enable });
exports.deactivate = () => undefined;
