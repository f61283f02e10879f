// The UI test: drives the real workbench (code-server in chromium) the way a user would.
// Loaded by scripts/vscode-test.mjs after a page load with our extension in development mode.
// Flow: Exec Bridge view → palette "Run Command on Executor…" → a command the default sandbox
// (workspace-write) blocks → the approval notification → "Run Without Sandbox" → the retried
// output in the same terminal → the run in the Executors view → a sandboxed MCP server's blocked
// host and blocked write, each Allowed from its notification (mcpSandbox.ui.ts) → shell
// decorations → a printed path opened by Ctrl+click → the build task's problem → Open Executor
// Folder (the window reopens as a workspace of both folders, and again on every reload).
import type { Dialog, Page } from 'playwright-core';
import { mcpSandboxDenial } from './mcpSandbox.ui';
import { notificationItem, runPaletteCommand, waitForTerminalText } from './page';

export interface UiContext {
  page: Page;
  log: (...args: unknown[]) => void;
  /** Saves a numbered screenshot of the current page (kept in test-results/ when the test fails). */
  shot: (name: string) => Promise<void>;
  workspace: string;
  /** Whether this workbench shows notification toasts (not with the smoke-test driver on: then the notification center). */
  toasts: boolean;
}

const VIEW = '[id="workbench.view.extension.execBridge"]';
// Writes to $HOME, which workspace-write leaves read-only; the output marker only appears when the
// write worked (the command line itself shows `retried %s`).
const COMMAND = "printf 'retried %s\\n' OK > ~/exec-bridge-ui.txt && cat ~/exec-bridge-ui.txt";

export async function drive({ page, log, shot, workspace, toasts }: UiContext): Promise<void> {
  // 1. Our activity-bar container (proof the extension's contributions are registered) → the view.
  const container = page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]');
  await container.waitFor({ timeout: 60_000 });
  await container.click();
  const executorRow = page.locator(`${VIEW} .monaco-list-row:has-text("bundled")`).first();
  await executorRow.waitFor({ timeout: 30_000 });
  log('Executors view lists:', JSON.stringify(await page.locator(`${VIEW} .monaco-list-row`).allInnerTexts()));
  await shot('executors-view');

  // 2. Command palette → Run Command on Executor… → type the command line.
  await runPaletteCommand(page, 'Exec Bridge: Run Command on Executor');
  const input = page.locator('.quick-input-widget input');
  await page.locator('.quick-input-widget .quick-input-title:has-text("Run Command on Executor")').waitFor({ timeout: 30_000 });
  // The "run" row appears once the extension has seen the typed text; type again if it does not.
  const offered = page.locator('.quick-input-list .monaco-list-row:has-text("retried")').first();
  for (let attempt = 1; ; attempt++) {
    await input.fill(COMMAND);
    if (
      await offered.waitFor({ timeout: 10_000 }).then(
        () => true,
        () => false,
      )
    )
      break;
    if (attempt === 3) throw new Error('the Run Command input never offered the typed command');
  }
  await shot('command-input');
  await page.keyboard.press('Enter');
  log('command submitted');

  // 3. The terminal streams the denied attempt; the approval notification names command and policy.
  const denied = await waitForTerminalText(page, /blocked this command/);
  log('terminal (denied):', JSON.stringify(denied.split('\n').filter(Boolean)));
  // Rows of the terminal, not lines: a long path wraps the message anywhere (seen: "Rea" / "d-only").
  if (!/Read-only file system/.test(denied.replace(/\n/g, ''))) throw new Error("the denied attempt's error output is missing");
  if (!toasts) log('smoke-test driver on: VS Code shows no toasts; reading the notification center');
  const notification = await notificationItem(page, ':has-text("blocked")', toasts, 15_000);
  const message = await notification.locator('.notification-list-item-message').innerText();
  log('notification:', JSON.stringify(message));
  if (!message.includes('workspace-write, network off') || !message.includes('retried')) {
    throw new Error(`the notification should name the sandbox policy and the command: ${message}`);
  }
  const buttons = await notification.locator('.monaco-button').allInnerTexts();
  log('buttons:', JSON.stringify(buttons));
  for (const b of ['Run Without Sandbox', 'Always Allow This Command', 'Deny']) {
    if (!buttons.includes(b)) throw new Error(`missing button ${b} in ${JSON.stringify(buttons)}`);
  }
  await shot('approval-notification');

  // 4. Run Without Sandbox → the retry runs in the same terminal and prints the marker.
  await notification.locator('.monaco-button:has-text("Run Without Sandbox")').click();
  const retried = await waitForTerminalText(page, /exit code 0 — press any key to close/);
  log('terminal (retried):', JSON.stringify(retried.split('\n').filter(Boolean)));
  if (!/re-running WITHOUT the sandbox/.test(retried) || !/^retried OK$/m.test(retried)) {
    throw new Error('the retried output is missing');
  }
  await shot('retried-output');

  // 5. The Executors view shows the executor, its state and the finished, unsandboxed run.
  const runRow = page.locator(`${VIEW} .monaco-list-row:has-text("retried")`).first();
  await runRow.waitFor({ timeout: 15_000 });
  const rows = await page.locator(`${VIEW} .monaco-list-row`).allInnerTexts();
  log('Executors view:', JSON.stringify(rows));
  const all = rows.join('\n');
  if (!/bundled/.test(all) || !/connected/.test(all) || !/exit code 0/.test(all) || !/unsandboxed/.test(all)) {
    throw new Error(`the Executors view should show bundled, connected, and the run: ${JSON.stringify(rows)}`);
  }
  await shot('executors-view-after');

  await mcpSandboxDenial({ page, log, shot, workspace, toasts });
  await shellDecorations(page, log, shot, workspace);
  await buildTaskProblems(page, log, shot, workspace);
  await executorFolderWorkspace(page, log, shot, workspace);
}

