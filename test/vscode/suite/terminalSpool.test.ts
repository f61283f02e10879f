import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { TerminalRun } from '../../../src/core/terminalRun';
import type { ExecTerminal } from '../../../src/vscode/api';
import type { OpenedFullOutput } from '../../../src/vscode/terminalOutput';
import { getApi, percentile, plain, startExecServer, waitFor, waitForText, withSettings } from './helpers';

/*
 * Issue 27 in a real VS Code: a command prints while its window is gone (nobody reads it), and the
 * terminal the window reopens gets what it can hold: one notice line (how much earlier output is
 * not shown, why, Exec Bridge: Open Full Output, how much the spool cap dropped), then exactly the
 * newest scrollback + rows lines, byte-exact, then live output with nothing twice or skipped at the
 * seam. Open Full Output's document is every byte the executor kept. The "new window" is the
 * executor dropped from the settings and added again: its connection is disposed (the session
 * detaches, the command runs on into the spool), and the next connect resumes the remembered
 * session and reopens its terminal through TerminalFeature.restore, the same path a window reload
 * takes. Meanwhile a shell on the bundled executor is typed into: the echo times and the time to
 * the prompt are reported (bench/RESULTS.md), not asserted. With execBridge.reopenedTerminalReplayMiB
 * 0 (everything) and a scrollback that holds it, the same terminal is given every byte the executor
 * kept, from the first, after a notice that says only what the cap dropped.
 *
 * Sizes: by default 12 MiB printed against a 4 MiB per-process cap; the issue's figure is 200 MiB
 * against the default 64 MiB (VSCODE_TEST_GREP='reopenedTerminalReplayMiB 0' picks the "everything" case):
 *   EXEC_BRIDGE_SPOOL_PRINT_BYTES=209715200 EXEC_BRIDGE_SPOOL_CAP_BYTES=67108864 (bench/RESULTS.md).
 */
const MiB = 1024 * 1024;
const CAP = Number(process.env.EXEC_BRIDGE_SPOOL_CAP_BYTES ?? 4 * MiB);
const TOTAL = Number(process.env.EXEC_BRIDGE_SPOOL_PRINT_BYTES ?? 3 * CAP);
/** Line k is k in 15 digits and "\n": the byte at any offset is known. */
const LINE = 16;
/** Lines printed after the reopened terminal showed its replay: live output across the seam. */
const LIVE = 10;
/** terminal.integrated.scrollback for this suite (not VS Code's default, so the test sees it is read). */
const SCROLLBACK = 700;
/**
 * The scrollback of the "everything" case: every line the cap keeps, and rows to spare. xterm keeps
 * each line at the terminal's full width (~1 KiB at 80 columns), so at the issue's sizes (4.2 M
 * lines of 16 bytes) it is held to 300 000 lines (EXEC_BRIDGE_SPOOL_SCROLLBACK sets it): what the
 * terminal is given does not depend on it in that mode, what the window keeps does.
 */
const BIG_SCROLLBACK = Number(process.env.EXEC_BRIDGE_SPOOL_SCROLLBACK ?? Math.min(CAP / LINE + 1000, 300_000));
const STATUS_REQUEST = '\x1b[5n';

/** The generator's bytes at [offset, offset + length), hashed (built a MiB at a time). */
function expectedDigest(offset: number, length: number): string {
  const h = createHash('sha256');
  for (let at = offset; at < offset + length;) {
    const first = Math.floor(at / LINE);
    const n = Math.min(MiB / LINE, Math.ceil((offset + length - at) / LINE) + 1);
    const b = Buffer.allocUnsafe(n * LINE);
    for (let i = 0; i < n; i++) b.write(String(first + i).padStart(15, '0') + '\n', i * LINE, 'latin1');
    const from = at - first * LINE;
    const take = Math.min(b.length - from, offset + length - at);
    h.update(b.subarray(from, from + take));
    at += take;
  }
  return h.digest('hex');
}

/**
 * Everything a reopened terminal was given, checked as it comes without keeping it: the notice
 * lines, then the replayed output (`\r\n` back to `\n`, escape sequences and status requests left
 * out), then the exit line. The output is hashed and its lines must be consecutive numbers.
 */
