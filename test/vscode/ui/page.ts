// What the Playwright stages (workbench.ui.ts, reload.ui.ts) do to a workbench page.
import type { Locator, Page } from 'playwright-core';

/**
 * The terminal's text: the DOM renderer's rows (terminal.integrated.gpuAcceleration is off in the
 * test profile). `activeOnly`: the active terminal's rows when there is one (others, e.g. a local
 * bash VS Code restores by itself after a reload, stay out).
 */
export async function terminalText(page: Page, activeOnly = false): Promise<string> {
  const active = page.locator('.terminal-wrapper.active .xterm-rows > div');
  const rows =
    activeOnly && (await active.count()) > 0
      ? await active.allTextContents()
      : await page.locator('.terminal .xterm-rows > div').allTextContents();
  return rows.map((r) => r.replace(/\u00a0/g, ' ').trimEnd()).join('\n');
}

export async function waitForTerminalText(page: Page, pattern: RegExp, timeoutMs = 60_000, activeOnly = false): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = '';
  while (Date.now() < deadline) {
    text = await terminalText(page, activeOnly);
    if (pattern.test(text)) return text;
    await page.waitForTimeout(150);
  }
  throw new Error(`terminal never showed ${pattern}; it shows:\n${text}`);
}

export async function runPaletteCommand(page: Page, title: string): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  const row = page.locator(`.quick-input-list .monaco-list-row:has-text("${title}")`).first();
  // Commands guarded by `isWorkspaceTrusted` stay out of the palette until the web workbench has
  // resolved the trust state, which can lag the first seconds after load: reopen the palette a
  // few times (bounded) rather than wait on a list that was filtered before the key was set.
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ timeout: 5_000 });
      break;
    } catch (e) {
      if (attempt >= 6) throw e;
      await page.keyboard.press('Escape');
    }
  }
  await page.keyboard.press('Enter');
}

/**
 * The notification whose item matches `filter` (a selector suffix, e.g. `:has-text("blocked")`): a
 * toast where the workbench shows toasts, else in the notification center. With the smoke-test
 * driver on (the newest target needs it for ?payload=, see scripts/codeServer.mjs) VS Code shows no
 * toasts at all. Which of the two is the harness's to say (`toasts`, from how it started
 * code-server), not the page's: `globalThis.driver` appears only a while after a reload, and probing
 * it there raced the workbench's start (the reload stage run alone failed on 1.139.1).
 */
export async function notificationItem(page: Page, filter: string, toasts: boolean, timeoutMs: number): Promise<Locator> {
  if (!toasts) await runPaletteCommand(page, 'Notifications: Show Notifications');
  const item = page.locator(`${toasts ? '.notification-toast' : '.notifications-center'} .notification-list-item${filter}`).first();
  await item.waitFor({ timeout: timeoutMs });
  return item;
}
