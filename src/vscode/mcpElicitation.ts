import * as vscode from 'vscode';
import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { checkElicitPicks, elicitChoices, elicitFields, parseElicitValue, type ElicitChoice, type ElicitField } from '../mcp';

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
    const content: Record<string, string | number | boolean | string[]> = {};
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

/**
 * A URL-mode elicitation (e.g. a sign-in page of a third party): the server's message and the full
 * URL with its host are shown, and the page opens only when the user picks Open. Accept means
 * "opened"; the server learns the outcome out of band (it may send notifications/elicitation/complete).
 */
export async function elicitUrlWithQuickPick(server: string, params: ElicitRequestURLParams, signal: AbortSignal): Promise<ElicitResult> {
  let url: vscode.Uri;
  try {
    url = vscode.Uri.parse(params.url, true);
  } catch {
    return { action: 'decline' };
  }
  const cts = new vscode.CancellationTokenSource();
  const onAbort = () => cts.cancel();
  signal.addEventListener('abort', onAbort);
  try {
    const pick = await vscode.window.showQuickPick(
      [
        { label: `$(link-external) Open ${url.authority}`, open: true, detail: params.url },
        { label: '$(close) Decline', open: false },
      ],
      { title: `MCP server "${server}": ${params.message}`, placeHolder: `Open a page on ${url.authority}?`, ignoreFocusOut: true },
      cts.token,
    );
    if (!pick?.open) return { action: pick ? 'decline' : 'cancel' };
    // Consent is the answer; a browser that blocks the page does not turn it into a decline (the
    // user saw the full URL and can open it by hand).
    await Promise.resolve(vscode.env.openExternal(url)).catch(() => false);
    return { action: 'accept' };
  } finally {
    signal.removeEventListener('abort', onAbort);
    cts.dispose();
  }
}

/** A single-choice field: Enter takes the schema's default (or "leave out" for an optional field without one). */
function pickOne(f: ElicitField, title: string, placeHolder: string, token: vscode.CancellationToken): Promise<ElicitChoice | undefined> {
  const { items, active } = elicitChoices(f);
  const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { choice: ElicitChoice }>();
  qp.title = title;
  qp.placeholder = placeHolder;
  qp.ignoreFocusOut = true;
  qp.items = items.map((choice, i) => ({
    label: choice.label,
    choice,
    ...(i === active && f.default !== undefined ? { description: 'default' } : {}),
  }));
  qp.activeItems = [qp.items[active]!];
  return new Promise((resolve) => {
    let answer: ElicitChoice | undefined;
    const subs = [
      qp.onDidAccept(() => {
        answer = qp.selectedItems[0]?.choice ?? qp.activeItems[0]?.choice;
        qp.hide();
      }),
      qp.onDidHide(() => {
        for (const s of subs) s.dispose();
        qp.dispose();
        resolve(answer);
      }),
      token.onCancellationRequested(() => qp.hide()),
    ];
    qp.show();
  });
}

async function askField(
  f: ElicitField,
  title: string,
  token: vscode.CancellationToken,
): Promise<string | number | boolean | string[] | undefined | typeof CANCELLED> {
  const placeHolder = `${f.title}${f.required ? '' : ' (optional)'}${f.description ? ` — ${f.description}` : ''}`;
  if (f.kind === 'multi') {
    const defaults = new Set(Array.isArray(f.default) ? f.default : []);
    // Bounded: a pick outside minItems/maxItems asks again, with the reason in the title.
    let why = '';
    for (let attempt = 0; attempt < 5; attempt++) {
      const picks = await vscode.window.showQuickPick(
        (f.options ?? []).map((o) => ({ label: o.label, value: o.value, picked: defaults.has(o.value) })),
        { title: why ? `${title} — ${why}` : title, placeHolder, ignoreFocusOut: true, canPickMany: true },
        token,
      );
      if (picks === undefined) return CANCELLED;
      const checked = checkElicitPicks(
        f,
        picks.map((p) => p.value),
      );
      if (!('error' in checked)) return checked.length === 0 && !f.required ? undefined : checked;
      why = checked.error;
    }
    return CANCELLED;
  }
  if (f.kind === 'enum' || f.kind === 'boolean') {
    const pick = await pickOne(f, title, placeHolder, token);
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
