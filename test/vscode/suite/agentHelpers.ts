// Shared by the language-model tools' suites (agentTools*.test.ts; not a suite itself).
import * as vscode from 'vscode';
import type { ExecBridgeApi, ExecTerminal } from '../../../src/vscode/api';

/** Calls one of our tools as an agent does (outside a chat request) and gives the text of its answer. */
export async function invoke(name: string, input: object, token?: vscode.CancellationToken): Promise<string> {
  const result = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }, token);
  return result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
}

/** The agent terminal that opens next (its name starts with `agent: `). */
export function nextAgentTerminal(api: ExecBridgeApi): Promise<ExecTerminal> {
  return new Promise((resolve) => {
    const sub = api.onDidOpenTerminal((t) => {
      if (!t.terminal.name.startsWith('agent: ')) return;
      sub.dispose();
      resolve(t);
    });
  });
}
