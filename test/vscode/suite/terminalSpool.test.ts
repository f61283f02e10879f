import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { ExecTerminal } from '../../../src/vscode/api';
import { getApi, plain, startExecServer, waitFor, waitForText, withSettings } from './helpers';

/*
 * Issue 27 item 3 in a real VS Code: a command prints while its window is gone (nobody reads it),
 * and the terminal the window reopens shows the newest cap's worth of it byte-exact, after one
 * line saying how much was dropped. The "new window" is the executor dropped from the settings and
 * added again: its connection is disposed (the session detaches, the command runs on into the
 * spool), and the next connect resumes the remembered session and reopens its terminal through
 * TerminalFeature.restore, the same path a window reload takes.
 *
 * Sizes: by default 12 MiB printed against a 4 MiB per-process cap (the mocha page has 180 s
 * for every suite); the figure is 200 MiB against the default 64 MiB:
 *   EXEC_BRIDGE_SPOOL_PRINT_BYTES=209715200 EXEC_BRIDGE_SPOOL_CAP_BYTES=67108864 (bench/RESULTS.md).
 */
const MiB = 1024 * 1024;
const CAP = Number(process.env.EXEC_BRIDGE_SPOOL_CAP_BYTES ?? 4 * MiB);
const TOTAL = Number(process.env.EXEC_BRIDGE_SPOOL_PRINT_BYTES ?? 3 * CAP);
/** Line k is k in 15 digits and "\n": the byte at any offset is known. */
const LINE = 16;
const STATUS_REQUEST = '\x1b[5n';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

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
      // The cap cuts between whole chunks, so the first line may be the end of one.
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
    result() {
      if (carry) line(carry);
      const offset = firstLine === undefined ? TOTAL : firstLine * LINE - (fragment?.length ? fragment.length + 1 : 0);
      return {
        notices,
        offset,
        bytes,
        digest: hash.digest('hex'),
        badLine,
        lastLine: next === undefined ? undefined : next - 1,
        firstOutputAt,
      };
    },
  };
}

suite('terminal reopened from the output spool', () => {
  let server: Awaited<ReturnType<typeof startExecServer>>;
  let restore: () => Promise<void>;
  let dir: string;
  let config: { name: string; url: string };

  suiteSetup(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exec-bridge-spool-vscode-'));
    server = await startExecServer(['--session-ttl-ms', '600000', '--spool-process-bytes', String(CAP)]);
    config = { name: 'spooled', url: server.url };
    restore = await withSettings({ executors: [config], sandbox: 'full-access', sandboxNetwork: true });
    const api = await getApi();
    await waitFor('the spooled executor in the list', () => api.executorNames().includes('spooled'));
  });
  suiteTeardown(async () => {
    await restore?.();
    server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a command that printed while nobody read it: the reopened terminal shows the newest cap of it byte-exact, after one line saying what was dropped', async function () {
    this.timeout(600_000);
    const api = await getApi();
    const settings = vscode.workspace.getConfiguration('execBridge');
    assert.equal((await api.connect('spooled')).kind, 'connected');
    // A shell on the bundled executor: typed into while the reopened terminal replays.
    const before = new Set(api.terminals());
    await vscode.commands.executeCommand('execBridge.newShell');
    const shell = await waitFor('the shell terminal', () => api.terminals().find((x) => !before.has(x)));
    shell.terminal.sendText('echo "ready=$((40+2))"');
    await waitForText(shell, /ready=42/, 30_000);

    const gate = join(dir, 'gate');
    const done = join(dir, 'done');
    const command = `echo armed; while [ ! -e ${gate} ]; do sleep 0.05; done; seq -f '%015.0f' 0 ${TOTAL / LINE - 1}; touch ${done}`;
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

    // Keystroke to echo in the shell while the replay runs: one command at a time.
    let shellTail = '';
    const shellSub = shell.onDidWrite((text) => (shellTail = (shellTail + text).slice(-4096)));
    const latencies: number[] = [];
    let timedOut = 0;
    let finished = false;
    void t.done.then(() => (finished = true));
    for (let i = 0; i < 10_000 && !finished && Date.now() - reconnectAt < 400_000; i++) {
      const marker = `S${100000 + i}`;
      const sent = Date.now();
      shell.terminal.sendText(`echo S$((100000+${i}))`);
      try {
        await waitFor(`${marker} in the shell`, () => shellTail.includes(marker), 10_000);
        latencies.push(Date.now() - sent);
      } catch {
        timedOut++;
        latencies.push(10_000);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await t.done;
    const endAt = Date.now();
    shellSub.dispose();
    checker!.dispose();
    const r = checker!.result();
    const sorted = [...latencies].sort((a, b) => a - b);
    const report = {
      printedMiB: TOTAL / MiB,
      capMiB: CAP / MiB,
      detachedPrintS: Number((printMs / 1000).toFixed(1)),
      replayedMiB: Number((r.bytes / MiB).toFixed(2)),
      reconnectToExitLineS: Number(((endAt - reconnectAt) / 1000).toFixed(1)),
      firstOutputAfterMs: r.firstOutputAt === undefined ? undefined : r.firstOutputAt - reconnectAt,
      replayMiBPerS: r.firstOutputAt === undefined ? undefined : Number((r.bytes / MiB / ((endAt - r.firstOutputAt) / 1000)).toFixed(2)),
      echoSamples: latencies.length,
      echoP50ms: percentile(sorted, 50),
      echoP95ms: percentile(sorted, 95),
      echoMaxms: sorted[sorted.length - 1],
      echoTimedOut: timedOut,
      notices: r.notices,
    };
    console.log(`terminal spool reopen: ${JSON.stringify(report)}`);

    assert.equal(r.badLine, undefined, 'the replayed lines are consecutive');
    // The newest cap's worth (to the cap's granularity: whole chunks, an index entry of ~16 KiB), to the last byte.
    assert.equal(r.offset + r.bytes, TOTAL, `replayed [${r.offset}, ${r.offset + r.bytes}) of ${TOTAL}`);
    assert.ok(r.bytes <= CAP && r.bytes > CAP - 256 * 1024, `${r.bytes} bytes replayed, cap ${CAP}`);
    assert.equal(r.digest, expectedDigest(r.offset, r.bytes), 'the replayed bytes are the command’s, byte-exact');
    const dropped = r.notices.filter((n) => /reopened after the window reload/.test(n));
    assert.equal(dropped.length, 1, JSON.stringify(r.notices));
    // It names what was dropped: everything before the first byte shown, to the notice's precision
    // (0.1 MiB). The server's count has been seen a few KiB off the offset ("8.0 MiB" with exactly
    // 8 MiB not shown): open under issue 27.
    const said = /; ([\d.]+) MiB of earlier output was dropped \(spool cap (\d+) MiB\)$/.exec(dropped[0] ?? '');
    assert.ok(said, dropped[0]);
    assert.ok(Math.abs(Number(said[1]) - r.offset / MiB) <= 0.05, `${dropped[0]} (not shown: ${r.offset} bytes)`);
    assert.equal(Number(said[2]), CAP / MiB);
    assert.match(r.notices.at(-1) ?? '', /exit code 0 — press any key to close/);
    assert.equal(t.exitCode, 0);
    assert.equal(timedOut, 0, 'the other terminal answered every command within 10 s');
    assert.ok(report.echoP50ms <= 1000, `echo p50 ${report.echoP50ms} ms`);
    t.terminal.dispose();
    shell.terminal.dispose();
  });
});