/** 6. New Executor Shell: bash with our integration marks commands; VS Code draws the decorations. */
async function shellDecorations(page: Page, log: UiContext['log'], shot: UiContext['shot'], workspace: string): Promise<void> {
  await runPaletteCommand(page, 'Exec Bridge: New Executor Shell');
  const terminal = page.locator('.terminal-wrapper.active .xterm, .terminal .xterm').last();
  await terminal.waitFor({ timeout: 30_000 });
  await waitForTerminalText(page, /\$ ?$|# ?$|> ?$/m, 30_000);
  await terminal.click();
  await page.keyboard.type('echo decorated by exec-bridge; true\n', { delay: 5 });
  await waitForTerminalText(page, /^decorated by exec-bridge$/m);
  await page.keyboard.type('ls /no/such/dir\n', { delay: 5 });
  await waitForTerminalText(page, /No such file or directory/);
  const ok = page.locator('.terminal-command-decoration.codicon-terminal-decoration-success');
  const err = page.locator('.terminal-command-decoration.codicon-terminal-decoration-error');
  // The gutter marks are in the DOM (xterm shows them on hover/scroll): attached is what counts.
  await ok.first().waitFor({ state: 'attached', timeout: 15_000 });
  await err.first().waitFor({ state: 'attached', timeout: 15_000 });
  log('shell decorations:', await ok.count(), 'success,', await err.count(), 'error');
  await shot('shell-integration');
  await terminalLink(page, log, shot, workspace, 'absolute');
  // The editor the link opened was closed: the shell gets the keyboard back without a click (a
  // click would leave the pointer on a row, see terminalLink).
  await runPaletteCommand(page, 'Terminal: Focus Terminal');
  await page.waitForFunction("document.activeElement?.classList.contains('xterm-helper-textarea') === true", undefined, {
    timeout: 10_000,
  });
  await terminalLink(page, log, shot, workspace, 'relative');
}

/**
 * 6b. A path printed in the shell is a link: Ctrl+click opens the file on the executor, at the line
 * and column printed after it.
 */
async function terminalLink(
  page: Page,
  log: UiContext['log'],
  shot: UiContext['shot'],
  workspace: string,
  how: 'absolute' | 'relative',
): Promise<void> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { dirname, join } = await import('node:path');
  const dir = join(dirname(workspace), 'linked');
  mkdirSync(dir, { recursive: true });
  // Relative: as a compiler prints it, against the shell's cwd (the workspace folder), which our
  // shell integration marks at every prompt.
  const file = how === 'absolute' ? join(dir, 'printed.txt') : '../linked/printed.txt';
  writeFileSync(join(dir, 'printed.txt'), 'first line\nsecond line, the target\n');
  // The command line names the path without the position: only the output row carries `:2:3`.
  // Keys typed right after the focus came back can be lost (seen: "ntf" for "printf"): the line
  // is cleared and typed again, a bounded number of times, until its output shows.
  for (let attempt = 1; ; attempt++) {
    // A lost quote leaves bash in a continuation line (its `> ` prompt), which Ctrl+U does not end: Ctrl+C does.
    if (attempt > 1) await page.keyboard.press('Control+C');
    // A clear screen (bash's Ctrl+L) leaves empty rows below the output for the pointer to come from.
    await page.keyboard.press('Control+L');
    await page.keyboard.press('Control+U');
    await page.keyboard.type(`printf '%s:%s\\n' ${file} 2:3\n`, { delay: 5 });
    const shown = await waitForTerminalText(page, new RegExp(`^${file}:2:3$`, 'm'), 10_000).then(
      () => true,
      (e: unknown) => (attempt === 3 ? Promise.reject(e) : false),
    );
    if (shown) break;
    log(`terminal link (${how}): the printf line did not run as typed (attempt ${attempt}); again`);
  }
  const row = page
    .locator('.terminal .xterm-rows > div')
    .filter({ hasText: new RegExp(`^${file}:2:3\\s*$`) })
    .last();
  const box = await row.boundingBox();
  if (!box) throw new Error('the printed path is not on screen');
  const at = { x: box.x + 30, y: box.y + box.height / 2 };
  // Arrive from another row, as a user's pointer does. xterm asks the link providers for a row
  // only when the pointer enters it from another row (it keeps the answers for the row it is on,
  // across a mouseleave too): the click that focused the terminal left the pointer on the row the
  // path was later printed on (1.100.3's layout puts it exactly there), and moving along that row
  // reuses the answer for the then-empty row: no link, our provider never asked. Come from an
  // empty row below: its (empty) answers are in at once, so none arrives late into the path row's
  // (a late answer for a row with text can put VS Code's own file link in place of ours).
  const rows = page.locator('.terminal-wrapper.active .xterm-rows > div');
  const texts = await rows.allTextContents();
  const pathRow = texts.findIndex((t) => t.replace(/\u00a0/g, ' ').trimEnd() === `${file}:2:3`);
  const empty = texts.findIndex((t, i) => i > pathRow && t.trim() === '');
  if (pathRow < 0 || empty < 0) throw new Error(`no empty row below the printed path: ${JSON.stringify(texts)}`);
  const emptyBox = await rows.nth(empty).boundingBox();
  if (!emptyBox) throw new Error('the empty row is not on screen');
  await page.mouse.move(at.x, emptyBox.y + emptyBox.height / 2);
  await page.mouse.move(at.x, at.y);
  // Our provider's link (tooltip "Open on bundled"), not VS Code's own file link, is the one there.
  const ours = page.locator('.workbench-hover:has-text("Open on bundled"), .monaco-hover:has-text("Open on bundled")');
  for (let attempt = 1; attempt <= 10 && (await ours.count()) === 0; attempt++) {
    await page.mouse.move(at.x + 2 * attempt, at.y);
    await page.waitForTimeout(500);
  }
  const hover = await page.locator('.workbench-hover, .monaco-hover').allInnerTexts();
  log('link hover:', JSON.stringify(hover));
  if ((await ours.count()) === 0) throw new Error(`the path is not our link (hover: ${JSON.stringify(hover)})`);
  await page.keyboard.down('Control');
  await page.mouse.click(at.x, at.y);
  await page.keyboard.up('Control');
  const tab = page.locator('.tabs-container .tab.active:has-text("printed.txt")');
  await tab.waitFor({ timeout: 15_000 });
  const title = (await tab.getAttribute('title')) ?? (await tab.getAttribute('aria-label')) ?? '';
  log(`link (${how}) opened:`, JSON.stringify(title));
  await page.locator('.statusbar-item:has-text("Ln 2, Col 3")').first().waitFor({ timeout: 10_000 });
  await shot(`terminal-link-${how}`);
  // Back to the shell for the steps after this one.
  await runPaletteCommand(page, 'View: Close Editor');
}

