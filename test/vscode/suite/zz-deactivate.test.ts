import * as assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';
import { descendants, EXTENSION_ID, getApi, isAlive, runCommand, waitFor, waitForText, withSettings } from './helpers';

// Last suite (file order): it shuts the extension down.
suite('deactivate', () => {
  test("detaches: the terminals' processes keep running in the daemon for the next window", async () => {
    const restore = await withSettings({ sandbox: 'full-access', sandboxNetwork: true });
    try {
      const api = await getApi();
      await api.connect('bundled');
      const server = api.bundledServerPid();
      assert.ok(server !== undefined);
      // Something long-running on the executor, and a shell: each says its own pid (`exec`: the
      // command's bash becomes the sleep), so the check is on exactly these two, not on whatever
      // else of earlier suites still ends under the daemon.
      const t = await runCommand(api, 'echo "slee""ping $$"; exec sleep 300');
      const sleepPid = Number((await waitForText(t, /sleeping (\d+)/))[1]);
      const before = new Set(api.terminals());
      await vscode.commands.executeCommand('execBridge.newShell');
      const shell = await waitFor('the shell terminal', () => api.terminals().find((x) => !before.has(x)));
      shell.terminal.sendText('echo "shell-""up $$"');
      const shellPid = Number((await waitForText(shell, /shell-up (\d+)/))[1]);
      const tree = [server, sleepPid, shellPid];
      const inDaemon = descendants(server);
      assert.ok(
        inDaemon.includes(sleepPid) && inDaemon.includes(shellPid),
        `the sleep and the shell run in the daemon ${server}: ${tree.join(',')}`,
      );

      // What VS Code calls on shutdown: the module's deactivate(), awaited. The require cache hands
      // back the very module instance the extension host loaded.
      const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
      const load = createRequire(__filename);
      const mod = load(join(ext.extensionPath, 'dist', 'extension.js')) as { deactivate(): Promise<void> | undefined };
      const stopping = mod.deactivate();
      assert.ok(stopping instanceof Promise, 'deactivate() of the loaded extension returns its shutdown');
      await stopping;
      // A window reload must not lose them: they run on in the daemon's detached session (its TTL
      // ends them; the harness checks that nothing outlives the TTL and the daemon's idle time).
      assert.ok(
        tree.every((pid) => isAlive(pid)),
        `still running: ${tree.filter((pid) => isAlive(pid)).join(',')} of ${tree.join(',')}`,
      );
    } finally {
      await restore();
    }
  });
});