function replayChecker(t: ExecTerminal) {
  const hash = createHash('sha256');
  const notices: string[] = [];
  let carry = '';
  let bytes = 0;
  /** A first line that is not a whole numbered line (the replay started inside a line). */
  let fragment: string | undefined;
  let firstLine: number | undefined;
  let next: number | undefined;
  let badLine: string | undefined;
  let stage: 'notices' | 'output' | 'after' = 'notices';
  let firstOutputAt: number | undefined;
  const line = (l: string) => {
    const digits = /^\d+$/.test(l);
    if (stage === 'notices' && digits) stage = 'output';
    else if (stage === 'output' && !digits) stage = 'after';
    if (stage !== 'output') {
      notices.push(l);
      return;
    }
    firstOutputAt ??= Date.now();
    hash.update(l + '\n');
    bytes += l.length + 1;
    if (fragment === undefined) {
      fragment = l.length < 15 ? l : '';
      if (fragment) return;
    }
    const k = Number(l);
    if (l.length !== 15 || (next !== undefined && k !== next)) badLine ??= `${JSON.stringify(l)} where ${next} was due`;
    firstLine ??= k;
    next = k + 1;
  };
  const sub = t.onDidWrite((text) => {
    if (text === STATUS_REQUEST) return;
    const s = carry + plain(text);
    const parts = s.split('\n');
    carry = parts.pop()!;
    for (const p of parts) line(p.endsWith('\r') ? p.slice(0, -1) : p);
  });
  return {
    dispose: () => sub.dispose(),
    get outputBytes() {
      return bytes;
    },
    get lastLine() {
      return next === undefined ? undefined : next - 1;
    },
    result() {
      if (carry) line(carry);
      const offset = firstLine === undefined ? TOTAL : firstLine * LINE - (fragment?.length ? fragment.length + 1 : 0);
      return {
        notices,
        offset,
        bytes,
        digest: hash.digest('hex'),
        badLine,
        fragment,
        lastLine: next === undefined ? undefined : next - 1,
        firstOutputAt,
      };
    },
  };
}

/**
 * The scenario of this suite: a shell on the bundled executor, a command on the spooled one that
 * prints TOTAL bytes while its window is gone, the executor back and its terminal reopened (its
 * replay checked as it comes), the shell typed into meanwhile, then LIVE lines across the seam.
 */