/** 7. An execBridge build task (Ctrl+Shift+B) whose tsc-style line lands in the Problems view. */
async function buildTaskProblems(page: Page, log: UiContext['log'], shot: UiContext['shot'], workspace: string): Promise<void> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  mkdirSync(join(workspace, 'src'), { recursive: true });
  writeFileSync(join(workspace, 'src', 'app.ts'), 'export const a = 1;\nexport const b = 2;\nconst n: number = "text";\n');
  // printf builds the line, so only the output (not the command line shown above it) matches $tsc.
  const command = `echo "compiling on $(hostname)"; printf '%s(%d,%d): error TS%d: %s\\n' src/app.ts 3 7 2322 "Type 'string' is not assignable to type 'number'."; exit 2`;
  writeFileSync(
    join(workspace, '.vscode', 'tasks.json'),
    JSON.stringify({
      version: '2.0.0',
      tasks: [
        {
          label: 'build on executor',
          type: 'execBridge',
          command,
          problemMatcher: '$tsc',
          group: { kind: 'build', isDefault: true },
        },
      ],
    }),
  );
  const problems = page.locator('.markers-panel .monaco-list-row:has-text("TS2322")');
  for (let attempt = 1; ; attempt++) {
    await runPaletteCommand(page, 'Tasks: Run Build Task');
    await page.waitForTimeout(500);
    await runPaletteCommand(page, 'View: Focus Problems');
    if (
      await problems
        .first()
        .waitFor({ timeout: 20_000 })
        .then(
          () => true,
          () => false,
        )
    )
      break;
    if (attempt === 3) throw new Error('the build task never put TS2322 in the Problems view');
  }
  log('problems:', JSON.stringify(await page.locator('.markers-panel .monaco-list-row').allInnerTexts()));
  await runPaletteCommand(page, 'Notifications: Clear All Notifications');
  // The problem opens the local file at the reported position, squiggle included.
  await problems.first().click();
  await page.locator('.editor-instance .squiggly-error').first().waitFor({ timeout: 15_000 });
  await shot('task-problems');
}

