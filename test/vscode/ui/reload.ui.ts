// The reload stage: a real "Developer: Reload Window" in the real workbench (code-server in
// chromium), in a window of its own folder. Loaded by scripts/vscode-test.mjs after the UI test.
// A running command's terminal and an interactive shell survive the reload with their output
// complete (then go on live); an MCP server runs once before and once after, never twice, and the
// one from before does not outlive the reload. It logs how long the terminals took to come back.
import type { Page } from 'playwright-core';
import { FaultProxy } from '../../helpers/faultProxy';
import { startSshd, type Sshd } from '../../helpers/sshd';
import { agentWorkSurvivesReload } from './agentReload.ui';
import { runPaletteCommand, waitForTerminalText as waitForText } from './page';

export interface ReloadContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
  /** Whether this workbench shows notification toasts (not with the smoke-test driver on). */
  toasts: boolean;
}

/** The active terminal's text only (after a reload VS Code may restore a local bash of its own). */
const waitForTerminalText = (page: Page, pattern: RegExp, timeoutMs = 60_000) => waitForText(page, pattern, timeoutMs, true);

export async function drive({ page, log, shot, workspace, toasts }: ReloadContext): Promise<void> {
  const container = page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]');
  await container.waitFor({ timeout: 60_000 });
  await reloadKeepsTerminals(page, log, shot, workspace);
  await noLocalShellOfItsOwn(page, log, 'after the reload');
  // A model's background process and a running task through a second real reload (./agentReload.ui.ts).
  await agentWorkSurvivesReload({ page, log, shot, workspace, toasts });
  await noLocalShellOfItsOwn(page, log, 'after the second reload');
}

/**
 * Issue 24 item 8: the local shell VS Code opens at startup for want of ours (the panel was open,
 * none of its own to revive) is closed once ours are back: every tab is one of ours (`… · bundled`).
 */
async function noLocalShellOfItsOwn(page: Page, log: ReloadContext['log'], when: string): Promise<void> {
  const tabs = async () => (await page.locator('.tabs-list .monaco-list-row').allTextContents()).map((t) => t.trim());
  const ours = async () => {
    const now = await tabs();
    return now.length > 0 && now.every((t) => t.includes(' · ')) ? now : undefined;
  };
  const seen = await poll('', ours, 30_000).catch(async () => {
    throw new Error(`a local terminal VS Code opened is still there ${when}: ${JSON.stringify(await tabs())}`);
  });
  log(`terminal tabs ${when}: ${JSON.stringify(seen)} (none of VS Code's own)`);
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
  // Clicked again until it shows (one click on a loaded machine could leave the last one shown).
  await showTerminal(page, SHELL_TITLE, /^shell-before-42$/m);
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

// ---------------------------------------------------------------------------------------------
// Shared by the update and outage stages: the processes behind a terminal, and its whole text.

interface Proc {
  pid: number;
  ppid: number;
  cmd: string;
}

/** Live (non-zombie) processes with their parent and command line. */
async function processes(): Promise<Proc[]> {
  const { readdirSync, readFileSync } = await import('node:fs');
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      out.push({ pid: Number(name), ppid: Number(fields[1]), cmd });
    } catch {
      // gone
    }
  }
  return out;
}

/** The executor daemons of this private directory (`daemon run --key <version>-<hash>`). */
async function daemonsOf(runtimeDir: string): Promise<{ pid: number; key: string }[]> {
  const { readFileSync } = await import('node:fs');
  const out: { pid: number; key: string }[] = [];
  for (const p of await processes()) {
    const key = / daemon run --key (\S+)/.exec(p.cmd)?.[1];
    if (!key) continue;
    try {
      if (readFileSync(`/proc/${p.pid}/environ`, 'latin1').includes(`EXEC_BRIDGE_RUNTIME_DIR=${runtimeDir}\0`))
        out.push({ pid: p.pid, key });
    } catch {
      // gone
    }
  }
  return out;
}

