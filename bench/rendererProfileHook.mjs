// A measurement hook for the mocha page of scripts/vscode-test.mjs (EXEC_BRIDGE_MOCHA_PAGE_HOOK=<this file>):
// records the window's (renderer's) main thread while the suites run — a V8 CPU profile through
// Playwright's CDP session, and every long task (> 50 ms) the page reports — and writes a summary:
// where the renderer's CPU went (self time by function and by script), and how long it was blocked.
// Used for the terminal flood (bench/RESULTS.md, "Floods into a terminal"). Not a test.
//
//   EXEC_BRIDGE_RENDERER_PROFILE_OUT=<dir> (default test-results/renderer-profile)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const outDir = resolve(process.env.EXEC_BRIDGE_RENDERER_PROFILE_OUT || 'test-results/renderer-profile');

/** Self time per function (ms) from a V8 CPU profile. */
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dts = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (dts[i + 1] ?? 0) / 1000;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const byFn = new Map();
  const byUrl = new Map();
  let total = 0;
  for (const [id, ms] of self) {
    const cf = byId.get(id).callFrame;
    const url = cf.url.replace(/^.*\/(static|out|node_modules)\//, '$1/').replace(/\?.*$/, '');
    const fn = `${cf.functionName || '(anonymous)'} ${url.split('/').pop()}:${cf.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + ms);
    const key = cf.url ? url : cf.functionName;
    byUrl.set(key, (byUrl.get(key) ?? 0) + ms);
    total += ms;
  }
  const top = (m, n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${v.toFixed(0).padStart(7)} ms ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  return { totalMs: total, topFunctions: top(byFn, 40), topScripts: top(byUrl, 15) };
}

export async function attach({ page, context, say }) {
  mkdirSync(outDir, { recursive: true });
  await page.evaluate(() => {
    // The page's window, untyped: this function runs in the browser (Node's types do not apply).
    const w = /** @type {any} */ (globalThis);
    w.__ebLongTasks = [];
    new w.PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__ebLongTasks.push([Math.round(e.startTime), Math.round(e.duration)]);
    }).observe({ type: 'longtask', buffered: true });
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
  await cdp.send('Profiler.start');
  const t0 = Date.now();
  say(`renderer profile: recording (${outDir})`);
  return async function stop() {
    const { profile } = await cdp.send('Profiler.stop');
    const seconds = (Date.now() - t0) / 1000;
    writeFileSync(join(outDir, 'renderer.cpuprofile'), JSON.stringify(profile));
    const longTasks = await page.evaluate(() => /** @type {any} */ (globalThis).__ebLongTasks ?? []);
    const durations = longTasks.map((t) => t[1]).sort((a, b) => a - b);
    const pct = (p) => durations[Math.min(durations.length - 1, Math.floor((p / 100) * durations.length))] ?? 0;
    const summary = {
      seconds,
      ...selfTimes(profile),
      longTasks: {
        count: durations.length,
        totalMs: durations.reduce((a, b) => a + b, 0),
        p50: pct(50),
        p95: pct(95),
        max: durations[durations.length - 1] ?? 0,
      },
      longTaskList: longTasks,
    };
    writeFileSync(join(outDir, 'summary.json'), JSON.stringify(summary, null, 2));
    say(
      `renderer profile: ${seconds.toFixed(0)} s, CPU ${(summary.totalMs / 1000).toFixed(1)} s sampled, long tasks ${durations.length} (${summary.longTasks.totalMs} ms, p50 ${summary.longTasks.p50} / p95 ${summary.longTasks.p95} / max ${summary.longTasks.max} ms)`,
    );
    await cdp.detach().catch(() => {});
  };
}
