// Shared by the MCP suites (not a suite itself): the machine's processes, the MCP snapshot command,
// starting one of our servers through VS Code's own MCP list, and calling a tool that asks the user.
import { readdirSync, readFileSync } from 'node:fs';
import * as vscode from 'vscode';

export interface SnapshotNode {
  label: string;
  description?: string;
  contextValue: string;
  children: SnapshotNode[];
}

export interface Snapshot {
  /** The MCP Servers tree as shown. */
  tree: SnapshotNode[];
  servers: { name: string; state: { kind: string; reason?: string }; tools: string[] }[];
  vscodeList?: {
    socket: string;
    definitions: { name: string; label: string; version: string; args: string[] }[];
    sessions: Record<string, number>;
  };
}

export const snapshot = () => vscode.commands.executeCommand<Snapshot>('execBridge.mcp.snapshot');

const [major, minor] = vscode.version.split('.').map(Number) as [number, number];
/** Whether this VS Code has the final MCP provider API (1.101+), so our servers are in its list. */
export const providerApiExpected = major > 1 || minor >= 101;

export async function waitForSnapshot(what: string, check: (s: Snapshot) => boolean, timeoutMs = 30_000): Promise<Snapshot> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await snapshot();
    if (check(s)) return s;
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}: ${JSON.stringify(s.servers)} ${JSON.stringify(s.vscodeList)}; tree: ${JSON.stringify(s.tree.map((n) => [n.label, n.description]))}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts `server` (configured in the settings: once it is listed) and waits until it offers `tool`. */
export async function startWithTool(server: string, tool: string): Promise<void> {
  await waitForSnapshot(`${server} from settings`, (s) => s.servers.some((x) => x.name === server));
  await vscode.commands.executeCommand('execBridge.mcp.start', server);
  await waitForSnapshot(`${server} offering ${tool}`, (s) => s.servers.find((x) => x.name === server)?.tools.includes(tool) === true);
}

/**
 * Call Tool on `tool` of `server` with `args`, answering what it asks as a user would: every 200 ms
 * until the call ends (at most `rounds` times) `answer` runs on the quick input shown —
 * `workbench.action.acceptSelectedQuickOpenItem` is Enter, `workbench.action.closeQuickOpen` Escape.
 */
export async function callToolAnswering<T>(server: string, tool: string, args: object, answer: string, rounds = 100): Promise<T> {
  const node = { kind: 'tool', id: `mcp:${server}/tools/${tool}`, server, name: tool };
  let done = false;
  const call = Promise.resolve(vscode.commands.executeCommand<T>('execBridge.mcp.callTool', node, args)).finally(() => (done = true));
  call.catch(() => undefined);
  for (let i = 0; i < rounds && !done; i++) {
    await new Promise((r) => setTimeout(r, 200));
    if (!done) await vscode.commands.executeCommand(answer);
  }
  return call;
}

export interface Proc {
  pid: number;
  ppid: number;
  cmd: string;
  env: string;
}

export function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue;
      out.push({
        pid: Number(name),
        ppid: Number(rest[1]),
        cmd: readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' '),
        env: readFileSync(`/proc/${name}/environ`, 'latin1'),
      });
    } catch {
      // gone
    }
  }
  return out;
}

export function ancestors(pid: number, procs: Proc[]): Proc[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const out: Proc[] = [];
  for (let p = byPid.get(byPid.get(pid)?.ppid ?? 0); p && out.length < 50; p = byPid.get(p.ppid)) out.push(p);
  return out;
}

/**
 * Starts our server `label` (`name · executor`) through VS Code's MCP service and waits until ours
 * is ready with VS Code's session. VS Code reads a provider's definitions asynchronously, so until
 * it has ours its start command finds nothing: asked again until it does (bounded).
 */
export async function startThroughVsCode(name: string, label: string): Promise<Snapshot> {
  const id = `exec-bridge.exec-bridge/${label}`;
  for (let i = 0; i < 100 && (await snapshot()).servers.find((x) => x.name === name)?.state.kind !== 'ready'; i++) {
    await vscode.commands.executeCommand('workbench.mcp.startServer', id, { autoTrustChanges: true, waitForLiveTools: true });
    await new Promise((r) => setTimeout(r, 200));
  }
  return waitForSnapshot(
    `${name} ready through VS Code`,
    (s) => s.servers.find((x) => x.name === name)?.state.kind === 'ready' && s.vscodeList?.sessions[name] === 1,
  );
}