/** The shell running the command line that contains `marker` (the deepest such process: inside bwrap), with its ancestors. */
async function commandProcess(marker: string): Promise<{ pid: number; ancestors: number[] } | undefined> {
  const all = await processes();
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const ancestors = (pid: number): number[] => {
    const up: number[] = [];
    for (let p = byPid.get(pid); p && p.ppid > 1 && up.length < 64; p = byPid.get(p.ppid)) up.push(p.ppid);
    return up;
  };
  const matches = all.filter((p) => p.cmd.includes(marker) && /^(\S*\/)?(ba)?sh -c /.test(p.cmd));
  const deepest = matches.sort((a, b) => ancestors(b.pid).length - ancestors(a.pid).length)[0];
  return deepest ? { pid: deepest.pid, ancestors: ancestors(deepest.pid) } : undefined;
}

/**
 * The active terminal's whole text, scrollback included (the DOM has only the rows in view):
 * Terminal: Select All, which the profile's terminal.integrated.copyOnSelection copies, read back
 * from the clipboard (the stage's browser context may read it). Copy Selection if nothing came.
 */
async function wholeTerminalText(page: Page): Promise<string> {
  await page.evaluate("navigator.clipboard.writeText('')");
  await runPaletteCommand(page, 'Terminal: Select All');
  const deadline = Date.now() + 15_000;
  for (let copied = false; ;) {
    const text = await page.evaluate<string>('navigator.clipboard.readText()');
    if (text) return text.replace(/\r\n/g, '\n');
    if (Date.now() > deadline) throw new Error('the terminal text never reached the clipboard (Select All, copy on selection)');
    if (!copied && Date.now() > deadline - 10_000) {
      copied = true;
      await runPaletteCommand(page, 'Terminal: Copy Selection').catch(() => undefined);
    }
    await page.waitForTimeout(200);
  }
}

/** A command line printing `tick N` every 100 ms until `gate` exists, between two lines with its pid. */
function tickerCommand(gate: string): string {
  return `echo "ticker pid $$"; i=0; while [ ! -e '${gate}' ] && [ $i -lt 20000 ]; do i=$((i+1)); echo "tick $i"; sleep 0.1; done; echo "ticker pid $$ done"`;
}

/** Every tick exactly once, in order, and the same pid at both ends; returns how many ticks. */
function checkTicker(text: string): number {
  const ticks = [...text.matchAll(/^tick (\d+)$/gm)].map((m) => Number(m[1]));
  const bad = ticks.findIndex((n, i) => n !== i + 1);
  if (ticks.length === 0 || bad >= 0)
    throw new Error(
      `the ticker's lines are not complete: ${ticks.length} ticks, first wrong at #${bad + 1} (${ticks[bad]}): ...${text.slice(-2000)}`,
    );
  const starts = [...text.matchAll(/^ticker pid (\d+)$/gm)].map((m) => m[1]);
  const ends = [...text.matchAll(/^ticker pid (\d+) done$/gm)].map((m) => m[1]);
  if (starts.length !== 1 || ends.length !== 1 || starts[0] !== ends[0])
    throw new Error(`the ticker's pid lines: start ${JSON.stringify(starts)}, end ${JSON.stringify(ends)}`);
  return ticks.length;
}

/** Starts a command from the palette (Run Command on Executor…); `offered`: text of the row the input offers. */
async function runCommand(page: Page, command: string, offered: string): Promise<void> {
  await runPaletteCommand(page, 'Exec Bridge: Run Command on Executor');
  await page.locator('.quick-input-widget .quick-input-title:has-text("Run Command on Executor")').waitFor({ timeout: 30_000 });
  const row = page.locator(`.quick-input-list .monaco-list-row:has-text("${offered}")`).first();
  for (let attempt = 1; ; attempt++) {
    await page.locator('.quick-input-widget input').fill(command);
    if (
      await row.waitFor({ timeout: 10_000 }).then(
        () => true,
        () => false,
      )
    )
      break;
    if (attempt === 3) throw new Error('the Run Command input never offered the typed command');
  }
  await page.keyboard.press('Enter');
}

