#!/usr/bin/env node
// Runs the extension inside REAL VS Codes — the oldest engines.vscode allows (code-server 4.100.3 =
// VS Code 1.100.3) and the newest on npm (4.139.1 = 1.139.1, on Node 24 from npm), one after the
// other — driven headlessly by Debian's chromium through playwright-core (README.md "Tests").
// VSCODE_TARGETS=min|newest|min,newest (default both) picks them.
//
//   1. installs code-server once into a cache folder outside the repo (offline except npm),
//   2. starts it in its own process group on a free loopback port with a throwaway HOME/TMPDIR/XDG
//      (both through the code-server library, scripts/codeServer.mjs, which scripts/start.mjs shares),
//   3. page load #1: extensionDevelopmentPath + extensionTestsPath → the mocha suites in
//      $OUT_DIR/test/vscode run in the real extension host; their report arrives via codeAutomationLog,
//   4. page load #2: the playwright UI test ($OUT_DIR/test/vscode/ui/workbench.ui.js) drives the workbench,
//      then a window of its own folder runs the reload stage ($OUT_DIR/test/vscode/ui/reload.ui.js),
//      and (newest only by default) another the outage stage: an SSH executor's long outage with
//      a Reload Window in it; then a crash of code-server that must leave nothing behind,
//   5. the untrusted workbench, then the update stage: a code-server of its own with v1 of two
//      VSIXs of this tree installed, v2 installed while the window runs a ticker and a shell,
//      the Extensions view's Reload Window, and its own crash and leak check,
//   6. prints `N passed, M failed`, kills the process group, keeps logs + screenshots in test-results/
//      on failure.
//
// Usage: node scripts/vscode-test.mjs [--install-only] [--tests-only] [--ui-only] [--reload-only]
//        [--update-only] [--outage-only] [--keep]
// Env:   OUT_DIR (where tsc compiled the tests, default `out`), EXEC_BRIDGE_VSCODE_CACHE (install cache),
//        VSCODE_TEST_GREP (mocha grep), CHROMIUM (default /usr/bin/chromium), EXEC_BRIDGE_OUTAGE_S
//        (the outage stage's outage, default 75; 360 for the issue's night), EXEC_BRIDGE_OUTAGE_TARGETS
//        (where it runs, default newest; min,newest for both).
// Needs: dist/extension.js (npm run build) and $OUT_DIR/test/vscode/** (tsc --outDir $OUT_DIR).
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format } from 'node:util';
import {
  cacheRoot,
  CHROMIUM_ARGS,
  chromiumPath,
  ensureCodeServer,
  extraArgsFor,
  fail,
  freePort,
  isolatedWorld,
  killGroup,
  processesMentioning,
  root,
  say,
  showsToasts,
  stackOf,
  startCodeServer,
  ts,
  VSCODE_TARGETS,
  vscodeVersionOf,
  waitHealthy,
  writeUserSettings,
} from './codeServer.mjs';

const args = new Set(process.argv.slice(2));
const outDir = resolve(root, process.env.OUT_DIR || 'out');
const resultsDir = join(root, 'test-results');

/**
 * The run's detached-session TTL (user setting execBridge.sessionTtlSeconds) and daemon idle time.
 * A reload must come back within it: 30 s leaves room for a loaded machine (a reload took 25 s at
 * load 28; 20 s lost a session), and the crash-leak check waits it out once per version.
 */
const SESSION_TTL_S = 30;
/** The update and outage stages read a terminal's whole text: Select All copies it (wholeTerminalText in reload.ui.ts). */
const WHOLE_TERMINAL_TEXT = { 'terminal.integrated.scrollback': 50_000, 'terminal.integrated.copyOnSelection': true };
/** The update stage's TTL (the session must outlive the reload that applies the update). */
const UPDATE_TTL_S = 45;

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}
const DAEMON_IDLE_MS = 2000;

/**
 * Kills code-server's group the hard way — its extension hosts die without deactivate, as in a
 * crash — and returns the check that nothing started in this run (`rt`) outlives its lifetimes:
 * the bundled executor is a daemon that keeps a crashed window's sessions for their TTL (a reload
 * resumes them), then ends their processes, and exits after its idle time. The check resolves to
 * what is left (killed then) once all is gone or that time is over; the caller goes on meanwhile.
 * The browser (still open on purpose, closed by the caller) is not ours to judge here.
 */
