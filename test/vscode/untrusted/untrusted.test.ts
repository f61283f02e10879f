/**
 * Runs in a second code-server with workspace trust on and the folder not trusted (the harness
 * sets EXEC_BRIDGE_TEST_SUITE=untrusted). Limited support: the extension activates and shows
 * itself, but connects nothing, starts no exec-server and runs nothing — not on a command, not
 * through the API, not an MCP server marked autoStart in the workspace's .vscode/mcp.json.
 */
import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';
import { EXTENSION_ID, getApi } from '../suite/helpers';

/** Descendants of this extension host whose command line mentions `what`. */
function childrenMentioning(what: string): string[] {
  const parent = new Map<number, number>();
  const cmd = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      cmd.set(Number(name), readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      // exited while we looked
    }
  }
  const isOurs = (pid: number): boolean => {
    for (let p = parent.get(pid), guard = 0; p !== undefined && p > 1 && guard < 100; p = parent.get(p), guard++)
      if (p === process.pid) return true;
    return false;
  };
  return [...cmd].filter(([pid, c]) => c.includes(what) && isOurs(pid)).map(([pid, c]) => `${pid} ${c}`);
}

suite('untrusted workspace', () => {
  test('activates with limited support, and connects, starts and runs nothing', async () => {
    assert.equal(vscode.workspace.isTrusted, false, 'the harness opened an untrusted folder');
    const api = await getApi();
    assert.equal(vscode.extensions.getExtension(EXTENSION_ID)?.isActive, true);
    assert.ok(api.executorNames().includes('bundled'));

    await assert.rejects(api.connect(), /not trusted/);
    // Commands refuse (a warning offers "Manage Workspace Trust") instead of running.
    const before = vscode.window.terminals.length;
    assert.equal(await vscode.commands.executeCommand('execBridge.runCommand', 'echo should-not-run'), undefined);
    assert.equal(await vscode.commands.executeCommand('execBridge.newShell'), undefined);
    assert.equal(await vscode.commands.executeCommand('execBridge.connect'), undefined);
    assert.equal(vscode.window.terminals.length, before, 'no terminal was opened');
    assert.equal(api.terminals().length, 0);

    // The workspace's autoStart MCP server must not have been started either (it would leave a marker).
    await new Promise((r) => setTimeout(r, 2000));
    const marker = join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, 'mcp-started.marker');
    assert.equal(existsSync(marker), false, 'an MCP server ran in an untrusted workspace');
    assert.equal(api.bundledServerPid(), undefined, 'no bundled exec-server was started');
    assert.deepEqual(childrenMentioning('cli.js serve'), []);
    // What needs no trust still works.
    assert.equal(await vscode.commands.executeCommand('execBridge.showLog'), undefined);
  });
});
