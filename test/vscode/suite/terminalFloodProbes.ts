// Shared by terminalFlood.test.ts (not a suite itself: the runner loads `*.test.js` only): what a
// flood test watches in the extension host, and the two kinds of terminal it types `echo` into.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vscode from 'vscode';
import type { TerminalRun } from '../../../src/core/terminalRun';
import type { ExecBridgeApi, ExecTerminal } from '../../../src/vscode/api';
import { percentile, waitFor, waitForText } from './helpers';

export const MiB = 1024 * 1024;
/** How long a probe waits for its echo before it counts it as unanswered. */
export const ECHO_WAIT_MS = 30_000;

export function p50p95max(xs: number[]): [number, number, number] {
  const s = [...xs].sort((a, b) => a - b);
  return [percentile(s, 50), percentile(s, 95), s[s.length - 1] ?? NaN];
}

/**
 * The extension host is this process: its memory (sampled every 100 ms) and its event-loop delay
 * while a flood runs; `progress` is logged every 2 s.
 */
export function watchHost(progress: () => string) {
  const t0 = Date.now();
  const start = process.memoryUsage();
  let rssPeak = start.rss;
  // External memory is where forwarded-but-unsent terminal data piles up (the socket to the window).
  let externalPeak = start.external;
  let heapPeak = start.heapUsed;
  let heapTotalPeak = start.heapTotal;
  let spacesAtPeak: Record<string, number> = {};
  // Whether the extension host itself stalls (GC pauses, our own work) or the delay is elsewhere (the window).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    rssPeak = Math.max(rssPeak, m.rss);
    externalPeak = Math.max(externalPeak, m.external);
    heapPeak = Math.max(heapPeak, m.heapUsed);
    if (m.heapTotal > heapTotalPeak) {
      heapTotalPeak = m.heapTotal;
      spacesAtPeak = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_size / MiB)]));
    }
  }, 100);
  const logger = setInterval(() => {
    const m = process.memoryUsage();
    const mib = (n: number) => Math.round(n / MiB);
    console.log(
      `flood: ${progress()} after ${Date.now() - t0} ms, rss ${mib(m.rss)} MiB, heap ${mib(m.heapUsed)} MiB, external ${mib(m.external)} MiB`,
    );
  }, 2000);
  return {
    stop() {
      clearInterval(sampler);
      clearInterval(logger);
      loopDelay.disable();
      const end = process.memoryUsage();
      const mib = (n: number) => Math.round(n / MiB);
      return {
        rssBeforeMiB: mib(start.rss),
        rssPeakMiB: mib(rssPeak),
        rssAfterMiB: mib(end.rss),
        rssGrowthMiB: mib(rssPeak - start.rss),
        externalGrowthMiB: mib(externalPeak - start.external),
        heapBeforeMiB: mib(start.heapUsed),
        heapPeakMiB: mib(heapPeak),
        heapGrowthMiB: mib(heapPeak - start.heapUsed),
        heapTotalPeakMiB: mib(heapTotalPeak),
        heapSpacesAtPeakMiB: spacesAtPeak,
        extHostLoopDelayP50ms: Math.round(loopDelay.percentile(50) / 1e6),
        extHostLoopDelayP99ms: Math.round(loopDelay.percentile(99) / 1e6),
        extHostLoopDelayMaxms: Math.round(loopDelay.max / 1e6),
      };
    },
  };
}

/** One `echo` typed into a terminal: when it was answered (or not within ECHO_WAIT_MS). */
export interface Probe {
  readonly name: string;
  /** Types `echo E$((100000+i))` and waits for its `E<100000+i>`; the echo's ms, or undefined if unanswered. */
  echo(i: number): Promise<number | undefined>;
  report(): Record<string, unknown>;
  dispose(): void;
}

function summary(latencies: number[], unanswered: number) {
  const [p50, p95, max] = p50p95max(latencies);
  return { echoSamples: latencies.length + unanswered, echoUnanswered: unanswered, echoP50ms: p50, echoP95ms: p95, echoMaxms: max };
}

/**
 * (a) An Exec Bridge shell: the echo is its output reaching our Pseudoterminal (`onDidWrite`, in the
 * extension host, before the window has it). Also split into sendText → `handleInput` (the window
 * relays the keys) and `handleInput` → the output (executor, shell, our flow).
 */
