// What the Playwright stages (workbench.ui.ts, reload.ui.ts) do to a workbench page.
import type { Page } from 'playwright-core';

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
