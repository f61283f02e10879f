import * as vscode from 'vscode';
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { elicitFields, parseElicitValue, type ElicitField } from '../mcp/clientFeatures';

/**
 * A server's form elicitation as VS Code quick inputs, one field after the other, titled with the
 * server and its message. Escape on any field (or the server withdrawing the request) declines.
 */
export async function elicitWithQuickInput(server: string, params: ElicitRequestFormParams, signal: AbortSignal): Promise<ElicitResult> {
  const cts = new vscode.CancellationTokenSource();
  const onAbort = () => cts.cancel();
  signal.addEventListener('abort', onAbort);
  try {
    const fields = elicitFields(params);
    const content: Record<string, string | number | boolean> = {};
    if (fields.length === 0) {
      const pick = await vscode.window.showInformationMessage(`MCP server "${server}": ${params.message}`, { modal: true }, 'Accept');
      return { action: pick === 'Accept' ? 'accept' : 'decline', content: {} };
    }
    for (const [i, f] of fields.entries()) {
      const title = `${server}: ${params.message} (${i + 1}/${fields.length})`;
      const value = await askField(f, title, cts.token);
      if (value === CANCELLED) return { action: 'decline' };
      if (value !== undefined) content[f.key] = value;
    }
    return { action: 'accept', content };
  } finally {
    signal.removeEventListener('abort', onAbort);
    cts.dispose();
  }
}

const CANCELLED = Symbol('cancelled');

async function askField(
  f: ElicitField,
  title: string,
  token: vscode.CancellationToken,
): Promise<string | number | boolean | undefined | typeof CANCELLED> {
  const placeHolder = `${f.title}${f.required ? '' : ' (optional)'}${f.description ? ` — ${f.description}` : ''}`;
  if (f.kind === 'enum' || f.kind === 'boolean') {
    const items =
      f.kind === 'enum'
        ? (f.options ?? []).map((o) => ({ label: o.label, value: o.value as string | boolean }))
        : [
            { label: 'Yes', value: true as string | boolean },
            { label: 'No', value: false as string | boolean },
          ];
    const pick = await vscode.window.showQuickPick(items, { title, placeHolder, ignoreFocusOut: true }, token);
    return pick === undefined ? CANCELLED : pick.value;
  }
  const text = await vscode.window.showInputBox(
    {
      title,
      prompt: placeHolder,
      ignoreFocusOut: true,
      ...(f.default !== undefined ? { value: String(f.default) } : {}),
      ...(f.format ? { placeHolder: f.format } : {}),
      validateInput: (t) => {
        const v = parseElicitValue(f, t);
        return typeof v === 'object' && v !== null ? v.error : undefined;
      },
    },
    token,
  );
  if (text === undefined) return CANCELLED;
  const v = parseElicitValue(f, text);
  return typeof v === 'object' && v !== null ? CANCELLED : v;
}