async function printWhileGoneThenReopen(config: { name: string; url: string }, dir: string, label: string) {
  const api = await getApi();
  const settings = vscode.workspace.getConfiguration('execBridge');
  assert.equal((await api.connect('spooled')).kind, 'connected');
  // A shell on the bundled executor: typed into while the terminal reopens.
  const before = new Set(api.terminals());
  await vscode.commands.executeCommand('execBridge.newShell');
  const shell = await waitFor('the shell terminal', () => api.terminals().find((x) => !before.has(x)));
  shell.terminal.sendText('echo "ready=$((40+2))"');
  await waitForText(shell, /ready=42/, 30_000);

  const gate = join(dir, 'gate');
  const done = join(dir, 'done');
  const live = join(dir, 'live');
  for (const f of [gate, done, live]) rmSync(f, { force: true });
  const lines = TOTAL / LINE;
  // `: label`: each test's command line is its own (terminals are found by it).
  const command =
    `: ${label}; echo armed; while [ ! -e ${gate} ]; do sleep 0.05; done; seq -f '%015.0f' 0 ${lines - 1}; touch ${done}; ` +
    `while [ ! -e ${live} ]; do sleep 0.05; done; seq -f '%015.0f' ${lines} ${lines + LIVE - 1}`;
  await vscode.commands.executeCommand('execBridge.runCommand', command, 'spooled');
  const first = await waitFor('the terminal', () => api.terminals().find((t) => t.commandLine === command));
  await waitForText(first, /^armed\r?$/m, 30_000);

  // The window goes: its connection to the executor is disposed, the session detaches.
  await settings.update('executors', [], vscode.ConfigurationTarget.Workspace);
  await waitFor('the executor gone', () => !api.executorNames().includes('spooled'));
  writeFileSync(gate, '');
  const t0 = Date.now();
  await waitFor('the detached command to print everything', () => existsSync(done), 300_000);
  const printMs = Date.now() - t0;

  // A new window: the executor is back, the remembered session resumes, its terminal reopens.
  let reopened: ExecTerminal | undefined;
  let checker: ReturnType<typeof replayChecker> | undefined;
  const opened = api.onDidOpenTerminal((t) => {
    if (t.commandLine !== command || t === first || reopened) return;
    reopened = t;
    checker = replayChecker(t);
  });
  await settings.update('executors', [config], vscode.ConfigurationTarget.Workspace);
  await waitFor('the executor back', () => api.executorNames().includes('spooled'));
  const reconnectAt = Date.now();
  assert.equal((await api.connect('spooled')).kind, 'connected');
  const t = await waitFor('the reopened terminal', () => reopened, 30_000);
  opened.dispose();
  first.terminal.dispose();

  // Keystroke to echo in the shell while the terminal reopens (one command at a time), until
  // its replay is shown and at least 20 samples (about 5 s) were taken.
  let shellTail = '';
  const shellSub = shell.onDidWrite((text) => (shellTail = (shellTail + text).slice(-4096)));
  const latencies: number[] = [];
  // The extension host's longest stall during each sample: the echo of our shell goes through it.
  const stalls: number[] = [];
  // Where each echo's time goes: sendText → the keys at our Pseudoterminal (`handleInput`: the
  // window relayed them), then → the shell's echo back in the extension host (executor and us).
  const toInput: number[] = [];
  const shellModel = (shell as unknown as { run: TerminalRun }).run.model;
  let inputAt: number | undefined;
  const shellInput = shellModel.handleInput.bind(shellModel);
  shellModel.handleInput = (keys: string) => {
    inputAt ??= Date.now();
    shellInput(keys);
  };
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  let shownAt: number | undefined;
  const replayShown = () => (shownAt ??= checker!.lastLine === lines - 1 ? Date.now() : undefined) !== undefined;
  for (let i = 0; i < 10_000 && !(replayShown() && latencies.length >= 20) && Date.now() - reconnectAt < 240_000; i++) {
    const marker = `S${100000 + i}`;
    const sent = Date.now();
    loopDelay.reset();
    inputAt = undefined;
    shell.terminal.sendText(`echo S$((100000+${i}))`);
    await waitFor(`${marker} in the shell`, () => shellTail.includes(marker), 60_000);
    latencies.push(Date.now() - sent);
    stalls.push(Math.round(loopDelay.max / 1e6));
    toInput.push(inputAt === undefined ? NaN : inputAt - sent);
    await new Promise((r) => setTimeout(r, 200));
  }
  await waitFor('the replay shown', replayShown, 240_000);
  loopDelay.disable();
  shellModel.handleInput = shellInput;
  shellSub.dispose();
  // Live output after the replay: the seam.
  writeFileSync(live, '');
  await t.done;
  checker!.dispose();
  const r = checker!.result();
  const replay = (t as unknown as { run: TerminalRun }).run.replay;
  const sorted = [...latencies].sort((a, b) => a - b);
  const report = {
    printedMiB: TOTAL / MiB,
    capMiB: CAP / MiB,
    scrollback: replay?.scrollback,
    replayLines: replay?.lines,
    detachedPrintS: Number((printMs / 1000).toFixed(1)),
    replayedKiB: Number(((r.bytes - LIVE * LINE) / 1024).toFixed(1)),
    firstOutputAfterMs: r.firstOutputAt === undefined ? undefined : r.firstOutputAt - reconnectAt,
    reconnectToPromptMs: shownAt === undefined ? undefined : shownAt - reconnectAt,
    echoSamples: latencies.length,
    echoP50ms: percentile(sorted, 50),
    echoP95ms: percentile(sorted, 95),
    echoMaxms: sorted[sorted.length - 1],
    echoMs: latencies,
    extHostStallMs: stalls,
    sendTextToInputMs: toInput,
  };
  return { t, r, replay, latencies, report, shell };
}

