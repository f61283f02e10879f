import * as vscode from 'vscode';
import { sshConfigHostsOf, parseSshTarget, scanHostKeys, trustHostKeys, type AskpassRequest, type SshProgress } from '../client';
import type { ExecutorState } from '../core';
import { userExecutorEntries } from './listSettings';

/*
 * SSH executors in the editor: the "Add SSH Executor…" command (the Host entries ssh knows, or a
 * typed user@host), the progress notification of a first connect, and ssh's password and
 * passphrase prompts as input boxes.
 */

/** Asks for a host and a name, appends `{name, ssh}` to execBridge.executors (user settings); resolves the name. */
export async function addSshExecutor(existingNames: readonly string[]): Promise<string | undefined> {
  const typed = '$(edit) Type user@host[:port]…';
  // What ssh reads: ~/.ssh/config of the account's home (not $HOME), /etc/ssh/ssh_config, their Includes.
  const hosts = sshConfigHostsOf();
  const pick = await vscode.window.showQuickPick(
    [...hosts.map((h) => ({ label: h.host, description: h.file })), { label: typed, description: '' }],
    { title: 'Add SSH Executor', placeHolder: hosts.length ? 'A Host from your ssh config, or type one' : 'Type user@host[:port]' },
  );
  if (!pick) return undefined;
  let target = pick.label;
  if (target === typed) {
    const v = await vscode.window.showInputBox({
      title: 'Add SSH Executor',
      prompt: 'SSH destination: [user@]host[:port] (keys, ssh-agent, or a password / passphrase asked here)',
      placeHolder: 'me@devbox.example.com',
      validateInput: (s) => {
        try {
          parseSshTarget(s);
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      },
    });
    if (!v) return undefined;
    target = v.trim();
  }
  const suggested = parseSshTarget(target).host;
  const name = await vscode.window.showInputBox({
    title: 'Add SSH Executor',
    prompt: 'Name shown in the status bar and the Executors view',
    value: existingNames.includes(suggested) ? `${suggested}-ssh` : suggested,
    validateInput: (s) =>
      !/^[\w.@ -]{1,64}$/.test(s.trim())
        ? 'letters, digits, space, and . _ - @ (at most 64)'
        : existingNames.includes(s.trim())
          ? `"${s.trim()}" is already an executor`
          : undefined,
  });
  if (!name) return undefined;
  // Appended to the user's own list: `get()` would return the workspace's list when there is one
  // (and copy it into the user settings); the executors of every scope are read together.
  const list = userExecutorEntries();
  list.push({ name: name.trim(), ssh: target });
  await vscode.workspace.getConfiguration('execBridge').update('executors', list, vscode.ConfigurationTarget.Global);
  return name.trim();
}

/**
 * One notification per first connect of an SSH executor ("Connecting to devbox… Installing
 * exec-server 0.2.0 (1.4 MB)… Starting…"); reconnects during recovery stay in the status bar.
 */
export class SshProgressNotifier implements vscode.Disposable {
  private readonly open = new Map<string, { report(text: string): void; done(): void }>();

  constructor(private readonly stateOf: (executor: string) => ExecutorState | undefined) {}

  onProgress(executor: string, p: SshProgress): void {
    if (this.stateOf(executor)?.kind === 'recovering') return;
    let n = this.open.get(executor);
    if (!n && p.step === 'connecting') {
      let report: (text: string) => void = () => undefined;
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Exec Bridge: ${executor}` }, (progress) => {
        report = (text) => progress.report({ message: text });
        report(`Connecting to ${p.target}…`);
        return Promise.race([finished, new Promise<void>((r) => setTimeout(r, 90_000))]);
      });
      n = { report: (t) => report(t), done };
      this.open.set(executor, n);
      return;
    }
    if (!n) return;
    if (p.step === 'installing') n.report(`Installing exec-server ${p.version} (${(p.bytes / 1e6).toFixed(1)} MB)…`);
    else if (p.step === 'starting') n.report('Starting…');
    else if (p.step === 'ready') this.end(executor);
  }

  /** Ends the executor's notification (connected or failed). */
  end(executor: string): void {
    this.open.get(executor)?.done();
    this.open.delete(executor);
  }

  dispose(): void {
    for (const name of [...this.open.keys()]) this.end(name);
  }
}

/**
 * For "host key is not known": shows the host's key fingerprints and adds them to known_hosts
 * only if the user confirms. Resolves whether they did.
 */
export async function checkHostKey(target: string, sshOptions: string[]): Promise<boolean> {
  const scan = await scanHostKeys(target, sshOptions);
  const trust = 'Trust and Connect';
  const choice = await vscode.window.showWarningMessage(
    `The host key of ${scan.hostname}:${scan.port} is not known yet.`,
    {
      modal: true,
      detail:
        `Compare these fingerprints with the ones the machine's owner gives you (ssh-keygen -lf /etc/ssh/ssh_host_*.pub on it):\n\n` +
        `${scan.fingerprints.join('\n')}\n\nTrusting adds them to ${scan.knownHostsFile} as ${scan.recordAs}.`,
    },
    trust,
  );
  if (choice !== trust) return false;
  trustHostKeys(scan);
  return true;
}

/**
 * One of ssh's prompts (src/client/sshAskpass.ts) for `executor`: a password input box with ssh's
 * own words; a yes/no question as a modal; a notice ("Confirm user presence…") as a notification.
 * Resolves undefined when the user cancels; withdrawn when `signal` aborts (ssh stopped waiting).
 */
export async function askSshPrompt(executor: string, request: AskpassRequest, signal: AbortSignal): Promise<string | undefined> {
  if (request.kind === 'none') {
    void vscode.window.showInformationMessage(`Exec Bridge: ${executor}: ${request.prompt}`);
    return '';
  }
  if (request.kind === 'confirm') {
    const yes = 'Yes';
    const choice = await vscode.window.showWarningMessage(`Exec Bridge: ${executor}`, { modal: true, detail: request.prompt }, yes);
    return choice === yes ? 'yes' : undefined;
  }
  const cancel = new vscode.CancellationTokenSource();
  const onAbort = () => cancel.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await vscode.window.showInputBox(
      { title: `Exec Bridge: SSH login to ${executor}`, prompt: request.prompt, password: true, ignoreFocusOut: true },
      cancel.token,
    );
  } finally {
    signal.removeEventListener('abort', onAbort);
    cancel.dispose();
  }
}
