// A sandboxed MCP server's denials as the user sees them (issue 23 item 2; README's picture
// media/screenshots/mcp-sandbox-denial.png): a `.vscode/mcp.json` server in `workspace-write` with
// a managed network that allows one loopback port.
// - Call MCP Tool from the palette fetches another port: the notification names the server, the
//   sandbox and the host with "Allow 127.0.0.1:PORT for This Server", and the MCP Servers tree shows
//   the blocked line. Clicking Allow writes the port into mcp.json, the server restarts, and the
//   same call gets through.
// - It writes a file outside its workspace: "Allow Writing DIR" in the notification, the tree's
//   blocked line; clicking it writes the folder into `writable`, the server restarts, the same
//   write lands.
// Called from the UI stage (workbench.ui.ts) in its window.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { notificationItem, runPaletteCommand } from './page';

export interface McpSandboxContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
  /** Whether this workbench shows notification toasts (not with the smoke-test driver on). */
  toasts: boolean;
}

const FIXTURE = join(__dirname, '..', '..', 'helpers', 'mcpSandboxServer.js');
const SERVER = 'fetcher';
const VIEW = '[id="workbench.view.extension.execBridge"]';

function listen(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_q, r) => r.end(`${body}\n`));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

/** The notification of the server's block that says `what`. */
function blockedNotification(page: Page, what: string, toasts: boolean): Promise<Locator> {
  return notificationItem(page, `:has-text('for MCP server "${SERVER}"'):has-text(${JSON.stringify(what)})`, toasts, 30_000);
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

/** A screenshot with the palette gone and the sidebar wide enough for the tree's lines (README's picture is one). */
async function picture({ page, log, shot }: Pick<McpSandboxContext, 'page' | 'log' | 'shot'>, name: string): Promise<void> {
  await page
    .locator('.quick-input-widget')
    .waitFor({ state: 'hidden', timeout: 5_000 })
    .catch(() => undefined);
  const widened = await widenSidebar(page, 220);
  log(`sidebar widened by ${widened} px for the picture`);
  await shot(name);
  await widenSidebar(page, -widened);
}

/** Palette → Call MCP Tool… → `tool` → the arguments; resolves once the result editor shows `expect`. */
async function callTool(page: Page, tool: string, args: Record<string, unknown>, expect: RegExp): Promise<string> {
  await runPaletteCommand(page, 'Exec Bridge: Call MCP Tool');
  const input = page.locator('.quick-input-widget input');
  await page.locator(`.quick-input-widget .quick-input-title:has-text("Call Tool on ${SERVER}")`).waitFor({ timeout: 30_000 });
  await input.fill(tool);
  await page.locator(`.quick-input-list .monaco-list-row:has-text("${tool}")`).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator(`.quick-input-widget .quick-input-title:has-text("Call ${tool} on ${SERVER}")`).waitFor({ timeout: 10_000 });
  await input.fill(JSON.stringify(args));
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

/** Waits (bounded) until mcp.json's entry for the server satisfies `check`; returns that entry's executorSandbox. */
async function waitForSandboxInMcpJson(
  page: Page,
  mcpJson: string,
  what: string,
  check: (sandbox: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = readFileSync(mcpJson, 'utf8');
    let sandbox: Record<string, unknown> | undefined;
    try {
      sandbox = (JSON.parse(text) as { servers: Record<string, { executorSandbox?: Record<string, unknown> }> }).servers[SERVER]
        ?.executorSandbox;
    } catch {
      // read while it is being written: not yet
    }
    if (sandbox && check(sandbox)) return sandbox;
    if (Date.now() > deadline) throw new Error(`Allow wrote no ${what} into mcp.json:\n${text}`);
    await page.waitForTimeout(100);
  }
}

/** The server is Ready again with nothing blocked (it restarted with what Allow wrote). */
async function restartedClean(page: Page, blockedRow: Locator): Promise<void> {
  await blockedRow.waitFor({ state: 'detached', timeout: 60_000 });
  await page
    .locator(`${VIEW} .monaco-list-row:has-text("${SERVER}"):has-text("Ready"):not(:has-text("blocked"))`)
    .waitFor({ timeout: 60_000 });
}

/** The server's blocked line in the tree (expanding the server's row if it is collapsed). */
async function blockedLine(page: Page, label: string): Promise<Locator> {
  await page.locator(`${VIEW} .monaco-list-row:has-text("${SERVER}"):has-text("1 blocked")`).waitFor({ timeout: 15_000 });
  const row = serverRow(page);
  if ((await row.getAttribute('aria-expanded')) !== 'true') await row.locator('.monaco-tl-twistie').click();
  const blocked = page.locator(`${VIEW} .monaco-list-row:has-text(${JSON.stringify(label)})`).first();
  await blocked.waitFor({ timeout: 15_000 });
  return blocked;
}

export async function mcpSandboxDenial(ctx: McpSandboxContext): Promise<void> {
  const { page, log, workspace } = ctx;
  const allowed = await listen('allowed-body');
  const other = await listen('other-body');
  const mcpJson = join(workspace, '.vscode', 'mcp.json');
  // Outside the workspace (and not under /tmp, which workspace-write may write): the run's folder.
  const outside = join(dirname(workspace), 'mcp-outside');
  try {
    mkdirSync(join(workspace, '.vscode'), { recursive: true });
    mkdirSync(outside, { recursive: true });
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
    await allowHost(ctx, mcpJson, `127.0.0.1:${allowed.port}`, `127.0.0.1:${other.port}`);
    await allowWriting(ctx, mcpJson, outside);
  } finally {
    // The server drains with its file; the editors of the results go.
    rmSync(mcpJson, { force: true });
    rmSync(outside, { recursive: true, force: true });
    allowed.server.close();
    other.server.close();
  }
  await runPaletteCommand(page, 'View: Close All Editors');
}

/** A fetch of `target` (off the allow-list, which has `first`): blocked; the picture; Allow HOST; the fetch gets through. */
async function allowHost({ page, log, shot, toasts }: McpSandboxContext, mcpJson: string, first: string, target: string): Promise<void> {
  const refused = await callTool(page, 'fetch', { url: `http://${target}/` }, /status 403/);
  log('refused call:', JSON.stringify(refused.split('\n').filter(Boolean).slice(0, 6)));

  // The tree: "sandboxed, 1 blocked" and, under the server, the blocked line with its inline Allow.
  const blockedRow = await blockedLine(page, `blocked ${target}`);
  log('blocked line:', JSON.stringify(await blockedRow.innerText()));

  const notification = await blockedNotification(page, `blocked ${target}`, toasts);
  const message = await notification.locator('.notification-list-item-message').innerText();
  log('notification:', JSON.stringify(message));
  if (!message.includes(`blocked ${target}`) || !message.includes('workspace-write, network only'))
    throw new Error(`the notification should name the host and the sandbox: ${message}`);
  const allow = `Allow ${target} for This Server`;
  const buttons = await notification.locator('.monaco-button').allInnerTexts();
  if (!buttons.includes(allow)) throw new Error(`no "${allow}" in ${JSON.stringify(buttons)}`);
  // The picture: the earlier steps' terminal panel away, the sidebar wide enough for the tree's lines.
  await runPaletteCommand(page, 'View: Hide Panel').catch((e: unknown) => log('could not hide the panel:', String(e)));
  // The newest VS Code opens its Chat in the secondary side bar: the editor gets its room.
  if (await page.locator('.part.auxiliarybar').isVisible())
    await runPaletteCommand(page, 'View: Hide Secondary Side Bar').catch((e: unknown) => log('could not hide the Chat:', String(e)));
  await picture({ page, log, shot }, 'mcp-sandbox-denial');

  // Allow: the port lands in mcp.json (after what was there), the server restarts, and the same call gets through.
  await notification.locator('.monaco-button', { hasText: allow }).click();
  const written = await waitForSandboxInMcpJson(page, mcpJson, target, (sb) => (sb['networkAllow'] as string[]).includes(target));
  if (JSON.stringify(written['networkAllow']) !== JSON.stringify([first, target]))
    throw new Error(`networkAllow should be ${JSON.stringify([first, target])}: ${JSON.stringify(written)}`);
  await restartedClean(page, blockedRow);
  const now = await callTool(page, 'fetch', { url: `http://${target}/` }, /status 200: other-body/);
  log('after Allow:', JSON.stringify(now.split('\n').filter(Boolean).slice(0, 6)));
  await shot('mcp-sandbox-allowed');
}

/** A write into `outside` (not writable): blocked; Allow Writing DIR; the same write lands. */
async function allowWriting({ page, log, shot, toasts }: McpSandboxContext, mcpJson: string, outside: string): Promise<void> {
  const file = join(outside, 'note.txt');
  const refused = await callTool(page, 'write', { path: file }, /read-only file system|EROFS/i);
  log('refused write:', JSON.stringify(refused.split('\n').filter(Boolean).slice(0, 6)));
  if (existsSync(file)) throw new Error(`${file} was written by a blocked write`);

  const blockedRow = await blockedLine(page, `blocked writing ${file}`);
  log('blocked line:', JSON.stringify(await blockedRow.innerText()));
  const notification = await blockedNotification(page, `blocked writing ${file}`, toasts);
  const message = await notification.locator('.notification-list-item-message').innerText();
  log('notification:', JSON.stringify(message));
  const allow = `Allow Writing ${outside}`;
  const buttons = await notification.locator('.monaco-button').allInnerTexts();
  if (!buttons.includes(allow)) throw new Error(`no "${allow}" in ${JSON.stringify(buttons)}`);
  await picture({ page, log, shot }, 'mcp-sandbox-write-denial');

  // Allow Writing: the folder lands in `writable` (the network list stays), the server restarts, the write lands.
  await notification.locator('.monaco-button', { hasText: allow }).click();
  const written = await waitForSandboxInMcpJson(page, mcpJson, outside, (sb) => Array.isArray(sb['writable']));
  if (JSON.stringify(written['writable']) !== JSON.stringify([outside]) || (written['networkAllow'] as string[]).length !== 2)
    throw new Error(`writable should be [${outside}] beside the two hosts: ${JSON.stringify(written)}`);
  await restartedClean(page, blockedRow);
  const now = await callTool(page, 'write', { path: file }, /wrote /);
  log('after Allow Writing:', JSON.stringify(now.split('\n').filter(Boolean).slice(0, 6)));
  if (readFileSync(file, 'utf8') !== 'x') throw new Error(`the write after Allow did not land in ${file}`);
  await shot('mcp-sandbox-write-allowed');
}