function crashAndCheckLeaks(cs, rt, ttlS = SESSION_TTL_S) {
  try {
    process.kill(-cs.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  const ours = () => processesMentioning(rt).filter((p) => !p.cmd.includes('chromium'));
  return waitForExit(ours, ttlS * 1000 + DAEMON_IDLE_MS + 15_000).then((left) => {
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    return left;
  });
}

/** Closes the browser of a crashed code-server; chromium's helpers (crashpad) linger a moment after close: never leave them behind. */
async function closeBrowser(browser, rt) {
  await browser?.close().catch(() => {});
  for (const p of await waitForExit(() => processesMentioning(rt).filter((p) => p.cmd.includes('chromium')), 5000)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** Polls `list` until it is empty or `timeoutMs` passed; returns what is left. */
async function waitForExit(list, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let left = list();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    left = list();
  }
  return left;
}

function payloadUrl(base, host, workspace, withTests) {
  const payload = [['extensionDevelopmentPath', `vscode-remote://${host}${root}`]];
  if (withTests) payload.push(['extensionTestsPath', `vscode-remote://${host}${join(outDir, 'test', 'vscode', 'index.js')}`]);
  const kind = workspace.endsWith('.code-workspace') ? 'workspace' : 'folder';
  return `${base}/?${kind}=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

// Extension-host console lines that are environment noise, not our report.
const NOISE = /ENOTFOUND|getaddrinfo|ChatSessionStore|marketplace|open-vsx|\[Extension Host\] (?:Debugger|Started local)/;

async function runMochaPage(browser, base, host, workspace, rt) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const lines = [];
  page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`[pageerror] ${e.message}`));
  let exitCode = null;
  // Set by the page's report (a callback: a cast, not a declared type, keeps it from narrowing to null).
  let summary = /** @type {{ passed: number, failed: number } | null} */ (null);
  let started = false;
  await page.exposeFunction('codeAutomationLog', (type, logArgs) => {
    const text = format(...(Array.isArray(logArgs) ? logArgs : [logArgs]));
    lines.push(`[host ${type}] ${text}`);
    // Only the mocha report is echoed; workbench chatter stays in the log file.
    const m = /^EXEC_BRIDGE_MOCHA (\{.*\})$/.exec(text);
    if (m?.[1]) {
      const report = JSON.parse(m[1]);
      summary = report;
      say(`mocha finished: ${report.passed} passed, ${report.failed} failed`);
    } else if (text === 'EXEC_BRIDGE_MOCHA_START') started = true;
    else if (started && !NOISE.test(text)) console.log(text);
  });
  await page.exposeFunction('codeAutomationExit', (code) => {
    exitCode = code;
    say(`extension host reported exit code ${code}`);
  });
  say('mocha suites: loading the workbench with the test payload');
  let error;
  let stopHook;
  try {
    await page.goto(payloadUrl(base, host, workspace, true), { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    // A measurement hook (e.g. bench/rendererProfileHook.mjs: a CPU profile of the window during the suites).
    if (process.env.EXEC_BRIDGE_MOCHA_PAGE_HOOK)
      stopHook = await (await import(pathToFileURL(resolve(process.env.EXEC_BRIDGE_MOCHA_PAGE_HOOK)).href)).attach({ page, context, say });
    // A bound on the whole mocha page (~30 suites; ~3 min on an idle 2-core machine, twice that under
    // load). EXEC_BRIDGE_MOCHA_PAGE_MS: more time for a measurement run (the 200 MiB terminal flood of bench/RESULTS.md).
    const pageMs = Number(process.env.EXEC_BRIDGE_MOCHA_PAGE_MS ?? 480_000);
    const deadline = Date.now() + pageMs;
    while (exitCode === null && Date.now() < deadline) await page.waitForTimeout(250);
    if (exitCode === null) error = new Error(`the extension tests did not finish within ${pageMs / 1000} s`);
  } catch (e) {
    error = e;
  }
  await stopHook?.().catch((e) => console.error(ts(), 'mocha page hook:', e?.message ?? e));
  const ok = !error && exitCode === 0 && summary !== null && summary.failed === 0;
  writeFileSync(join(rt, 'mocha-console.log'), lines.join('\n') + '\n');
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, 'vscode-mocha-fail.png') }).catch(() => {});
    copyFileSync(join(rt, 'mocha-console.log'), join(resultsDir, 'vscode-mocha-console.log'));
  }
  await context.close();
  if (error) console.error(ts(), 'mocha page:', (error instanceof Error && error.message) || error);
  return { ok, passed: summary?.passed ?? 0, failed: summary?.failed ?? (ok ? 0 : 1), exitCode };
}

async function runUiPage(browser, base, host, workspace, rt, toasts) {
  const modulePath = join(outDir, 'test', 'vscode', 'ui', 'workbench.ui.js');
  if (!existsSync(modulePath)) fail(`${modulePath} missing (compile with tsc --outDir ${outDir})`);
  const ui = await import(pathToFileURL(modulePath).href);
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const lines = [];
  page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`[pageerror] ${e.message}`));
  let step = 0;
  const shot = async (name) => {
    mkdirSync(join(rt, 'shots'), { recursive: true });
    await page.screenshot({ path: join(rt, 'shots', `${String(++step).padStart(2, '0')}-${name}.png`) }).catch(() => {});
  };
  say('UI test: loading the workbench with the extension');
  let ok = false;
  try {
    await page.goto(payloadUrl(base, host, workspace, false), { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    await ui.drive({ page, log: (...a) => say('ui:', ...a), shot, workspace, toasts });
    ok = true;
  } catch (e) {
    console.error(ts(), '✗ UI test failed:', stackOf(e));
  }
  writeFileSync(join(rt, 'ui-console.log'), lines.join('\n') + '\n');
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, 'vscode-ui-fail.png') }).catch(() => {});
    writeFileSync(join(resultsDir, 'vscode-ui-fail.html'), await page.content().catch(() => ''));
    copyFileSync(join(rt, 'ui-console.log'), join(resultsDir, 'vscode-ui-console.log'));
  }
  // The step screenshots are cheap and show what the user saw: keep the latest set either way.
  const shotsOut = join(resultsDir, 'vscode-ui-shots');
  rmSync(shotsOut, { recursive: true, force: true });
  mkdirSync(shotsOut, { recursive: true });
  spawnSync('sh', ['-c', `cp "${join(rt, 'shots')}"/*.png "${shotsOut}"/ 2>/dev/null`]);
  // The page stays open: the leak check crashes code-server while this window is still live.
  return { ok, passed: ok ? 1 : 0, failed: ok ? 0 : 1 };
}

/**
 * The reload stage ($OUT_DIR/test/vscode/ui/reload.ui.js): a window of its own folder (its own
 * workspace state) that runs a command and a shell, reloads, and finds them again.
 */
async function runReloadPage(browser, base, host, rt, toasts) {
  const modulePath = join(outDir, 'test', 'vscode', 'ui', 'reload.ui.js');
  if (!existsSync(modulePath)) fail(`${modulePath} missing (compile with tsc --outDir ${outDir})`);
  const stage = await import(pathToFileURL(modulePath).href);
  const workspace = join(rt, 'workspace-reload');
  mkdirSync(workspace, { recursive: true });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const lines = [];
  page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
  let step = 0;
  const shot = async (name) => {
    mkdirSync(join(rt, 'shots-reload'), { recursive: true });
    await page.screenshot({ path: join(rt, 'shots-reload', `${String(++step).padStart(2, '0')}-${name}.png`) }).catch(() => {});
  };
  say('reload stage: loading a workbench on its own folder');
  let ok = false;
  try {
    await page.goto(payloadUrl(base, host, workspace, false), { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    await stage.drive({ page, log: (...a) => say('reload:', ...a), shot, workspace, toasts });
    ok = true;
  } catch (e) {
    console.error(ts(), '✗ reload stage failed:', stackOf(e));
  }
  writeFileSync(join(rt, 'reload-console.log'), lines.join('\n') + '\n');
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, 'vscode-reload-fail.png') }).catch(() => {});
    copyFileSync(join(rt, 'reload-console.log'), join(resultsDir, 'vscode-reload-console.log'));
    spawnSync('sh', ['-c', `cp "${join(rt, 'shots-reload')}"/*.png "${resultsDir}"/ 2>/dev/null`]);
  }
  // Left open, like the UI page: the leak check crashes code-server with this window live.
  return { ok, passed: ok ? 1 : 0, failed: ok ? 0 : 1 };
}

/**
 * Two VSIXs of this tree that differ only in their version, as an extension update brings them:
 * v1 is package.json's version, v2 the next patch. Each is built in a copy of the tree (its
 * package.json stamped, node_modules linked), so the tree's own package.json and dist/ stay as they
 * are; esbuild bakes the version into the bundles (dist/cli/server.js among them), so the two are two
 * daemon versions.
 */
function buildUpdateVsixes(dir) {
  const base = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const next = base.replace(/^(\d+)\.(\d+)\.(\d+).*$/, (_, a, b, c) => `${a}.${b}.${Number(c) + 1}`);
  const out = {};
  for (const [name, version] of [
    ['v1', base],
    ['v2', next],
  ]) {
    const copy = join(dir, `tree-${name}`);
    mkdirSync(copy, { recursive: true });
    for (const f of ['src', 'scripts', 'media', 'package.json', 'esbuild.config.mjs', 'tsconfig.json', '.vscodeignore', 'README.md']) {
      if (existsSync(join(root, f))) cpSync(join(root, f), join(copy, f), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
    const pkg = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8'));
    writeFileSync(join(copy, 'package.json'), JSON.stringify({ ...pkg, version }, null, 2) + '\n');
    const target = `${process.platform}-${process.arch}`;
    for (const step of [['esbuild.config.mjs'], ['scripts/package.mjs', '--target', target, '--out-dir', join(copy, 'vsix')]]) {
      const r = spawnSync(process.execPath, step, { cwd: copy, encoding: 'utf8', timeout: 180_000 });
      if (r.status !== 0) throw new Error(`building the ${name} VSIX (${version}): ${step[0]} failed:\n${r.stdout}${r.stderr}`);
    }
    out[name] = { version, vsix: join(copy, 'vsix', 'exec-bridge.vsix') };
  }
  say(`update stage: VSIXs ${out.v1.version} and ${out.v2.version} built`);
  return out;
}

/** `code-server --install-extension VSIX` into the profile (what a user runs, or the Extensions view does). */
function installExtension(codeServer, { userData, extensions, env }, vsix) {
  const r = spawnSync(codeServer, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix], {
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`code-server --install-extension ${vsix} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout.trim();
}

/**
 * The update stage ($OUT_DIR/test/vscode/ui/reload.ui.js, `driveUpdate`): a code-server of its own
 * (own profile, extensions folder and daemon directory) with v1 of the extension *installed* (no
 * development path), a window running a ticker and a shell, v2 installed while the window is open,
 * Reload Window; then code-server is crashed and nothing of this stage may outlive the TTL and the
 * daemons' idle time.
 */
async function runUpdate(codeServer, rt, version, vsixes) {
  const modulePath = join(outDir, 'test', 'vscode', 'ui', 'reload.ui.js');
  const stage = await import(pathToFileURL(modulePath).href);
  const urt = join(rt, 'update');
  const world = isolatedWorld(urt);
  const runtimeDir = join(urt, 'private');
  const env = {
    ...world.env,
    EXEC_BRIDGE_TEST_VSCODE: vscodeVersionOf(version),
    EXEC_BRIDGE_RUNTIME_DIR: runtimeDir,
    EXEC_BRIDGE_DAEMON_IDLE_MS: String(DAEMON_IDLE_MS),
  };
  // A TTL that outlasts a reload on a busy machine (the session is detached from the click until
  // the new window's extension resumes it: up to 22 s seen at load 6); scrollback for every tick.
  writeUserSettings(world.userData, { 'execBridge.sessionTtlSeconds': UPDATE_TTL_S, ...WHOLE_TERMINAL_TEXT });
  const profile = { userData: world.userData, extensions: world.extensions, env };
  say(`update stage: installing ${vsixes.v1.version}: ${installExtension(codeServer, profile, vsixes.v1.vsix).split('\n').at(-1)}`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const csLog = join(urt, 'code-server.log');
  const cs = startCodeServer(codeServer, {
    ...profile,
    port,
    workspace: world.workspace,
    logFile: csLog,
    extraArgs: extraArgsFor(version),
  });
  running.add(cs);
  let browser;
  let ok = false;
  const lines = [];
  let step = 0;
  let page;
  let daemons;
  try {
    await waitHealthy(base, cs, 60_000);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, env, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    // The stage reads a terminal's whole text through the clipboard (Select All, copy on selection).
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
    const shot = async (name) => {
      mkdirSync(join(urt, 'shots'), { recursive: true });
      await page.screenshot({ path: join(urt, 'shots', `${String(++step).padStart(2, '0')}-${name}.png`) }).catch(() => {});
    };
    say(`update stage: a window on the installed ${vsixes.v1.version}`);
    await page.goto(`${base}/?folder=${encodeURIComponent(world.workspace)}`, { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    daemons = await stage.driveUpdate({
      page,
      log: (...a) => say('update:', ...a),
      shot,
      workspace: world.workspace,
      runtimeDir,
      logsDir: join(world.userData, 'logs'),
      from: vsixes.v1.version,
      to: vsixes.v2.version,
      installUpdate: async () =>
        say(`update stage: installing ${vsixes.v2.version}: ${installExtension(codeServer, profile, vsixes.v2.vsix).split('\n').at(-1)}`),
    });
    ok = true;
  } catch (e) {
    console.error(ts(), '✗ update stage failed:', stackOf(e));
  }
  writeFileSync(join(urt, 'update-console.log'), lines.join('\n') + '\n');
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    await page?.screenshot({ path: join(resultsDir, 'vscode-update-fail.png') }).catch(() => {});
    copyFileSync(join(urt, 'update-console.log'), join(resultsDir, 'vscode-update-console.log'));
    copyFileSync(csLog, join(resultsDir, `vscode-update-code-server-${version}.log`));
    spawnSync('sh', [
      '-c',
      `cp "${join(urt, 'shots')}"/*.png "${resultsDir}"/ 2>/dev/null; for f in "${runtimeDir}"/daemon-*/daemon.log; do cp "$f" "${resultsDir}/vscode-update-$(basename "$(dirname "$f")").log"; done 2>/dev/null; find "${join(world.userData, 'logs')}" -name 'Exec Bridge.log' | while read -r f; do cp "$f" "${resultsDir}/vscode-update-$(basename "$(dirname "$(dirname "$f")")")-exec-bridge.log"; done`,
    ]);
  }
  // A crash with the window live, as in the main run: both daemons, what they ran and code-server
  // itself must be gone after the TTL and the idle time — the older daemon once the session it kept
  // (detached by Reconnect) has ended, the newer one once the crashed window's has. That waiting
  // runs beside the next stages.
  const tCrash = Date.now();
  const exits = {};
  const watch = daemons
    ? (async () => {
        while (Object.keys(exits).length < 2 && Date.now() - tCrash < (UPDATE_TTL_S + 30) * 1000) {
          for (const [name, pid] of Object.entries(daemons)) if (!(name in exits) && !pidAlive(pid)) exits[name] = Date.now() - tCrash;
          await new Promise((r) => setTimeout(r, 200));
        }
      })()
    : Promise.resolve();
  running.delete(cs);
  const leaks = crashAndCheckLeaks(cs, urt, UPDATE_TTL_S);
  await closeBrowser(browser, urt);
  const name = `update ${vsixes.v1.version} → ${vsixes.v2.version}`;
  const leakCheck = Promise.all([leaks, watch]).then(([leaked]) => {
    if (daemons)
      say(
        `update stage: after the crash the ${vsixes.v1.version} daemon exited at +${exits.older} ms, the ${vsixes.v2.version} one at +${exits.newer} ms`,
      );
    if (leaked.length > 0)
      console.error(`${ts()} ✗ processes of the update stage outlived it:\n${leaked.map((p) => `  ${p.pid} ${p.cmd}`).join('\n')}`);
    return [
      { name, ok, passed: ok ? 1 : 0, failed: ok ? 0 : 1 },
      {
        name: 'no leaks after the update stage',
        ok: leaked.length === 0,
        passed: leaked.length === 0 ? 1 : 0,
        failed: leaked.length === 0 ? 0 : 1,
      },
    ];
  });
  return { leakCheck };
}

/**
 * The outage stage ($OUT_DIR/test/vscode/ui/reload.ui.js, `driveOutage`): a window of its own
 * folder whose executor is the loopback sshd behind a fault relay; a long outage (EXEC_BRIDGE_OUTAGE_S,
 * default 75 s) with a Reload Window in it.
 */
async function runOutagePage(browser, base, host, rt) {
  const stage = await import(pathToFileURL(join(outDir, 'test', 'vscode', 'ui', 'reload.ui.js')).href);
  const workspace = join(rt, 'workspace-outage');
  mkdirSync(workspace, { recursive: true });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  const lines = [];
  page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
  let step = 0;
  const shot = async (name) => {
    mkdirSync(join(rt, 'shots-outage'), { recursive: true });
    await page.screenshot({ path: join(rt, 'shots-outage', `${String(++step).padStart(2, '0')}-${name}.png`) }).catch(() => {});
  };
  const outageS = Number(process.env.EXEC_BRIDGE_OUTAGE_S || 75);
  say(`outage stage: a ${outageS} s outage of an SSH executor (the loopback sshd behind a relay), with a Reload Window in it`);
  let ok = false;
  try {
    await stage.driveOutage({
      page,
      log: (...a) => say('outage:', ...a),
      shot,
      workspace,
      outageS,
      load: async () => {
        await page.goto(payloadUrl(base, host, workspace, false), { waitUntil: 'domcontentloaded', timeout: 120_000 });
        await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
      },
    });
    ok = true;
  } catch (e) {
    console.error(ts(), '✗ outage stage failed:', stackOf(e));
  }
  writeFileSync(join(rt, 'outage-console.log'), lines.join('\n') + '\n');
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, 'vscode-outage-fail.png') }).catch(() => {});
    copyFileSync(join(rt, 'outage-console.log'), join(resultsDir, 'vscode-outage-console.log'));
    spawnSync('sh', ['-c', `cp "${join(rt, 'shots-outage')}"/*.png "${resultsDir}"/ 2>/dev/null`]);
  }
  return { ok, passed: ok ? 1 : 0, failed: ok ? 0 : 1 };
}

/** code-servers started by this run: a Ctrl-C kills them all. */
const running = new Set();

/**
 * A second workbench with workspace trust on, on a folder nobody trusted (no startup prompt: it
 * stays in restricted mode), running the `untrusted/` suite. Its workspace has an MCP server
 * marked autoStart that would leave a marker if it ever ran. Then code-server is killed and
 * nothing it started may remain.
 */
async function runUntrusted(codeServer, rt, env, version) {
  const userData = join(rt, 'user-data-untrusted');
  const workspace = join(rt, 'workspace-untrusted');
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  writeUserSettings(userData, { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never' });
  const marker = join(workspace, 'mcp-started.marker');
  writeFileSync(
    join(workspace, '.vscode', 'mcp.json'),
    JSON.stringify(
      { servers: { eager: { type: 'stdio', command: 'sh', args: ['-c', `touch '${marker}'; sleep 60`], autoStart: true } } },
      null,
      2,
    ),
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const cs = startCodeServer(codeServer, {
    port,
    userData,
    extensions: join(rt, 'extensions'),
    workspace,
    env: { ...env, EXEC_BRIDGE_TEST_SUITE: 'untrusted' },
    logFile: join(rt, 'code-server-untrusted.log'),
    trust: true,
    extraArgs: extraArgsFor(version),
  });
  running.add(cs);
  let browser;
  let result;
  try {
    await waitHealthy(base, cs, 60_000);
    say('untrusted workspace: a second code-server with workspace trust on');
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, env, args: CHROMIUM_ARGS });
    result = await runMochaPage(browser, base, `127.0.0.1:${port}`, workspace, rt);
  } catch (e) {
    console.error(ts(), '✗ untrusted run:', stackOf(e));
    result = { ok: false, passed: 0, failed: 1 };
  } finally {
    await killGroup(cs);
    await browser?.close().catch(() => {});
  }
  if (existsSync(marker)) {
    console.error(`${ts()} ✗ the autoStart MCP server ran in the untrusted workspace`);
    result = { ok: false, passed: result.passed, failed: result.failed + 1 };
  }
  return result;
}

/** The targets this run tests (VSCODE_TARGETS=min,newest). */
function selectedTargets() {
  const names = (process.env.VSCODE_TARGETS || 'min,newest')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const n of names) if (!VSCODE_TARGETS[n]) fail(`unknown VSCODE_TARGETS entry "${n}" (min, newest)`);
  return names;
}

async function main() {
  if (!existsSync(chromiumPath)) fail(`${chromiumPath} not found (apt-get install chromium ripgrep libkrb5-dev)`);
  const targets = selectedTargets();
  const bins = Object.fromEntries(targets.map((t) => [t, ensureCodeServer(VSCODE_TARGETS[t].codeServer)]));
  if (args.has('--install-only')) return 0;
  if (!existsSync(join(root, 'dist', 'extension.js'))) fail('dist/extension.js missing (npm run build)');
  if (!existsSync(join(outDir, 'test', 'vscode', 'index.js'))) fail(`${outDir}/test/vscode/index.js missing (tsc --outDir ${outDir})`);
  const onSignal = () => {
    // Every code-server of this run (the untrusted and update ones come later), each with its whole group.
    for (const c of running) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const all = [];
  // The update stage's two VSIXs, built once for every target.
  const vsixDir = withUpdate ? mkdtempSync(join(tmpdir(), 'exec-bridge-vsix-')) : undefined;
  try {
    const vsixes = vsixDir ? buildUpdateVsixes(vsixDir) : undefined;
    const pending = [];
    for (const t of targets) {
      const version = VSCODE_TARGETS[t].codeServer;
      say(`=== VS Code ${vscodeVersionOf(version)} (code-server ${version}, ${t}) ===`);
      const { done } = await runTarget(bins[t], version, t, vsixes);
      pending.push(done.then((results) => results.map((r) => ({ ...r, name: `${vscodeVersionOf(version)} ${r.name}` }))));
    }
    say('waiting for the leak checks (the TTLs after the crashes)');
    for (const results of await Promise.all(pending)) all.push(...results);
  } finally {
    if (vsixDir) rmSync(vsixDir, { recursive: true, force: true });
  }
  const passed = all.reduce((n, r) => n + r.passed, 0);
  const failed = all.reduce((n, r) => n + r.failed, 0);
  const ok = all.length > 0 && all.every((r) => r.ok);
  console.log(`${ts()} ${passed} passed, ${failed} failed (${all.map((r) => `${r.name}: ${r.ok ? 'ok' : 'FAILED'}`).join(', ')})`);
  return ok ? 0 : 1;
}

// Which stages run: all by default; --tests-only (mocha), --ui-only (UI, reload, outage),
// --reload-only (reload, outage), --update-only, --outage-only pick fewer.
const only = ['--tests-only', '--ui-only', '--reload-only', '--update-only', '--outage-only'].filter((a) => args.has(a));
const stage = (name) => only.length === 0 || only.some((a) => ONLY[a].includes(name));
const ONLY = {
  '--tests-only': ['mocha', 'untrusted'],
  '--ui-only': ['ui', 'reload', 'outage'],
  '--reload-only': ['reload', 'outage'],
  '--update-only': ['update'],
  '--outage-only': ['outage'],
};
const withUpdate = stage('update');
/**
 * The targets the long outage runs on (EXEC_BRIDGE_OUTAGE_TARGETS, default the newest only: it
 * waits out the outage, 75 s by default, EXEC_BRIDGE_OUTAGE_S).
 */
const outageTargets = (process.env.EXEC_BRIDGE_OUTAGE_TARGETS || 'newest').split(',').map((n) => n.trim());

async function runTarget(codeServer, version, target, vsixes) {
  // Throwaway worlds for code-server, its extension host and chromium, one per code-server of this
  // target (so that each leak check sees only its own). Not under /tmp: the sandbox lets commands
  // write /tmp, and the approval tests need a HOME it does not let them write. (A cache given under
  // /tmp, e.g. EXEC_BRIDGE_VSCODE_CACHE=/tmp/x, must not drag the runs there.)
  const tmpRoots = [...new Set(/** @type {string[]} */ (['/tmp', tmpdir(), process.env.TMPDIR].filter(Boolean)))];
  const underTmp = (p) => tmpRoots.some((t) => p === t || p.startsWith(t.replace(/\/$/, '') + '/'));
  const runsRoot = underTmp(cacheRoot) ? '/var/tmp/exec-bridge-vscode-runs' : join(cacheRoot, 'runs');
  mkdirSync(runsRoot, { recursive: true });
  const newRoot = () => mkdtempSync(join(runsRoot, 'run-'));
  const roots = [];
  const results = [];
  // What waits out the TTLs after a crash (a minute, idle) runs beside the next stages; the target's
  // results are complete once they are all in.
  const later = [];
  if (['mocha', 'ui', 'reload', 'outage'].some(stage)) {
    const rt = newRoot();
    roots.push(rt);
    const main = await runMain(codeServer, version, target, rt);
    results.push(...main.results);
    later.push(main.leakCheck);
  }
  // A VSCODE_TEST_GREP that picks other tests skips it (its suite is "untrusted workspace").
  const grep = process.env.VSCODE_TEST_GREP;
  if (stage('untrusted') && (!grep || new RegExp(grep).test('untrusted workspace'))) {
    const rt = newRoot();
    roots.push(rt);
    const env = {
      ...isolatedWorld(rt).env,
      EXEC_BRIDGE_TEST_VSCODE: vscodeVersionOf(version),
      EXEC_BRIDGE_RUNTIME_DIR: join(rt, 'private'),
      EXEC_BRIDGE_DAEMON_IDLE_MS: String(DAEMON_IDLE_MS),
    };
    results.push({ name: 'untrusted', ...(await runUntrusted(codeServer, rt, env, version)) });
  }
  if (vsixes) {
    const rt = newRoot();
    roots.push(rt);
    // Its window is driven now (the next target's waits for it); its crash's TTLs run beside.
    later.push((await runUpdate(codeServer, rt, version, vsixes)).leakCheck);
  }
  const done = Promise.all(later).then((more) => {
    results.push(...more.flat());
    const ok = results.length > 0 && results.every((r) => r.ok);
    if (!ok) {
      mkdirSync(resultsDir, { recursive: true });
      const csLog = roots[0] && join(roots[0], 'code-server.log');
      if (csLog && existsSync(csLog)) copyFileSync(csLog, join(resultsDir, `vscode-code-server-${version}.log`));
      console.error(`${ts()} logs and screenshots: ${resultsDir}`);
    }
    for (const rt of roots) {
      if (args.has('--keep') || !ok) say(`runtime folder kept: ${rt}`);
      else rmSync(rt, { recursive: true, force: true });
    }
    return results;
  });
  return { done };
}

/** The main code-server of a target: the mocha suites, the UI test, the reload and outage stages, the crash leak check. */
async function runMain(codeServer, version, target, rt) {
  const { env: baseEnv, userData, extensions, workspace } = isolatedWorld(rt);
  // The executor daemon's private directory is the run's own (and so is found by the leak check).
  const env = {
    ...baseEnv,
    EXEC_BRIDGE_TEST_VSCODE: vscodeVersionOf(version),
    EXEC_BRIDGE_RUNTIME_DIR: join(rt, 'private'),
    EXEC_BRIDGE_DAEMON_IDLE_MS: String(DAEMON_IDLE_MS),
  };
  writeUserSettings(userData, { 'execBridge.sessionTtlSeconds': SESSION_TTL_S, ...WHOLE_TERMINAL_TEXT });
  writeFileSync(join(workspace, 'README.txt'), 'Exec Bridge test workspace\n');
  // The test-only language model (mcpSampling suite) as an installed extension of this throwaway
  // profile (the payload takes one development path); it ships nowhere.
  cpSync(join(root, 'test', 'vscode', 'fake-model'), join(extensions, 'exec-bridge-test.fake-model-0.0.1'), { recursive: true });

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const host = `127.0.0.1:${port}`;
  const csLog = join(rt, 'code-server.log');
  const extraArgs = extraArgsFor(version);
  const cs = startCodeServer(codeServer, { port, userData, extensions, workspace, env, logFile: csLog, extraArgs });
  running.add(cs);

  let browser;
  let leaks;
  const results = [];
  try {
    await waitHealthy(base, cs, 60_000);
    say(`code-server ${version} up at ${base}`);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      env,
      args: CHROMIUM_ARGS,
    });
    // The suites run in a multi-root workspace of that one folder: executor folders are added in
    // place (a single-folder window would reload to become a workspace); the UI test keeps the folder.
    const workspaceFile = join(rt, 'tests.code-workspace');
    writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: workspace }] }) + '\n');
    if (stage('mocha')) results.push({ name: 'mocha', ...(await runMochaPage(browser, base, host, workspaceFile, rt)) });
    if (stage('ui')) results.push({ name: 'ui', ...(await runUiPage(browser, base, host, workspace, rt, showsToasts(version))) });
    if (stage('reload')) results.push({ name: 'reload', ...(await runReloadPage(browser, base, host, rt, showsToasts(version))) });
    if (stage('outage') && outageTargets.includes(target))
      results.push({ name: 'outage', ...(await runOutagePage(browser, base, host, rt)) });
  } catch (e) {
    console.error(ts(), '✗', stackOf(e));
    results.push({ name: 'harness', ok: false, passed: 0, failed: 1 });
  } finally {
    // Crash first, with the UI window still connected (closing it would let the extension host
    // shut down cleanly), then close the browser. (`running` is for signals: a crashed group is none.)
    running.delete(cs);
    leaks = crashAndCheckLeaks(cs, rt);
    await closeBrowser(browser, rt);
  }
  const leakCheck = leaks.then((leaked) => {
    if (leaked.length > 0)
      console.error(`${ts()} ✗ processes outlived a crash of the extension host:\n${leaked.map((p) => `  ${p.pid} ${p.cmd}`).join('\n')}`);
    return [
      { name: 'no leaks after a crash', ok: leaked.length === 0, passed: leaked.length === 0 ? 1 : 0, failed: leaked.length === 0 ? 0 : 1 },
    ];
  });
  return { results, leakCheck };
}

// Run only when executed.
if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
