import type { Page } from 'playwright-core';

export interface UiContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
}

export async function drive({ page, log, shot }: UiContext): Promise<void> {
  await page.waitForSelector('.activitybar .action-item a[aria-label^="Exec Bridge"]', { timeout: 30_000 });
  log('activity bar shows Exec Bridge');
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type('Exec Bridge: Show Log');
  await page.waitForSelector('.quick-input-list .monaco-list-row:has-text("Exec Bridge: Show Log")');
  log('palette shows our command');
  await shot('palette');
}