export async function execBridgeProbe(api: ExecBridgeApi): Promise<Probe> {
  const before = new Set(api.terminals());
  await vscode.commands.executeCommand('execBridge.newShell');
  const shell: ExecTerminal = await waitFor('the Exec Bridge shell', () => api.terminals().find((x) => !before.has(x)));
  shell.terminal.sendText('echo "ready=$((40+2))"');
  await waitForText(shell, /ready=42/, 30_000);
  let tail = '';
  const sub = shell.onDidWrite((text) => (tail = (tail + text).slice(-4096)));
  const model = (shell as unknown as { run: TerminalRun }).run.model;
  let inputAt: number | undefined;
  const handleInput = model.handleInput.bind(model);
  model.handleInput = (keys: string) => {
    inputAt ??= Date.now();
    handleInput(keys);
  };
  const latencies: number[] = [];
  const toInput: number[] = [];
  const inputToEcho: number[] = [];
  let unanswered = 0;
  return {
    name: 'execBridgeShell',
    async echo(i) {
      const marker = `E${100000 + i}`;
      inputAt = undefined;
      const sent = Date.now();
      shell.terminal.sendText(`echo E$((100000+${i}))`);
      const answered = await waitFor(`${marker} in the shell`, () => tail.includes(marker), ECHO_WAIT_MS).catch(() => false);
      if (!answered) return void unanswered++;
      const echoed = Date.now();
      latencies.push(echoed - sent);
      if (inputAt !== undefined) {
        toInput.push(inputAt - sent);
        inputToEcho.push(echoed - inputAt);
      }
      return echoed - sent;
    },
    report: () => ({
      ...summary(latencies, unanswered),
      sendTextToInputP50P95Maxms: p50p95max(toInput),
      inputToEchoP50P95Maxms: p50p95max(inputToEcho),
    }),
    dispose() {
      model.handleInput = handleInput;
      sub.dispose();
      shell.terminal.dispose();
    },
  };
}

/** A local `/bin/bash` in VS Code's own terminal (its pty host), once shell integration is active in it. */
export async function vscodeBash(name: string): Promise<vscode.Terminal> {
  const terminal = vscode.window.createTerminal({ name, shellPath: '/bin/bash' });
  await waitFor(`shell integration in "${name}"`, () => terminal.shellIntegration, 30_000);
  return terminal;
}

/**
 * (b) VS Code's own bash, read through the shell integration API: the echo is
 * `onDidEndTerminalShellExecution` of that `echo` command (its command line, exit 0), which the
 * window fires once it has parsed the command's end mark, so after its output. Also: sendText →
 * the start mark parsed, and → the marker in `execution.read()` where that has it: the window
 * forwards the output it *receives* from the moment it has *parsed* the start mark, so under a
 * flood, when parsing lags, the few bytes of an `echo` have gone by before (seen in code-server
 * 1.139.1: 42 of 43 samples read nothing).
 */
export async function vscodeBashProbe(): Promise<Probe> {
  const terminal = await vscodeBash('VS Code bash (echo probe)');
  interface Sample {
    command: string;
    marker: string;
    text: string;
    startAt?: number;
    markerAt?: number;
    end?: { at: number; commandLine: string; exitCode: number | undefined };
  }
  let current: Sample | undefined;
  const subs = [
    vscode.window.onDidStartTerminalShellExecution((e) => {
      const sample = current;
      if (e.terminal !== terminal || !sample || sample.startAt !== undefined) return;
      sample.startAt = Date.now();
      // Read at once: the stream holds what arrives after read() is called.
      const stream = e.execution.read();
      void (async () => {
        for await (const data of stream) {
          sample.text += data;
          if (sample.markerAt === undefined && sample.text.includes(sample.marker)) sample.markerAt = Date.now();
        }
      })();
    }),
    vscode.window.onDidEndTerminalShellExecution((e) => {
      if (e.terminal !== terminal || !current || current.startAt === undefined) return;
      current.end ??= { at: Date.now(), commandLine: e.execution.commandLine.value, exitCode: e.exitCode };
    }),
  ];
  const latencies: number[] = [];
  const toStart: number[] = [];
  const toMarker: number[] = [];
  let unanswered = 0;
  return {
    name: 'vscodeBash',
    async echo(i) {
      const sample: Sample = { command: `echo E$((100000+${i}))`, marker: `E${100000 + i}`, text: '' };
      current = sample;
      const sent = Date.now();
      terminal.sendText(sample.command);
      const end = await waitFor(`the end of ${sample.command}`, () => sample.end, ECHO_WAIT_MS).catch(() => undefined);
      current = undefined;
      if (!end || end.commandLine.trim() !== sample.command || end.exitCode !== 0) return void unanswered++;
      latencies.push(end.at - sent);
      toStart.push(sample.startAt! - sent);
      if (sample.markerAt !== undefined) toMarker.push(sample.markerAt - sent);
      return end.at - sent;
    },
    report: () => ({
      ...summary(latencies, unanswered),
      sendTextToStartMarkP50P95Maxms: p50p95max(toStart),
      markerReadSamples: toMarker.length,
      sendTextToMarkerReadP50P95Maxms: p50p95max(toMarker),
    }),
    dispose() {
      for (const s of subs) s.dispose();
      terminal.dispose();
    },
  };
}

/**
 * Types into the probes in turn, one echo at a time, 200 ms after the previous answer, until
 * `done()` (bounded: 10 000 echoes, `maxMs`).
 */
export async function typeWhile(probes: Probe[], done: () => boolean, maxMs: number): Promise<void> {
  const t0 = Date.now();
  for (let i = 0; i < 10_000 && !done() && Date.now() - t0 < maxMs; i++) {
    // No probes (a warm-up flood): only the wait.
    if (probes.length > 0) await probes[i % probes.length]!.echo(i);
    await new Promise((r) => setTimeout(r, 200));
  }
}
