// A sandboxed MCP server's denial as the user sees it (issue 23 item 2; README's picture
// docs/images/mcp-sandbox-denial.png): a `.vscode/mcp.json` server in `workspace-write` with a
// managed network that allows one loopback port; Call MCP Tool from the palette fetches another
// one; the notification names the server and the sandbox with "Allow 127.0.0.1:PORT for This
// Server", and the MCP Servers tree shows the blocked line. Clicking Allow writes the port into
// mcp.json, the server restarts, and the same call gets through. Called from the UI stage
// (workbench.ui.ts) in its window.
import { readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { runPaletteCommand } from './page';

export interface McpSandboxContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
}

const FIXTURE = join(__dirname, '..', '..', 'helpers', 'mcpSandboxServer.js');
const SERVER = 'fetcher';
const VIEW = '[id="workbench.view.extension.execBridge"]';

function listen(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_q, r) => r.end(`${body}\n`));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

/** The notification about the server: a toast, or with the smoke-test driver on (no toasts), in the notification center. */
async function blockedNotification(page: Page): Promise<Locator> {
  const filter = `:has-text('for MCP server "${SERVER}"')`;
  if (await page.evaluate(() => 'driver' in globalThis)) {
    await runPaletteCommand(page, 'Notifications: Show Notifications');
    const item = page.locator(`.notifications-center .notification-list-item${filter}`).first();
    await item.waitFor({ timeout: 30_000 });
    return item;
  }
  const toast = page.locator(`.notification-toast .notification-list-item${filter}`).first();
  await toast.waitFor({ timeout: 30_000 });
  return toast;
}

/** The server's row in the MCP Servers view. */
const serverRow = (page: Page) => page.locator(`${VIEW} .monaco-list-row[aria-level="1"]:has-text("${SERVER}")`).first();

/** Drags the sidebar's edge by `dx` pixels; returns how much wider it became (0 when there was nothing to drag). */
async function widenSidebar(page: Page, dx: number): Promise<number> {
  const box = await page.locator('.part.sidebar').boundingBox();
  if (!box || dx === 0) return 0;
  const edge = box.x + box.width;
  const y = box.y + box.height / 2;
  await page.mouse.move(edge, y);
  await page.mouse.down();
  await page.mouse.move(edge + dx, y, { steps: 10 });
  await page.mouse.up();
  // Off the edge, which stays highlighted under the pointer.
  await page.mouse.move(edge + dx + 300, y);
  return ((await page.locator('.part.sidebar').boundingBox())?.width ?? box.width) - box.width;
}

/** Palette → Call MCP Tool… → `fetch` → the arguments; resolves once the result editor shows `expect`. */
async function callFetch(page: Page, url: string, expect: RegExp): Promise<string> {
  await runPaletteCommand(page, 'Exec Bridge: Call MCP Tool');
  const input = page.locator('.quick-input-widget input');
  await page.locator(`.quick-input-widget .quick-input-title:has-text("Call Tool on ${SERVER}")`).waitFor({ timeout: 30_000 });
  await input.fill('fetch');
  await page.locator('.quick-input-list .monaco-list-row:has-text("fetch")').first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator(`.quick-input-widget .quick-input-title:has-text("Call fetch on ${SERVER}")`).waitFor({ timeout: 10_000 });
  await input.fill(JSON.stringify({ url }));
  await page.keyboard.press('Enter');
  const editor = page.locator('.editor-instance .view-lines').first();
  const deadline = Date.now() + 30_000;
  let text = '';
  while (Date.now() < deadline) {
    text = (await editor.innerText().catch(() => '')).replace(/\u00a0/g, ' ');
    if (expect.test(text)) return text;
    await page.waitForTimeout(150);
  }
  throw new Error(`the result editor never showed ${expect}; it shows:\n${text}`);
}

