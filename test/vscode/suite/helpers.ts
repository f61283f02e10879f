// Shared by the extension-host suites (not a suite itself: the runner loads `*.test.js` only).
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, type Dirent } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import type { ApprovalChoice, ExecBridgeApi, ExecTerminal, PendingApproval } from '../../../src/vscode/api';

export const EXTENSION_ID = 'exec-bridge.exec-bridge';

export async function getApi(): Promise<ExecBridgeApi> {
  const ext = vscode.extensions.getExtension<ExecBridgeApi>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
  return ext.activate();
}

/** Polls `check` every 25 ms until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Terminal text without escape codes, as a user would read it. */
export function plain(text: string): string {
  return text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07/g, '');
}

/** Waits until the terminal's text (escape codes stripped) matches `pattern`. */
export function waitForText(t: ExecTerminal, pattern: RegExp, timeoutMs = 15_000): Promise<RegExpExecArray> {
  return waitFor(
    `terminal text ${pattern} (so far: ${JSON.stringify(plain(t.text()).slice(-300))})`,
    () => pattern.exec(plain(t.text())) ?? undefined,
    timeoutMs,
  ).catch((e: Error) => {
    // Re-read the text at failure time for a useful message.
    throw new Error(`${e.message.split(' (so far')[0]}; terminal shows: ${JSON.stringify(plain(t.text()).slice(-400))}`);
  });
}

/** Resolves with the exit status VS Code reports when the terminal closes. */
export function whenClosed(terminal: vscode.Terminal, timeoutMs = 10_000): Promise<vscode.TerminalExitStatus | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`terminal "${terminal.name}" did not close within ${timeoutMs} ms`));
    }, timeoutMs);
    const sub = vscode.window.onDidCloseTerminal((t) => {
      if (t !== terminal) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(t.exitStatus);
    });
  });
}

/** Sets execBridge.* settings for this workspace; returns a function that restores them. */
export async function withSettings(values: Record<string, unknown>): Promise<() => Promise<void>> {
  const config = vscode.workspace.getConfiguration('execBridge');
  const before: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    before[k] = config.inspect(k)?.workspaceValue;
    await config.update(k, v, vscode.ConfigurationTarget.Workspace);
  }
  return async () => {
    for (const [k, v] of Object.entries(before)) await config.update(k, v, vscode.ConfigurationTarget.Workspace);
  };
}

/** Runs a command the way the palette command does and returns its terminal. */
export async function runCommand(api: ExecBridgeApi, commandLine: string): Promise<ExecTerminal> {
  const before = new Set(api.terminals());
  await vscode.commands.executeCommand('execBridge.runCommand', commandLine);
  return waitFor(`a terminal for ${commandLine}`, () => api.terminals().find((t) => !before.has(t) && t.commandLine === commandLine));
}

/** Runs `commandLine` on the active executor and answers the approval popup (if one comes) with `choice`. */
export async function runAnswering(api: ExecBridgeApi, commandLine: string, choice: ApprovalChoice | undefined) {
  const asked: PendingApproval[] = [];
  const sub = api.onDidRequestApproval((p) => {
    asked.push(p);
    if (choice) p.respond(choice);
  });
  try {
    const t = await runCommand(api, commandLine);
    await t.done;
    return { t, asked, text: plain(t.text()) };
  } finally {
    sub.dispose();
  }
}

/** Descendant pids of `pid` (via /proc), for leak checks. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // The process exited while we looked.
    }
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

/** Running (a zombie waiting to be reaped counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** An exec-server of our own (dist/cli.js serve on loopback), as a "remote" executor for tests. */
export async function startExecServer(extraArgs: string[] = []): Promise<{ url: string; port: number; stop(): void }> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
  const child = spawn(
    process.execPath,
    [join(ext.extensionPath, 'dist', 'cli.js'), 'serve', '--listen', 'ws://127.0.0.1:0', ...extraArgs],
    {
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const stop = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('the exec-server printed no URL within 15 s')), 15_000);
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /ws:\/\/127\.0\.0\.1:\d+/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[0]);
        }
      });
      child.once('exit', (code) => reject(new Error(`exec-server exited (${code})`)));
    });
    return { url, port: Number(url.split(':').pop()), stop };
  } catch (e) {
    stop();
    throw e;
  }
}

/** Files under `dir` (recursively) whose name matches `pattern`. */
export function findFiles(dir: string, pattern: RegExp): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number) => {
    if (depth > 8) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (pattern.test(e.name)) out.push(p);
    }
  };
  walk(dir, 0);
  return out;
}

/**
 * A new directory (under the temp dir, `prefix` + random) holding `files` (relative path → text),
 * added as a workspace folder on the bundled executor; connects first. `remove()` takes the folder
 * out of the workspace (waiting for VS Code to say so) and deletes the directory.
 */
export async function executorFolder(
  prefix: string,
  files: Record<string, string>,
): Promise<{ dir: string; root: vscode.Uri; remove(): Promise<void> }> {
  await (await getApi()).connect('bundled');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  const root = await vscode.commands.executeCommand<vscode.Uri | undefined>('execBridge.openExecutorFolder', 'bundled', dir);
  assert.ok(root, 'the executor folder was added');
  const remove = async () => {
    const folder = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === root.toString());
    if (folder) {
      const removed = new Promise<void>((resolve) => {
        const sub = vscode.workspace.onDidChangeWorkspaceFolders(() => {
          sub.dispose();
          resolve();
        });
      });
      vscode.workspace.updateWorkspaceFolders(folder.index, 1);
      await removed;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, root, remove };
}

/**
 * The nearest-rank percentile of ascending `sorted` (the smallest value with at least p % of the
 * samples at or below it): of 20 samples, p95 is the 19th, not the slowest (bench/run.mjs counts so too).
 */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
