// The reload stage: a real "Developer: Reload Window" in the real workbench (code-server in
// chromium), in a window of its own folder. Loaded by scripts/vscode-test.mjs after the UI test.
// A running command's terminal and an interactive shell survive the reload with their output
// complete (then go on live); an MCP server runs once before and once after, never twice, and the
// one from before does not outlive the reload. It logs how long the terminals took to come back.
import type { Page } from 'playwright-core';
import { runPaletteCommand, waitForTerminalText as waitForText } from './page';

export interface ReloadContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
}

/** The active terminal's text only (after a reload VS Code may restore a local bash of its own). */
const waitForTerminalText = (page: Page, pattern: RegExp, timeoutMs = 60_000) => waitForText(page, pattern, timeoutMs, true);

export async function drive({ page, log, shot, workspace }: ReloadContext): Promise<void> {
  const container = page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]');
  await container.waitFor({ timeout: 60_000 });
  await reloadKeepsTerminals(page, log, shot, workspace);
}
/** Live processes whose environment carries `MCP_TEST_TAG=<tag>` (an MCP server and its reaper wrapper). */
async function tagged(tag: string): Promise<number[]> {
  const { readdirSync, readFileSync } = await import('node:fs');
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${name}/environ`, 'latin1').includes(`MCP_TEST_TAG=${tag}\0`)) out.push(Number(name));
    } catch {
      // gone or not ours
    }
  }
  return out;
}

/** Waits (bounded) for `probe` to return something; polls every 100 ms. */
async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const SHELL_TITLE = 'bash · bundled';

/**
 * Shows the terminal whose tab title contains `title` (the tabs list is there with two or more
 * terminals). With `shows`, until the active terminal's text matches: after a reload the extension
 * shows the last terminal it reopened (`show(true)`), which can land after our click and make
 * another one active again (seen in CI: the shell shown while the test waited for the command's
 * lines), so the click is repeated (bounded) until this one is active.
 */
async function showTerminal(page: Page, title: string, shows?: RegExp): Promise<void> {
  const tab = page.locator('.tabs-list .monaco-list-row', { hasText: title }).first();
  await tab.waitFor({ timeout: 30_000 });
  for (let attempt = 1; ; attempt++) {
    await tab.click();
    if (!shows) return;
    try {
      // A few short tries, then the last one waits as long as the output may take.
      await waitForTerminalText(page, shows, attempt < 5 ? 3_000 : 45_000);
      return;
    } catch (e) {
      if (attempt >= 5) throw e;
    }
  }
}

/**
 * "Developer: Reload Window" keeps every terminal: a running command's terminal and an
 * interactive shell come back with the same title and their whole output, then continue live; an
 * MCP server (autoStart, from .vscode/mcp.json) runs once before and once after, never twice, and
 * the one from before the reload does not outlive it.
 */
async function reloadKeepsTerminals(page: Page, log: ReloadContext['log'], shot: ReloadContext['shot'], workspace: string): Promise<void> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  const tag = `ui-reload-${process.pid}-${Date.now()}`;
  const serverMemory = join(
    __dirname,
    '..',
    '..',
    '..',
    '..',
    'node_modules',
    '@modelcontextprotocol',
    'server-memory',
    'dist',
    'index.js',
  );
  writeFileSync(
    join(workspace, '.vscode', 'mcp.json'),
    JSON.stringify({
      servers: {
        memory: {
          type: 'stdio',
          command: process.execPath,
          args: [serverMemory],
          env: { MCP_TEST_TAG: tag, MEMORY_FILE_PATH: join(workspace, '.vscode', 'memory.jsonl') },
          autoStart: true,
        },
      },
    }),
  );
  const mcpBefore = await poll(
    'the MCP server and its wrapper',
    async () => ((await tagged(tag)).length === 2 ? tagged(tag) : undefined),
    60_000,
  );
  log('MCP server before the reload:', JSON.stringify(mcpBefore));

  // A command that runs through the reload (12 lines, one every 0.7 s), and a shell.
  const command = 'for i in $(seq 1 12); do echo "reload-line-$i"; sleep 0.7; done; echo reload-done';
  await runPaletteCommand(page, 'Exec Bridge: Run Command on Executor');
  const input = page.locator('.quick-input-widget input');
  await page.locator('.quick-input-widget .quick-input-title:has-text("Run Command on Executor")').waitFor({ timeout: 30_000 });
  await input.fill(command);
  await page.locator('.quick-input-list .monaco-list-row:has-text("reload-line")').first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await waitForTerminalText(page, /^reload-line-1$/m, 30_000);
  await runPaletteCommand(page, 'Exec Bridge: New Executor Shell');
  // Ours by its title (`bash · bundled`): VS Code may have a local bash terminal of its own too.
  await showTerminal(page, SHELL_TITLE);
  await waitForTerminalText(page, /\$ ?$|# ?$|> ?$/m, 30_000);
  await page.locator('.terminal-wrapper.active .xterm, .terminal .xterm').last().click();
  await page.keyboard.type('echo "shell-before-$((40+2))"\n', { delay: 5 });
  await waitForTerminalText(page, /^shell-before-42$/m);
  await showTerminal(page, 'seq 1 12');
  await waitForTerminalText(page, /^reload-line-3$/m, 30_000);
  await shot('before-reload');

  // Reload; count the MCP server's processes all along (never more than one server + wrapper).
  let most = 0;
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      most = Math.max(most, (await tagged(tag)).length);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const t0 = Date.now();
  await runPaletteCommand(page, 'Developer: Reload Window');
  await page.waitForEvent('framenavigated', { timeout: 60_000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
  await page.locator('.tabs-list .monaco-list-row', { hasText: 'seq 1 12' }).first().waitFor({ timeout: 60_000 });
  // Text of the command's own (the shell's reopened terminal has the same notices).
  await showTerminal(page, 'seq 1 12', /^\$ for i in|^reload-line-\d+$/m);
  await waitForTerminalText(page, /^reload-line-1$/m, 60_000);
  const backMs = Date.now() - t0;
  log(`terminals back with their output ${backMs} ms after "Reload Window"`);
  await shot('after-reload');

  // The command: every line once, in order, and its end, live.
  const text = await waitForTerminalText(page, /exit code 0 — press any key to close/, 60_000);
  const lines = text.split('\n').filter((l) => /^reload-(line-\d+|done)$/.test(l));
  const expected = [...Array.from({ length: 12 }, (_, i) => `reload-line-${i + 1}`), 'reload-done'];
  if (JSON.stringify(lines) !== JSON.stringify(expected)) {
    throw new Error(`the reopened terminal's output is not complete: ${JSON.stringify(lines)}\n${text}`);
  }
  if (!/reopened after the window reload/.test(text)) throw new Error(`no reopen notice in:\n${text}`);

  // The shell: its output from before, and it takes input.
  await showTerminal(page, SHELL_TITLE);
  await waitForTerminalText(page, /^shell-before-42$/m, 30_000);
  await page.locator('.terminal-wrapper.active .xterm, .terminal .xterm').last().click();
  await page.keyboard.type('echo "shell-after-$((50+3))"\n', { delay: 5 });
  const shellText = await waitForTerminalText(page, /^shell-after-53$/m);
  if ((shellText.match(/^shell-before-42$/gm) ?? []).length !== 1) throw new Error(`the shell's output is duplicated:\n${shellText}`);
  await shot('shell-after-reload');

  // The MCP server: one again, restarted, and the one from before is gone.
  const mcpAfter = await poll(
    'the MCP server after the reload',
    async () => {
      const now = await tagged(tag);
      return now.length === 2 && !now.some((p) => mcpBefore.includes(p)) ? now : undefined;
    },
    60_000,
  );
  watching = false;
  await watcher;
  log('MCP server after the reload:', JSON.stringify(mcpAfter), `(at most ${most} processes at once)`);
  if (most > 2) throw new Error(`the MCP server ran twice across the reload (${most} processes at once)`);
}