export async function mcpSandboxDenial({ page, log, shot, workspace }: McpSandboxContext): Promise<void> {
  const allowed = await listen('allowed-body');
  const other = await listen('other-body');
  const mcpJson = join(workspace, '.vscode', 'mcp.json');
  try {
    mkdirSync(join(workspace, '.vscode'), { recursive: true });
    const sandbox = { policy: 'workspace-write', networkAllow: [`127.0.0.1:${allowed.port}`] };
    writeFileSync(
      mcpJson,
      JSON.stringify(
        { servers: { [SERVER]: { command: process.execPath, args: [FIXTURE], executorSandbox: sandbox, autoStart: true } } },
        null,
        2,
      ),
    );
    // The MCP Servers view: the server starts by itself (autoStart), sandboxed.
    const row = serverRow(page);
    await row.waitFor({ timeout: 60_000 });
    await page
      .locator(`${VIEW} .monaco-list-row:has-text("${SERVER}"):has-text("Ready"):has-text("sandboxed")`)
      .waitFor({ timeout: 60_000 });
    log('MCP Servers:', JSON.stringify(await row.innerText()));

    const target = `127.0.0.1:${other.port}`;
    const refused = await callFetch(page, `http://${target}/`, /status 403/);
    log('refused call:', JSON.stringify(refused.split('\n').filter(Boolean).slice(0, 6)));

    // The tree: "sandboxed, 1 blocked" and, under the server, the blocked line with its inline Allow.
    await page.locator(`${VIEW} .monaco-list-row:has-text("${SERVER}"):has-text("1 blocked")`).waitFor({ timeout: 15_000 });
    if ((await row.getAttribute('aria-expanded')) !== 'true') await row.locator('.monaco-tl-twistie').click();
    const blockedRow = page.locator(`${VIEW} .monaco-list-row:has-text("blocked ${target}")`).first();
    await blockedRow.waitFor({ timeout: 15_000 });
    log('blocked line:', JSON.stringify(await blockedRow.innerText()));

    const notification = await blockedNotification(page);
    const message = await notification.locator('.notification-list-item-message').innerText();
    log('notification:', JSON.stringify(message));
    if (!message.includes(`blocked ${target}`) || !message.includes('workspace-write, network only'))
      throw new Error(`the notification should name the host and the sandbox: ${message}`);
    const allow = `Allow ${target} for This Server`;
    const buttons = await notification.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes(allow)) throw new Error(`no "${allow}" in ${JSON.stringify(buttons)}`);
    await page
      .locator('.quick-input-widget')
      .waitFor({ state: 'hidden', timeout: 5_000 })
      .catch(() => undefined);
    // The picture: the earlier steps' terminal panel away, the sidebar wide enough for the tree's lines.
    await runPaletteCommand(page, 'View: Hide Panel').catch((e: unknown) => log('could not hide the panel:', String(e)));
    // The newest VS Code opens its Chat in the secondary side bar: the editor gets its room.
    if (await page.locator('.part.auxiliarybar').isVisible())
      await runPaletteCommand(page, 'View: Hide Secondary Side Bar').catch((e: unknown) => log('could not hide the Chat:', String(e)));
    const widened = await widenSidebar(page, 220);
    log(`sidebar widened by ${widened} px for the picture`);
    await shot('mcp-sandbox-denial');
    await widenSidebar(page, -widened);

    // Allow: the port lands in mcp.json, the server restarts, and the same call gets through.
    await notification.locator('.monaco-button', { hasText: allow }).click();
    const deadline = Date.now() + 30_000;
    while (!readFileSync(mcpJson, 'utf8').includes(`"${target}"`)) {
      if (Date.now() > deadline) throw new Error(`Allow wrote nothing into mcp.json:\n${readFileSync(mcpJson, 'utf8')}`);
      await page.waitForTimeout(100);
    }
    await blockedRow.waitFor({ state: 'detached', timeout: 60_000 });
    await page
      .locator(`${VIEW} .monaco-list-row:has-text("${SERVER}"):has-text("Ready"):not(:has-text("blocked"))`)
      .waitFor({ timeout: 60_000 });
    const now = await callFetch(page, `http://${target}/`, /status 200: other-body/);
    log('after Allow:', JSON.stringify(now.split('\n').filter(Boolean).slice(0, 6)));
    await shot('mcp-sandbox-allowed');
  } finally {
    // The server drains with its file; the editors of the results go.
    rmSync(mcpJson, { force: true });
    allowed.server.close();
    other.server.close();
  }
  await runPaletteCommand(page, 'View: Close All Editors');
}
