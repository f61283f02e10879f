import * as assert from 'node:assert/strict';
import { suite, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi } from './helpers';

/**
 * Issue 24 item 9: README said "Help: Get Started", which neither code-server has. What there is,
 * on 1.100.3 and 1.139.1 alike: "Help: Welcome" (workbench.action.openWalkthrough; with no argument
 * the Welcome page, on 1.100.3 code-server's own walkthrough first) and "Welcome: Open
 * Walkthrough…" (welcome.showAllWalkthroughs, a pick of every walkthrough). Ours opens directly
 * with "Exec Bridge: Get Started".
 */
suite('the walkthrough', () => {
  const tabs = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs);
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('the commands README names exist; "Exec Bridge: Get Started" opens the walkthrough', async () => {
    await getApi();
    const all = await vscode.commands.getCommands(false);
    for (const id of ['workbench.action.openWalkthrough', 'welcome.showAllWalkthroughs', 'execBridge.openWalkthrough'])
      assert.ok(all.includes(id), `${id} is a command here (${vscode.version})`);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('execBridge.openWalkthrough');
    // 1.100.3 names the walkthrough in the tab: "Walkthrough: Exec Bridge" from the palette of a
    // user's window (screenshots, folder and multi-root), but in this test window (extension tests
    // loaded) its first Welcome page shows VS Code's featured "Setup VS Code Web" whatever it is
    // asked. 1.139.1's tab says "Welcome" whichever it shows (screenshots: ours).
    const want = vscode.version.startsWith('1.100.') ? /^Walkthrough: / : /^(Welcome|Walkthrough: Exec Bridge)$/;
    const deadline = Date.now() + 10_000;
    while (!tabs().some((t) => t.isActive && want.test(t.label)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.ok(
      tabs().some((t) => t.isActive && want.test(t.label)),
      `a walkthrough page is open on ${vscode.version}: ${JSON.stringify(tabs().map((t) => t.label))}`,
    );
  });
});
