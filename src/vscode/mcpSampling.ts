import * as vscode from 'vscode';
import { ErrorCode, McpError, type CreateMessageRequest, type CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { pickModel, samplingTurns } from '../mcp';

/** The consent prompt's choices, in the order shown (the first is the active one). */
export const SAMPLING_CHOICES = ['Allow Once', 'Allow for This Server', 'Deny'] as const;

/**
 * MCP sampling through VS Code's language models (`vscode.lm`): announced to servers only while a
 * chat model is available, and each request asks the user first (Allow once, or for this server
 * until the window closes). A declined or impossible request is an error the server sees.
 *
 * The question is a quick pick that stays open when focus moves (Escape or Deny declines) rather
 * than a modal: it closes by itself when the server cancels its request, which a modal cannot.
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
    const models = await vscode.lm.selectChatModels();
    const model = pickModel(models, params.modelPreferences?.hints);
    if (!model) throw new McpError(ErrorCode.InvalidRequest, 'no language model is available in VS Code');
    const turns = samplingTurns(params);
    const cts = new vscode.CancellationTokenSource();
    const onAbort = () => cts.cancel();
    signal.addEventListener('abort', onAbort);
    try {
      if (!this.allowed.has(server)) {
        const pick = await this.ask(server, model.name, turns.at(-1)?.text ?? '', cts.token);
        if (pick === undefined || pick === 'Deny') throw new McpError(ErrorCode.InvalidRequest, 'the user declined the sampling request');
        if (pick === 'Allow for This Server') this.allowed.add(server);
      }
      const messages = turns.map((t) =>
        t.role === 'user' ? vscode.LanguageModelChatMessage.User(t.text) : vscode.LanguageModelChatMessage.Assistant(t.text),
      );
      const response = await model.sendRequest(
        messages,
        { justification: `MCP server "${server}" asked for a completion (sampling); you allowed it.` },
        cts.token,
      );
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

  private async ask(
    server: string,
    modelName: string,
    prompt: string,
    token: vscode.CancellationToken,
  ): Promise<(typeof SAMPLING_CHOICES)[number] | undefined> {
    const excerpt = prompt.length > 300 ? `${prompt.slice(0, 300)}…` : prompt;
    const items: (vscode.QuickPickItem & { choice: (typeof SAMPLING_CHOICES)[number] })[] = [
      { label: '$(check) Allow Once', choice: 'Allow Once', detail: excerpt },
      { label: '$(check-all) Allow for This Server', choice: 'Allow for This Server', description: 'until the window closes' },
      { label: '$(close) Deny', choice: 'Deny' },
    ];
    const pick = await vscode.window.showQuickPick(
      items,
      {
        title: `MCP server "${server}" asks ${modelName} to answer (sampling). The prompt and answer go to the model with your account.`,
        placeHolder: `Allow "${server}" to use ${modelName}?`,
        ignoreFocusOut: true,
      },
      token,
    );
    return pick?.choice;
  }

  private async refresh(): Promise<void> {
    try {
      this.available = (await vscode.lm.selectChatModels()).length > 0;
    } catch {
      this.available = false;
    }
  }
}
