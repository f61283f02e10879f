#!/usr/bin/env node
// Executor folders in a REAL VS Code with workspace trust ON, as users have it (the main runner,
// scripts/vscode-test.mjs, turns trust off except for its untrusted stage): the stage
// $OUT_DIR/test/vscode/trust/executorFolder.ui.js trusts a new folder, opens an executor folder
// (the window reopens as a workspace), and checks that the reopened window is trusted without a
// second question, lists the executor folder, shows changes made on the executor, and finds text
// there with Find in Files. On both VS Codes (VSCODE_TARGETS=min|newest|min,newest, default both).
//
// Usage: node scripts/vscode-trust-test.mjs [--keep]
// Env:   OUT_DIR (where tsc compiled the tests, default `out`), EXEC_BRIDGE_VSCODE_CACHE, CHROMIUM,
//        EXEC_BRIDGE_EXTENSION_PATH (the extension folder to load, default this repository: point it
//        at a checkout of an older commit, built, to see the stage fail there).
// Needs: dist/extension.js (npm run build) and $OUT_DIR/test/vscode/trust/*.js.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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

const keep = process.argv.includes('--keep');
const outDir = resolve(root, process.env.OUT_DIR || 'out');
const resultsDir = join(root, 'test-results');
const stagePath = join(outDir, 'test', 'vscode', 'trust', 'executorFolder.ui.js');
const extensionPath = resolve(process.env.EXEC_BRIDGE_EXTENSION_PATH || root);

async function runTarget(target) {
  const version = VSCODE_TARGETS[target].codeServer;
  const bin = ensureCodeServer(version);
  const tmpRoots = [...new Set(/** @type {string[]} */ (['/tmp', tmpdir(), process.env.TMPDIR].filter(Boolean)))];
  const underTmp = (p) => tmpRoots.some((t) => p === t || p.startsWith(t.replace(/\/$/, '') + '/'));
  const runsRoot = underTmp(cacheRoot) ? '/var/tmp/exec-bridge-vscode-runs' : join(cacheRoot, 'runs');
  mkdirSync(runsRoot, { recursive: true });
  const rt = mkdtempSync(join(runsRoot, 'trust-'));
  const { env: baseEnv, userData, extensions, workspace } = isolatedWorld(rt);
  const env = { ...baseEnv, EXEC_BRIDGE_RUNTIME_DIR: join(rt, 'private'), EXEC_BRIDGE_DAEMON_IDLE_MS: '2000' };
  // Trust on, as VS Code ships it (the startup question included).
  writeUserSettings(userData, { 'security.workspace.trust.enabled': true, 'execBridge.sessionTtlSeconds': 20 });
  writeFileSync(join(workspace, 'README.txt'), 'a folder to trust\n');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const cs = startCodeServer(bin, {
    port,
    userData,
    extensions,
    workspace,
    env,
    logFile: join(rt, 'code-server.log'),
    trust: true,
    extraArgs: extraArgsFor(version),
  });
  const name = `VS Code ${vscodeVersionOf(version)}`;
  let ok = false;
  let browser;
  let page;
  const lines = [];
  let step = 0;
  try {
    await waitHealthy(base, cs, 60_000);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, env, args: CHROMIUM_ARGS });
    page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    page.on('console', (m) => lines.push(`[page ${m.type()}] ${m.text()}`));
    const shot = async (label) => {
      mkdirSync(join(rt, 'shots'), { recursive: true });
      await page.screenshot({ path: join(rt, 'shots', `${String(++step).padStart(2, '0')}-${label}.png`) }).catch(() => {});
    };
    const payload = encodeURIComponent(JSON.stringify([['extensionDevelopmentPath', `vscode-remote://127.0.0.1:${port}${extensionPath}`]]));
    const workspaceUrl = (file) => `${base}/?workspace=${encodeURIComponent(file)}&payload=${payload}`;
    await page.goto(`${base}/?folder=${encodeURIComponent(workspace)}&payload=${payload}`, {
      waitUntil: 'domcontentloaded',
      timeout: 120_000,
    });
    await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
    const stage = await import(pathToFileURL(stagePath).href);
    say(`${name}: trusted executor folder stage`);
    await stage.drive({
      page,
      log: (...a) => say(`${name}:`, ...a),
      shot,
      workspace,
      userData,
      workspaceUrl,
      toasts: showsToasts(version),
    });
    ok = true;
  } catch (e) {
    console.error(ts(), `✗ ${name}: ${stackOf(e)}`);
    mkdirSync(join(rt, 'shots'), { recursive: true });
    await page?.screenshot({ path: join(rt, 'shots', 'zz-failure.png') }).catch(() => {});
  } finally {
    writeFileSync(join(rt, 'page-console.log'), lines.join('\n') + '\n');
    await killGroup(cs);
    await browser?.close().catch(() => {});
    // The bundled executor daemon exits by itself once idle (2 s here, after its sessions' 20 s TTL): do not wait, end it.
    for (const { pid } of processesMentioning(rt)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  if (!ok) {
    mkdirSync(resultsDir, { recursive: true });
    const out = join(resultsDir, `vscode-trust-${version}`);
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    for (const f of ['code-server.log', 'page-console.log']) writeFileSync(join(out, f), readFileSync(join(rt, f)));
    try {
      for (const f of readdirSync(join(rt, 'shots'))) writeFileSync(join(out, f), readFileSync(join(rt, 'shots', f)));
    } catch {
      // no screenshots
    }
    say(`${name}: logs and screenshots in ${out}`);
  }
  if (keep || !ok) say(`${name}: runtime folder kept: ${rt}`);
  else rmSync(rt, { recursive: true, force: true });
  return { name, ok };
}

async function main() {
  if (!readdirSync(join(extensionPath, 'dist')).includes('extension.js'))
    fail(`${extensionPath}/dist/extension.js missing (npm run build)`);
  try {
    readFileSync(stagePath);
  } catch {
    fail(`${stagePath} missing (compile with tsc --outDir ${outDir})`);
  }
  const targets = (process.env.VSCODE_TARGETS || 'min,newest')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  for (const t of targets) if (!VSCODE_TARGETS[t]) fail(`unknown VSCODE_TARGETS entry "${t}" (min, newest)`);
  const results = [];
  for (const t of targets) results.push(await runTarget(t));
  const passed = results.filter((r) => r.ok).length;
  console.log(
    `${ts()} trust stage: ${passed} passed, ${results.length - passed} failed (${results.map((r) => `${r.name}: ${r.ok ? 'ok' : 'FAILED'}`).join(', ')})`,
  );
  return passed === results.length ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