/** Opens a shell (New Executor Shell) and runs `echo shell-before-42` in it. */
async function startShell(page: Page): Promise<void> {
  await runPaletteCommand(page, 'Exec Bridge: New Executor Shell');
  await showTerminal(page, SHELL_TITLE);
  await waitForTerminalText(page, /\$ ?$|# ?$|> ?$/m, 30_000);
  await page.locator('.terminal-wrapper.active .xterm, .terminal .xterm').last().click();
  await page.keyboard.type('echo "shell-before-$((40+2))"\n', { delay: 5 });
  await waitForTerminalText(page, /^shell-before-42$/m);
}

/** The reopened shell: its output from before once, and it answers typed input. */
async function checkShell(page: Page): Promise<void> {
  // Clicked again until it shows (one click on a loaded machine could leave the last one shown).
  await showTerminal(page, SHELL_TITLE, /^shell-before-42$/m);
  await page.locator('.terminal-wrapper.active .xterm, .terminal .xterm').last().click();
  await page.keyboard.type('echo "shell-after-$((50+3))"\n', { delay: 5 });
  const text = await waitForTerminalText(page, /^shell-after-53$/m);
  if ((text.match(/^shell-before-42$/gm) ?? []).length !== 1) throw new Error(`the shell's output is duplicated:\n${text}`);
}

/** Reload Window from the palette; resolves when the new workbench is there. */
async function reloadWindow(page: Page): Promise<void> {
  await runPaletteCommand(page, 'Developer: Reload Window');
  await page.waitForEvent('framenavigated', { timeout: 60_000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
}

/** The Executors view's rows once one of them matches `pattern` (opens the view; bounded). */
async function executorRows(page: Page, pattern: RegExp, timeoutMs = 30_000): Promise<string[]> {
  const view = page.locator('[id="workbench.view.extension.execBridge"]');
  const deadline = Date.now() + timeoutMs;
  let clicked = 0;
  for (;;) {
    // The activity bar item toggles the side bar: click only when the view is not shown, and look
    // again a while later (a workbench that is still restoring its layout may show it, or hide it,
    // right after a click).
    if (!(await view.isVisible()) && Date.now() - clicked > 3_000) {
      await page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]').click();
      clicked = Date.now();
    }
    const rows = await view.locator('.monaco-list-row').allInnerTexts();
    if (rows.some((r) => pattern.test(r))) return rows;
    if (Date.now() > deadline) throw new Error(`the Executors view never showed ${pattern}: ${JSON.stringify(rows)}`);
    await page.waitForTimeout(200);
  }
}

/** Text of every "Exec Bridge" log of this profile (one per extension host), newest last. */
async function extensionLogs(logsDir: string): Promise<string> {
  const { readdirSync, readFileSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n === 'Exec Bridge.log') files.push(p);
    }
  };
  walk(logsDir);
  return files
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs)
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface UpdateContext extends ReloadContext {
  /** The daemons' private directory (EXEC_BRIDGE_RUNTIME_DIR of this code-server). */
  runtimeDir: string;
  /** The profile's logs folder (the extension hosts' "Exec Bridge" logs). */
  logsDir: string;
  /** The installed version and the update's. */
  from: string;
  to: string;
  /** Installs the update (code-server --install-extension), the window open. */
  installUpdate(): Promise<void>;
}

/**
 * An extension update with work running (issue 27): v1 installed, a ticker (a numbered line every
 * 100 ms) and a shell on the bundled executor, v2 installed while the window is open, Reload
 * Window. Both terminals come back with their output complete — every tick once, in order, the
 * same pid — and the shell answers; the older daemon keeps serving the window's session (the new
 * version found it there) until Reconnect moves the window to the new version's daemon, where new
 * work then runs. Returns both daemons' pids: the harness checks that the older one exits once its
 * session has ended (TTL + idle time), and the newer one after the crash it ends the stage with.
 */
