import * as vscode from 'vscode';
import { ErrorCode, McpError, type CreateMessageRequest, type CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { samplingTurns } from '../mcp/clientFeatures';

/**
 * MCP sampling through VS Code's language models (`vscode.lm`): announced to servers only while a
 * chat model is available, and each request asks the user first (Allow once, or for this server
 * until the window closes). A declined or impossible request is an error the server sees.
 */
export class LmSampler implements vscode.Disposable {
  private available = false;
  private readonly allowed = new Set<string>();
  private readonly sub: vscode.Disposable;

  constructor() {
    void this.refresh();
    this.sub = vscode.lm.onDidChangeChatModels(() => void this.refresh());
  }

  readonly canSample = (): boolean => this.available;

  readonly sample = async (server: string, params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult> => {
    const [model] = await vscode.lm.selectChatModels();
    if (!model) throw new McpError(ErrorCode.InvalidRequest, 'no language model is available in VS Code');
    const turns = samplingTurns(params);
    if (!this.allowed.has(server)) {
      const last = turns.at(-1)?.text ?? '';
      const pick = await vscode.window.showWarningMessage(
        `MCP server "${server}" asks ${model.name} to answer: "${last.length > 300 ? `${last.slice(0, 300)}…` : last}"`,
        { modal: true, detail: 'The request and its answer are sent to the model with your account.' },
        'Allow Once',
        'Allow for This Server',
      );
      if (pick === undefined) throw new McpError(ErrorCode.InvalidRequest, 'the user declined the sampling request');
      if (pick === 'Allow for This Server') this.allowed.add(server);
    }
    const cts = new vscode.CancellationTokenSource();
    const onAbort = () => cts.cancel();
    signal.addEventListener('abort', onAbort);
    try {
      const messages = turns.map((t) =>
        t.role === 'user' ? vscode.LanguageModelChatMessage.User(t.text) : vscode.LanguageModelChatMessage.Assistant(t.text),
      );
      const response = await model.sendRequest(messages, {}, cts.token);
      let text = '';
      for await (const chunk of response.text) text += chunk;
      return { role: 'assistant', content: { type: 'text', text }, model: model.id, stopReason: 'endTurn' };
    } finally {
      signal.removeEventListener('abort', onAbort);
      cts.dispose();
    }
  };

  dispose(): void {
    this.sub.dispose();
  }

  private async refresh(): Promise<void> {
    try {
      this.available = (await vscode.lm.selectChatModels()).length > 0;
    } catch {
      this.available = false;
    }
  }
}
