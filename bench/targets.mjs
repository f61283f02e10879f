// Issue 26's targets, every one, judged from the figures of one `npm run bench` run (ratios within
// the run). A target whose phase did not run says so ("not measured") instead of a verdict.

/** @param {number[]} values @param {number} p */
export function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

/** @param {number | undefined} v */
export const fmt = (v, d = 2) => (v !== undefined && Number.isFinite(v) ? v.toFixed(d) : 'n/a');

/**
 * The variants of bench/sandbox.mjs the start target is judged on (its names), the default agent policy first.
 * @type {[string, string][]}
 */
const SANDBOX_VARIANTS = [
  ['workspace-write, network off (bwrap + seccomp)', 'workspace-write, network off'],
  ['read-only, network off (bwrap + seccomp)', 'read-only, network off'],
  ['read-only, network on (bwrap)', 'read-only, network on'],
  ['workspace-write, managed network (bwrap + bridge + seccomp)', 'workspace-write, managed network'],
];

/**
 * The rows `| item | target | measured | met |`.
 * @param {{ results: any, roundTrips?: { json?: any }, runPipe?: { json?: any },
 *   sandbox?: { json?: any }, vscode?: { json?: any } }} f
 */
export function issue26Targets({ results, roundTrips, runPipe, sandbox, vscode }) {
  /** @type {[string, string, string, boolean | undefined][]} */
  const rows = [];
  /** @param {string} item @param {string} target @param {string | undefined} measured @param {boolean | undefined} ok */
  const t = (item, target, measured, ok) =>
    rows.push([item, target, measured ?? 'not measured (phase not run)', measured === undefined ? undefined : ok]);
  const { ours, codex, spawn: base } = results;
  const ratio = (/** @type {number} */ a, /** @type {number} */ b) => a / b;

  // 1. Starts.
  const oneShot = ours?.oneShot && base?.oneShot ? ratio(percentile(ours.oneShot, 50), percentile(base.oneShot, 50)) : undefined;
  t(
    '1',
    'one-shot `/bin/true` p50 ours / spawn ≤ 1.5×',
    oneShot === undefined ? undefined : `${fmt(oneShot)}×`,
    (oneShot ?? Infinity) <= 1.5,
  );
  const wall = ours?.parallel && base?.parallel ? ratio(percentile(ours.parallel, 50), percentile(base.parallel, 50)) : undefined;
  t('1', '64-parallel wall ours / spawn ≤ 1.3×', wall === undefined ? undefined : `${fmt(wall)}×`, (wall ?? Infinity) <= 1.3);
  const each = ours?.parallel && base?.parallel ? ratio(percentile(ours.parallel.each, 50), percentile(base.parallel.each, 50)) : undefined;
  t('1', '64-parallel per-process p50 ours / spawn ≤ 1.3×', each === undefined ? undefined : `${fmt(each)}×`, (each ?? Infinity) <= 1.3);
  for (const [variant, label] of SANDBOX_VARIANTS) {
    const ms = sandbox?.json?.aheadOfTime?.[variant];
    t(
      '1',
      `sandboxed one-shot (${label}), sandbox built ahead of time: ≤ +5 ms over unsandboxed`,
      ms === undefined ? undefined : `${ms >= 0 ? '+' : ''}${fmt(ms)} ms`,
      ms <= 5,
    );
  }

  // 2. Streams.
  const pipe = runPipe?.json?.['run → pipe'];
  t('2', '256 MiB `exec-bridge run` → pipe / spawn → pipe ≥ 0.8×', pipe && `${fmt(pipe.ratioToSpawn)}×`, pipe?.ratioToSpawn >= 0.8);
  t(
    '2',
    'client CPU per 256 MiB, `exec-bridge run` (the run less its start) ≤ 0.21 s',
    pipe && `${fmt(pipe.streamCpuS)} s`,
    pipe?.streamCpuS <= 0.21,
  );
  const client = ours?.clientStream?.clientCpuS;
  t(
    '2',
    'client CPU per 256 MiB, ExecServerClient (binary frames) ≤ 0.21 s',
    client === undefined ? undefined : `${fmt(client)} s`,
    client <= 0.21,
  );
  if (ours?.stream && codex?.stream) {
    const peakOurs = Math.max(ours.stream.serverPeakMiB, ours.clientStream?.serverPeakMiB ?? 0);
    const peakCodex = Math.max(codex.stream.serverPeakMiB, codex.clientStream?.serverPeakMiB ?? 0);
    const r = peakOurs / peakCodex;
    t(
      '2',
      'server peak RSS during the streams ours / codex ≤ 1.3×',
      `${fmt(r)}× (${fmt(peakOurs, 0)} / ${fmt(peakCodex, 0)} MiB)`,
      r <= 1.3,
    );
  } else t('2', 'server peak RSS during the streams ours / codex ≤ 1.3×', undefined, undefined);

  // 3. SSH (median of per-pair ratios to `ssh host true`).
  const rt = roundTrips?.json;
  t('3', '`exec-bridge run --ssh host -- true`, cold / `ssh host true` ≤ 1.3×', rt && `${fmt(rt.cold)}×`, rt?.cold <= 1.3);
  t('3', 'the same within a minute (warm) ≤ 0.3×', rt && `${fmt(rt.warm)}×`, rt?.warm <= 0.3);
  t('3', "the extension's first connect (our server already there) ≤ 1.2×", rt && `${fmt(rt.ext)}×`, rt?.ext <= 1.2);

  // 4. Floods in a terminal, side by side in one VS Code.
  const v = vscode?.json;
  const p95 = (/** @type {any} */ f, /** @type {string} */ probe) => f?.probes?.[probe]?.echoP95ms;
  /** @type {[string, string][]} */
  const probes = [
    ['execBridgeShell', '(a) an Exec Bridge shell'],
    ['vscodeBash', "(b) VS Code's own bash"],
  ];
  for (const [probe, label] of probes) {
    const [mine, theirs] = [p95(v?.ours, probe), p95(v?.theirs, probe)];
    t('4', `echo p95 in ${label}: under our flood ≤ under VS Code's own`, v && `${mine} vs ${theirs} ms`, mine <= theirs);
    t(
      '4',
      `… and ≤ 100 ms where VS Code's own is (${label})`,
      v && (theirs <= 100 ? `${mine} ms` : `VS Code's own ${theirs} ms > 100: does not apply`),
      theirs > 100 || mine <= 100,
    );
  }
  t(
    '4',
    "extension-host RSS growth: our flood ≤ VS Code's own (after a warm-up flood of each)",
    v && `+${v.ours.rssGrowthMiB} vs +${v.theirs.rssGrowthMiB} MiB`,
    v?.ours.rssGrowthMiB <= v?.theirs.rssGrowthMiB,
  );

  // 5. Nothing else slower.
  const echo = ours?.echo ? percentile(ours.echo, 50) : undefined;
  t('5', 'PTY echo p50 ours ≤ 2 ms', echo === undefined ? undefined : `${fmt(echo, 3)} ms`, (echo ?? Infinity) <= 2);
  t('5', 'activation ≤ 50 ms (in VS Code 1.139.1)', v && `${fmt(v.activationMs, 1)} ms`, v?.activationMs <= 50);
  const after =
    ours?.parallelAfter && ours?.parallel ? ratio(percentile(ours.parallelAfter, 50), percentile(ours.parallel, 50)) : undefined;
  t(
    '5',
    '64-parallel wall right after the 256 MiB streams / fresh (same server) ≤ 1.1×',
    after === undefined ? undefined : `${fmt(after)}×`,
    (after ?? Infinity) <= 1.1,
  );

  return [
    '| item | target (issue 26) | measured | met |',
    '|---|---|---:|:---:|',
    ...rows.map(
      ([item, target, measured, ok]) => `| ${item} | ${target} | ${measured} | ${ok === undefined ? '—' : ok ? 'yes' : '**no**'} |`,
    ),
  ].join('\n');
}