export async function driveUpdate(ctx: UpdateContext): Promise<{ older: number; newer: number }> {
  const { page, log, shot, workspace, runtimeDir, from, to } = ctx;
  const { join } = await import('node:path');
  const { writeFileSync } = await import('node:fs');
  await page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]').waitFor({ timeout: 60_000 });
  const gate = join(workspace, `ticker-gate-${Date.now()}`);
  await runCommand(page, tickerCommand(gate), 'ticker pid');
  await waitForTerminalText(page, /^tick 3$/m, 30_000);
  await startShell(page);
  await showTerminal(page, 'ticker pid', /^tick \d+$/m);
  const before = await daemonsOf(runtimeDir);
  const ticker = await commandProcess(gate);
  log('before the update: daemons', JSON.stringify(before), 'ticker', JSON.stringify(ticker));
  if (before.length !== 1 || !before[0]!.key.startsWith(`${from}-`))
    throw new Error(`expected one ${from} daemon: ${JSON.stringify(before)}`);
  const old = before[0]!;
  if (!ticker || !ticker.ancestors.includes(old.pid)) throw new Error(`the ticker is not the ${from} daemon's: ${JSON.stringify(ticker)}`);
  log('Executors view:', JSON.stringify(await executorRows(page, new RegExp(`session \\w+ · \\D*${esc(from)} · `))));
  await shot('before-update');

  // Watch the ticker's process from here on: a death before its gate says when it happened.
  let died: number | undefined;
  let watching = true;
  const tInstall = Date.now();
  const watcher = (async () => {
    while (watching && died === undefined) {
      if (!(await processes()).some((p) => p.pid === ticker.pid)) died = Date.now() - tInstall;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await ctx.installUpdate();
  // What the user sees of the update: the Extensions view says a reload applies it ("Restart
  // Required" on the entry, a "Reload Window" button above), and the user clicks that button.
  // (The item, not its label: the "requires restart" badge lies over the label.)
  await page.locator('.activitybar .action-item:has(a[aria-label^="Extensions"])').first().click();
  const entry = page.locator('.extension-list-item:has-text("Exec Bridge")').first();
  await entry.waitFor({ timeout: 30_000 });
  // 1.139: a "Reload Window" button above the list; 1.100: a "Reload Window" action on the entry.
  const reloadButton = page
    .locator('.part.sidebar')
    .locator('.monaco-button, .action-label', { hasText: /^Reload Window$/ })
    .first();
  const offered = await reloadButton.waitFor({ timeout: 15_000 }).then(
    () => true,
    () => false,
  );
  log(
    'Extensions view entry after the install:',
    JSON.stringify(await entry.innerText()),
    offered ? '(Reload Window offered)' : '(no Reload Window button)',
  );
  await shot('update-installed');
  const t0 = Date.now();
  if (offered) {
    await reloadButton.click();
    await page.waitForEvent('framenavigated', { timeout: 60_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
  } else await reloadWindow(page);

  await page.locator('.tabs-list .monaco-list-row', { hasText: 'ticker pid' }).first().waitFor({ timeout: 60_000 });
  await showTerminal(page, 'ticker pid', /^tick \d+$/m);
  log(`terminals back ${Date.now() - t0} ms after the reload`);
  await shot('after-update-reload');
  const logs = await extensionLogs(ctx.logsDir);
  if (!new RegExp(`resumed session \\S+ on the exec-bridge daemon of version ${esc(from)}-`).test(logs))
    throw new Error(`the ${to} extension did not resume the session on the ${from} daemon; its log:\n${logs.slice(-4000)}`);
  // The reloaded window (extension `to`) shows its session on the `from` daemon.
  log('Executors view after the update:', JSON.stringify(await executorRows(page, new RegExp(`session \\w+ · \\D*${esc(from)} · `))));
  watching = false;
  await watcher;
  if (died !== undefined) throw new Error(`the ticker (pid ${ticker.pid}) ended ${died} ms after the update began to install`);
  const same = await commandProcess(gate);
  if (same?.pid !== ticker.pid) throw new Error(`the ticker is not the same process: ${ticker.pid} before, ${JSON.stringify(same)} after`);

  // The ticker: stop it; the reopened terminal has every line once, in order, and its end.
  writeFileSync(gate, '');
  await showTerminal(page, 'ticker pid', /^ticker pid \d+ done$/m);
  const n = checkTicker(await wholeTerminalText(page));
  log(`the ticker's ${n} lines are complete, in order, one pid`);
  await checkShell(page);
  await shot('shell-after-update');

  // Reconnect: a new session on the new version's daemon; new work runs there, and the older
  // daemon exits once its session is over (its TTL, then its idle time).
  await page.keyboard.type('exit\n', { delay: 5 });
  await runPaletteCommand(page, 'Exec Bridge: Reconnect');
  // (Not ending in a simple command: sh would exec it, and the marker would leave the process list.)
  await runCommand(page, 'echo "new-work-$((6*7))"; sleep 5; echo new-work-done', 'new-work');
  await waitForTerminalText(page, /^new-work-42$/m, 30_000);
  const now = await daemonsOf(runtimeDir);
  const fresh = now.find((d) => d.key.startsWith(`${to}-`));
  const work = await commandProcess('new-work-');
  log('after Reconnect: daemons', JSON.stringify(now), 'new work', JSON.stringify(work));
  if (!fresh || !work?.ancestors.includes(fresh.pid))
    throw new Error(`new work does not run on the ${to} daemon: ${JSON.stringify({ now, work })}`);
  await executorRows(page, new RegExp(`session \\w+ · \\D*${esc(to)} · `));
  await shot('new-work-on-new-daemon');
  // The older daemon now serves a detached session only: it exits once that session's TTL is over
  // (then its idle time), which the harness's leak check waits for with the newer one's.
  log(`the ${from} daemon (pid ${old.pid}) keeps the old session until its TTL; the ${to} daemon (pid ${fresh.pid}) runs this window's`);
  return { older: old.pid, newer: fresh.pid };
}

export interface OutageContext extends ReloadContext {
  /** How long the network is down, in seconds (EXEC_BRIDGE_OUTAGE_S). */
  outageS: number;
  /** Loads the workbench on `workspace` (called once the stage has written its settings). */
  load(): Promise<void>;
}

/**
 * A night's outage in its worst form (issue 27), in a real VS Code: a terminal on an SSH executor
 * (the real sshd on 127.0.0.1, test/helpers/sshd.ts, reached through a relay in front of its port)
 * runs a ticker; the relay's `outage()` resets the sshd side of every connection at once (the
 * remote daemon's session detaches at the start of the outage) while the window's side is
 * black-holed and new connections hang (ssh's own shared connection included); the state says
 * "offline since HH:MM, retrying"; Developer: Reload Window during the outage, and the new window
 * says the same while it keeps trying; the outage lasts `outageS` (past every client timeout and the
 * remote daemon's default TTL for clients that ask none: the back-off reaches its 30 s cap); the
 * network heals, and the reopened terminal shows every tick exactly once, in order, from the same
 * process on the remote daemon.
 */
export async function driveOutage(ctx: OutageContext): Promise<void> {
  const { page, log, shot, workspace, outageS } = ctx;
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const sshd = await startSshd();
  const proxy = await FaultProxy.start(sshd.port).catch(async (e: unknown) => {
    await sshd.stop();
    throw e;
  });
  try {
    mkdirSync(join(workspace, '.vscode'), { recursive: true });
    writeFileSync(
      join(workspace, '.vscode', 'settings.json'),
      JSON.stringify({
        'execBridge.executors': [{ name: 'night', ssh: `root@127.0.0.1:${proxy.port}`, sshOptions: sshd.clientOptions }],
        'execBridge.defaultExecutor': 'night',
        // The window asks the executor to keep its session well past the outage.
        'execBridge.sessionTtlSeconds': outageS + 600,
      }),
    );
    await ctx.load();
    await page.locator('.activitybar .action-item a[aria-label^="Exec Bridge"]').waitFor({ timeout: 60_000 });
    const gate = join(workspace, `night-gate-${Date.now()}`);
    // The first command installs our bundle on the host over ssh and starts its daemon.
    await runCommand(page, tickerCommand(gate), 'ticker pid');
    await waitForTerminalText(page, /^tick 3$/m, 90_000);
    const ticker = await commandProcess(gate);
    const daemon = ticker && (await remoteDaemonAmong(ticker.ancestors, sshd.home));
    if (!ticker || daemon === undefined)
      throw new Error(`the ticker does not run under the ssh host's daemon (home ${sshd.home}): ${JSON.stringify(ticker)}`);
    log(`ticker pid ${ticker.pid} under the remote daemon (pid ${daemon}) behind sshd :${sshd.port} and the relay :${proxy.port}`);

    proxy.outage();
    const tOut = Date.now();
    const offline = /offline since \d{1,2}:\d{2}( [AP]M)?, retrying/;
    log(
      'outage: the Executors view says',
      JSON.stringify((await executorRows(page, offline, 60_000)).find((r) => offline.test(r))),
      `after ${Date.now() - tOut} ms`,
    );
    // The worst form: the host saw its connection close, so its daemon holds the session detached
    // from the start (its TTL, the one the window asked for, runs from now).
    const detached = await remoteDaemonStatus(sshd, /: detached /, 60_000);
    log(`the host's daemon ${Date.now() - tOut} ms into the outage:`, JSON.stringify(detached.trim().split('\n').slice(-2).join(' | ')));
    // The status bar: the executor with the reconnecting icon, the same words in its hover.
    const status = page.locator('.statusbar-item:has(.codicon-sync)', { hasText: 'night' }).first();
    await status.waitFor({ timeout: 15_000 });
    await status.hover();
    const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: 'offline since' }).first();
    await hover.waitFor({ timeout: 15_000 });
    log('status bar hover:', JSON.stringify((await hover.innerText()).split('\n').slice(0, 3).join(' ')));
    await shot('outage-offline');
    await page.mouse.move(700, 400);
    await reloadWindow(page);
    log(`reloaded ${Date.now() - tOut} ms into the outage`);
    const after = await executorRows(page, offline, 90_000);
    log(
      'after the reload the Executors view says',
      JSON.stringify(after.find((r) => offline.test(r))),
      `(${Date.now() - tOut} ms into the outage)`,
    );
    await shot('outage-reloaded-offline');
    const rest = outageS * 1000 - (Date.now() - tOut);
    if (rest > 0) await page.waitForTimeout(rest);
    if ((await commandProcess(gate))?.pid !== ticker.pid) throw new Error(`the ticker (pid ${ticker.pid}) did not live through the outage`);
    proxy.heal();
    const tHeal = Date.now();
    log(`healed after ${tHeal - tOut} ms of outage (${proxy.accepted} connections tried)`);

    // The back-off is at its 30 s cap by now, and an attempt in flight may be a black-holed ssh
    // that has to time out first: the terminal comes back within two more waits. Its tab, or, when
    // it is the only terminal (no tabs list; VS Code's own shell was closed), its text.
    await Promise.any([
      page.locator('.tabs-list .monaco-list-row', { hasText: 'ticker pid' }).first().waitFor({ timeout: 120_000 }),
      waitForTerminalText(page, /^tick \d+$/m, 120_000),
    ]);
    await executorRows(page, /^connected/m, 60_000);
    log(`terminal back ${Date.now() - tHeal} ms after the network healed`);
    const same = await commandProcess(gate);
    if (same?.pid !== ticker.pid)
      throw new Error(`the ticker is not the same process: ${ticker.pid} before, ${JSON.stringify(same)} after`);
    writeFileSync(gate, '');
    await showTerminal(page, 'ticker pid', /^ticker pid \d+ done$/m).catch(() =>
      waitForTerminalText(page, /^ticker pid \d+ done$/m, 30_000),
    );
    await shot('outage-healed');
    const text = await wholeTerminalText(page);
    const n = checkTicker(text);
    if (!/reopened after the window reload/.test(text)) throw new Error(`no reopen notice in the terminal: ...${text.slice(0, 1500)}`);
    log(`the ticker's ${n} lines are complete, in order, one pid, after ${Math.round((tHeal - tOut) / 1000)} s of outage and a reload`);
  } finally {
    await proxy.close();
    // Stops sshd and the daemons it started under its home (the remote side's leak check).
    await sshd.stop();
  }
}

/** The host's `exec-bridge daemon status` once it matches `pattern` (polled, within `timeoutMs`). */
async function remoteDaemonStatus(sshd: Sshd, pattern: RegExp, timeoutMs: number): Promise<string> {
  const { execFile } = await import('node:child_process');
  const { join } = await import('node:path');
  const bin = join(sshd.home, '.exec-bridge', 'bin', 'exec-bridge');
  const env = { ...process.env, HOME: sshd.home, EXEC_BRIDGE_RUNTIME_DIR: sshd.runtimeDir };
  let last = '';
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
    last = await new Promise<string>((resolve) =>
      execFile(bin, ['daemon', 'status'], { encoding: 'utf8', timeout: 20_000, env }, (e, out) => resolve(out || String(e ?? ''))),
    );
    if (pattern.test(last)) return last;
  }
  throw new Error(`the host's daemon status never matched ${pattern} within ${timeoutMs} ms: ${last}`);
}

/** The pid among `pids` of our daemon installed under the ssh host's `home` (`…/.exec-bridge/…cli.js daemon run`). */
async function remoteDaemonAmong(pids: number[], home: string): Promise<number | undefined> {
  const byPid = new Map((await processes()).map((p) => [p.pid, p]));
  return pids.find((pid) => {
    const cmd = byPid.get(pid)?.cmd ?? '';
    return cmd.includes(`${home}/.exec-bridge/`) && / daemon run\b/.test(cmd);
  });
}