suite('terminal reopened from the output spool', () => {
  let server: Awaited<ReturnType<typeof startExecServer>>;
  let restore: () => Promise<void>;
  let scrollbackBefore: unknown;
  let dir: string;
  let config: { name: string; url: string };
  const terminalSettings = () => vscode.workspace.getConfiguration('terminal.integrated');

  suiteSetup(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exec-bridge-spool-vscode-'));
    server = await startExecServer(['--session-ttl-ms', '600000', '--spool-process-bytes', String(CAP)]);
    config = { name: 'spooled', url: server.url };
    restore = await withSettings({ executors: [config], sandbox: 'full-access', sandboxNetwork: true });
    scrollbackBefore = terminalSettings().inspect('scrollback')?.workspaceValue;
    await terminalSettings().update('scrollback', SCROLLBACK, vscode.ConfigurationTarget.Workspace);
    const api = await getApi();
    await waitFor('the spooled executor in the list', () => api.executorNames().includes('spooled'));
  });
  suiteTeardown(async () => {
    await terminalSettings().update('scrollback', scrollbackBefore, vscode.ConfigurationTarget.Workspace);
    await restore?.();
    server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a command that printed while nobody read it: the reopened terminal gets the notice and exactly its newest lines, then live output; Open Full Output has every byte the executor kept', async function () {
    this.timeout(600_000);
    const { t, r, replay, latencies, report, shell } = await printWhileGoneThenReopen(config, dir, 'newest');

    // Open Full Output, on that terminal (its context menu passes it): every byte the executor kept.
    const copyAt = Date.now();
    const full = await vscode.commands.executeCommand<OpenedFullOutput | undefined>('execBridge.openFullOutput', t.terminal);
    const copyMs = Date.now() - copyAt;
    console.log(
      `terminal spool reopen: ${JSON.stringify({ ...report, fullOutputMiB: full ? Number((full.bytes / MiB).toFixed(2)) : undefined, fullOutputS: Number((copyMs / 1000).toFixed(1)), notices: r.notices })}`,
    );

    assert.ok(replay, 'the reopened terminal says where its replay started');
    assert.equal(replay.scrollback, SCROLLBACK, 'the scrollback is the user’s terminal.integrated.scrollback');
    assert.equal(replay.limit, 'lines');
    assert.equal(r.badLine, undefined, 'the lines given are consecutive, the live ones after the replayed ones');
    assert.equal(r.fragment, '', 'the replay starts at a line boundary');
    assert.equal(r.offset + r.bytes, TOTAL + LIVE * LINE, `given [${r.offset}, ${r.offset + r.bytes}) of ${TOTAL + LIVE * LINE}`);
    assert.equal(r.bytes / LINE - LIVE, replay.lines, 'exactly scrollback + rows lines replayed');
    assert.ok(replay.lines > SCROLLBACK && replay.lines < SCROLLBACK + 500, `${replay.lines} lines`);
    assert.equal(r.digest, expectedDigest(r.offset, r.bytes), 'what the terminal was given is the command’s, byte-exact');
    const said = r.notices.filter((n) => /reopened after the window reload/.test(n));
    assert.equal(said.length, 1, JSON.stringify(r.notices));
    const m =
      /; ([\d.]+) MiB of earlier output is not shown here \(more than the terminal's (\d+) lines of scrollback\): Exec Bridge: Open Full Output; ([\d.]+) MiB before that was dropped \(spool cap (\d+) MiB\)$/.exec(
        said[0] ?? '',
      );
    assert.ok(m, said[0]);
    assert.equal(Number(m[2]), SCROLLBACK);
    assert.equal(Number(m[4]), CAP / MiB);
    // Not shown plus dropped is everything before the first byte given, each to 0.1 MiB.
    assert.ok(Math.abs(Number(m[1]) + Number(m[3]) - r.offset / MiB) <= 0.1, `${said[0]} (before the first byte given: ${r.offset} bytes)`);
    assert.match(r.notices.at(-1) ?? '', /exit code 0 — press any key to close/);
    assert.equal(t.exitCode, 0);
    assert.ok(latencies.length >= 20, 'the other terminal answered every command');

    assert.ok(full, 'Open Full Output copied the output');
    assert.equal(full.spooled, true);
    assert.equal(full.gap, false);
    // The command's output is "armed\n", then the numbered lines.
    const armed = 'armed\n'.length;
    const dropped = full.droppedBytes ?? 0;
    assert.equal(full.bytes + dropped, armed + TOTAL + LIVE * LINE, `${full.bytes} copied, ${dropped} dropped`);
    assert.ok(dropped >= armed);
    assert.ok(full.bytes <= CAP && full.bytes > CAP - 256 * 1024, `${full.bytes} bytes kept, cap ${CAP}`);
    const h = createHash('sha256');
    for await (const piece of createReadStream(full.file)) h.update(piece as Buffer);
    assert.equal(h.digest('hex'), expectedDigest(dropped - armed, full.bytes), 'the copy is what the executor kept, byte-exact');
    // Shown in an editor, read-only (documents above 50 MB never reach the extension host: the tab says what it shows).
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(tab?.input instanceof vscode.TabInputText, tab?.label);
    assert.equal(tab.input.uri.toString(), full.uri.toString(), 'the copy is shown in an editor');
    const stat = await vscode.workspace.fs.stat(full.uri);
    assert.equal(stat.size, full.bytes);
    assert.equal(stat.permissions, vscode.FilePermission.Readonly);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    t.terminal.dispose();
    shell.terminal.dispose();
  });

  test('execBridge.reopenedTerminalReplayMiB 0 (everything) and a scrollback that holds it: the reopened terminal is given every byte the executor kept, from the first, after the line saying what the cap dropped', async function () {
    this.timeout(600_000);
    const restoreReplay = await withSettings({ reopenedTerminalReplayMiB: 0 });
    await terminalSettings().update('scrollback', BIG_SCROLLBACK, vscode.ConfigurationTarget.Workspace);
    try {
      const { t, r, replay, report, shell } = await printWhileGoneThenReopen(config, dir, 'everything');
      console.log(`terminal spool reopen, everything: ${JSON.stringify({ ...report, notices: r.notices, load: loadavg()[0] })}`);
      assert.ok(replay, 'the reopened terminal says where its replay started');
      assert.equal(replay.limit, 'none', 'nothing held is left out');
      assert.equal(replay.maxBytes, Number.POSITIVE_INFINITY, 'the setting reached attachNewest');
      assert.equal(replay.scrollback, BIG_SCROLLBACK);
      assert.equal(r.badLine, undefined, 'the lines given are consecutive, the live ones after the replayed ones');
      assert.equal(r.offset + r.bytes, TOTAL + LIVE * LINE, `given [${r.offset}, ${r.offset + r.bytes}) of ${TOTAL + LIVE * LINE}`);
      // Every byte the executor kept: the newest CAP, to the event the cap dropped last.
      const replayed = r.bytes - LIVE * LINE;
      assert.ok(replayed <= CAP && replayed > CAP - 256 * 1024, `${replayed} bytes replayed, cap ${CAP}`);
      assert.equal(r.digest, expectedDigest(r.offset, r.bytes), 'what the terminal was given is the command’s, byte-exact');
      const said = r.notices.filter((n) => /reopened after the window reload/.test(n));
      assert.equal(said.length, 1, JSON.stringify(r.notices));
      const m = /^↻ reopened after the window reload; ([\d.]+) MiB of earlier output was dropped \(spool cap (\d+) MiB\)$/.exec(
        said[0] ?? '',
      );
      assert.ok(m, said[0]);
      assert.equal(Number(m[2]), CAP / MiB);
      // Dropped is "armed" and everything before the first byte given, to 0.1 MiB.
      assert.ok(Math.abs(Number(m[1]) - r.offset / MiB) <= 0.1, `${said[0]} (before the first byte given: ${r.offset} bytes)`);
      assert.match(r.notices.at(-1) ?? '', /exit code 0 — press any key to close/);
      assert.equal(t.exitCode, 0);
      t.terminal.dispose();
      shell.terminal.dispose();
    } finally {
      await terminalSettings().update('scrollback', SCROLLBACK, vscode.ConfigurationTarget.Workspace);
      await restoreReplay();
    }
  });
});