/** The Explorer's root folders (in a multi-root window), by their labels. */
async function explorerRoots(page: Page): Promise<string[]> {
  return (await page.locator('.explorer-folders-view .monaco-list-row[aria-level="1"]').allTextContents()).map((t) => t.trim());
}

/** Waits for the Explorer to list `wanted` roots and, under the executor root, `inside.txt`. */
async function waitForFolders(page: Page, log: UiContext['log'], wanted: RegExp[], what: string): Promise<string[]> {
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
  await runPaletteCommand(page, 'View: Show Explorer');
  const deadline = Date.now() + 90_000;
  let roots: string[] = [];
  while (Date.now() < deadline) {
    // Our repair of a window that came up without the file's folders rewrites the workspace file,
    // and VS Code then loads the window again (seen once in CI on 1.139.1): wait for the new one.
    roots = await explorerRoots(page).catch(async (e: unknown) => {
      if (!/Execution context was destroyed|navigat/i.test(String(e))) throw e;
      log(`${what}: the window loaded again (the workspace file was rewritten); waiting for it`);
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      await runPaletteCommand(page, 'View: Show Explorer');
      return [];
    });
    if (wanted.every((w) => roots.some((r) => w.test(r)))) break;
    await page.waitForTimeout(250);
  }
  if (!wanted.every((w) => roots.some((r) => w.test(r)))) throw new Error(`${what}: the Explorer lists ${JSON.stringify(roots)}`);
  const root = page.locator('.explorer-folders-view .monaco-list-row[aria-level="1"]:has-text("bundled:")').first();
  const inside = page.locator('.explorer-folders-view .monaco-list-row[aria-level="2"]:has-text("inside.txt")').first();
  // VS Code expands a new workspace's roots once, at load; on 1.139.1 that first expansion of the
  // execbridge: root sometimes fails silently (the workbench resolves it before the remote extension
  // host has registered our provider: "ENOPRO" in the console) and the root stays collapsed. A user
  // clicks it (collapse and expand again if it shows nothing); so does this step, a bounded number
  // of times, and says how many it took.
  for (let attempt = 1; ; attempt++) {
    const expanded = (await root.getAttribute('aria-expanded')) === 'true';
    if (!expanded) await root.click();
    else if (attempt > 1) {
      await root.click();
      await root.click();
    }
    const shown = await inside.waitFor({ timeout: attempt === 1 ? 30_000 : 10_000 }).then(
      () => true,
      () => false,
    );
    if (shown) break;
    if (attempt === 4) throw new Error(`${what}: the executor folder's files never showed in the Explorer`);
    log(`${what}: the executor folder did not expand (attempt ${attempt}); again`);
  }
  return roots;
}

/**
 * 8. Open Executor Folder… in this single-folder window: without a question it reopens as a
 * workspace file (named "<folder> + <executor folder>", spaces and '+' in the URL) of the local
 * folder and the executor folder; reopening that workspace shows both, every time.
 */
async function executorFolderWorkspace(page: Page, log: UiContext['log'], shot: UiContext['shot'], workspace: string): Promise<void> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { basename, dirname, join } = await import('node:path');
  const dir = join(dirname(workspace), 'executor folder');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'inside.txt'), 'on the executor\n');
  const local = new RegExp(`^${basename(workspace)}$`, 'i');
  const remote = /^bundled: .*executor folder$/;
  // Leaving the page can make VS Code's web workbench ask "Leave site?" (beforeunload; seen in 3 of
  // 8 page.goto reopens of such a workspace); a user answers Leave. Playwright's default answer is
  // Stay, which cancels the reopen and leaves the old window: answer as the user does.
  let prompts = 0;
  const onDialog = (d: Dialog) => {
    if (d.type() !== 'beforeunload') return void d.dismiss();
    prompts++;
    void d.accept();
  };
  page.on('dialog', onDialog);
  try {
    // The shells of the steps before end here (the window reopens).
    await runPaletteCommand(page, 'Terminal: Kill All Terminals');
    await runPaletteCommand(page, 'Exec Bridge: Open Executor Folder');
    const input = page.locator('.quick-input-widget input');
    await page.locator('.quick-input-widget .quick-input-title:has-text("Open Executor Folder")').waitFor({ timeout: 30_000 });
    await input.fill(dir);
    await Promise.all([page.waitForURL(/[?&]workspace=/, { timeout: 60_000 }), page.keyboard.press('Enter')]);
    const file = new URL(page.url()).searchParams.get('workspace') ?? '';
    log('Open Executor Folder: the window reopened as', JSON.stringify(file));
    if (!/ \+ bundled-executor folder-[0-9a-f]{8}\.code-workspace$/.test(file)) throw new Error(`unexpected workspace file ${file}`);
    log('roots:', JSON.stringify(await waitForFolders(page, log, [local, remote], 'after Open Executor Folder')));
    await shot('executor-folder-added');
    const reopens = 6;
    for (let i = 1; i <= reopens; i++) {
      await page.reload({ waitUntil: 'domcontentloaded' });
      await waitForFolders(page, log, [local, remote], `reopen ${i} of ${file}`);
    }
    log(`the workspace reopened ${reopens} times with both folders (VS Code asked "Leave site?" ${prompts} times)`);
    await shot('executor-folder-reopened');
  } finally {
    page.off('dialog', onDialog);
  }
}
