// The phases of `npm run bench` that run another bench script in a child process and read its
// figures back: each script prints its tables, then one `bench-json: {…}` line with the medians its
// targets are judged by (bench/targets.mjs). Every child has a time bound.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { withTimeout } from './wire.mjs';

/**
 * A child's stdout: its text without the `bench-json:` line, and that line's figures.
 * @param {string} out
 */
export function splitJson(out) {
  const m = /^bench-json: (.*)$/m.exec(out);
  return { text: out.replace(/\n*^bench-json: .*$/m, '').trim(), json: m ? JSON.parse(m[1] ?? '{}') : undefined };
}

/**
 * Runs `node <args>` with its stdout captured (stderr shown), killed after `ms`; with `log`, its
 * stdout is also written there (what to read when a long child fails).
 * @param {string[]} args @param {number} ms @param {string} what @param {NodeJS.ProcessEnv} [env] @param {string} [log]
 */
async function runNode(args, ms, what, env = process.env, log = undefined) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = withTimeout(once(child, 'exit'), ms, what).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
  const [code] = await exited.finally(() => {
    if (!log) return;
    mkdirSync(dirname(log), { recursive: true });
    writeFileSync(log, out);
  });
  if (code !== 0) throw new Error(`${what} failed (exit ${code})${log ? `; its output: ${log}` : ''}`);
  return out;
}

/**
 * Issue 26 item 3: bench/ssh.mjs's roundtrip phase (a real sshd on loopback, paired reps against
 * `ssh host true`); undefined without sshd here.
 * @param {{ root: string, quick: boolean, phase: (text: string) => void }} o
 */
export async function measureRoundTrips({ root, quick, phase }) {
  if (!existsSync('/usr/sbin/sshd')) {
    process.stderr.write('roundtrip: no /usr/sbin/sshd here, left out\n');
    return undefined;
  }
  phase('roundtrip: exec-bridge run --ssh vs ssh host true…');
  const env = { ...process.env, PHASES: 'roundtrip', REPS: quick ? '3' : '5' };
  const { text, json } = splitJson(await runNode([join(root, 'bench', 'ssh.mjs')], 360_000, 'ssh round-trip bench', env));
  phase(' done\n');
  // From its heading to the table's last row (the raw figures after it are for bench/RESULTS.md by hand).
  const table = text.slice(text.indexOf('SSH round trips'));
  return { text: table.slice(0, table.indexOf('\nraw')).trim(), json };
}

/**
 * Issue 26 item 2: bench/runPipe.mjs (`exec-bridge run` → pipe against spawn → pipe, alternating
 * rounds, with ExecServerClient and a codex server beside them).
 * @param {{ root: string, quick: boolean, phase: (text: string) => void, cli: string, clientBundle: string }} o
 */
export async function measureRunPipe({ root, quick, phase, cli, clientBundle }) {
  phase('runpipe: exec-bridge run → pipe vs spawn → pipe…');
  const args = [join(root, 'bench', 'runPipe.mjs'), '--rounds', quick ? '3' : '6', '--codex', '--client-bundles', clientBundle, cli];
  const { text, json } = splitJson(await runNode(args, 600_000, 'run-pipe bench'));
  phase(' done\n');
  return { text: `\`exec-bridge run\` into a pipe (bench/runPipe.mjs)\n${text}`, json };
}

/**
 * Issue 26 item 1's sandboxed start: bench/sandbox.mjs (bubblewrap; paced starts through a server
 * that builds sandboxes ahead of time and one that does not); undefined without bwrap here.
 * @param {{ root: string, quick: boolean, phase: (text: string) => void }} o
 */
export async function measureSandbox({ root, quick, phase }) {
  if (spawnSync('bwrap', ['--version']).status !== 0) {
    process.stderr.write('sandbox: no bwrap here, left out\n');
    return undefined;
  }
  phase('sandbox: sandboxed one-shot vs unsandboxed…');
  const { text, json } = splitJson(
    await runNode([join(root, 'bench', 'sandbox.mjs'), '--runs', quick ? '10' : '40'], 300_000, 'sandbox bench'),
  );
  phase(' done\n');
  return { text: `Sandbox start overhead (bench/sandbox.mjs)\n\n${text}`, json };
}

/** The size of the terminal floods: the issue's 200 MiB, 32 MiB with --quick. */
const floodBytes = (quick) => (quick ? 32 : 200) * 1024 * 1024;

/**
 * Issue 26 items 4 and 5 inside a real VS Code (code-server, the newest target of
 * scripts/vscode-test.mjs): the activation test's time and the terminal flood test (`yes | head -c`
 * in an Exec Bridge terminal, then in VS Code's own, with two probe terminals typed into), from the
 * JSON lines those tests log. The tests are compiled into out-bench/ (tsc), the extension is dist/.
 * @param {{ root: string, quick: boolean, phase: (text: string) => void }} o
 */
export async function measureVscode({ root, quick, phase }) {
  phase('vscode: activation, terminal floods (ours, then VS Code’s own)…');
  const tsc = spawnSync('npx', ['tsc', '-p', '.', '--outDir', 'out-bench'], { cwd: root, encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`tsc for the VS Code tests failed:\n${tsc.stdout}${tsc.stderr}`);
  const bytes = floodBytes(quick);
  const env = {
    ...process.env,
    OUT_DIR: 'out-bench',
    VSCODE_TARGETS: 'newest',
    VSCODE_TEST_GREP: '^(activation|terminal flood) ',
    EXEC_BRIDGE_FLOOD_BYTES: String(bytes),
    // One unmeasured flood of each kind first: neither measured one grows the young generation.
    EXEC_BRIDGE_FLOOD_WARMUP: String(32 * 1024 * 1024),
    // Two 200 MiB floods took 8 and 14 minutes on a loaded machine (bench/RESULTS.md).
    EXEC_BRIDGE_MOCHA_PAGE_MS: '2400000',
  };
  const log = join(root, 'bench', 'out', 'vscode.log');
  const out = await runNode(
    [join(root, 'scripts', 'vscode-test.mjs'), '--tests-only'],
    2_700_000,
    'VS Code bench (scripts/vscode-test.mjs)',
    env,
    log,
  );
  /** @param {RegExp} re */
  const all = (re) => [...out.matchAll(re)].map((m) => JSON.parse(m[1] ?? '{}'));
  const floods = all(/terminal flood: (\{.*\})/g);
  const activation = all(/activation: (\{.*\})/g)[0];
  const ours = floods.find((f) => f.flood === 'execBridge');
  const theirs = floods.find((f) => f.flood === 'vscode');
  if (!ours || !theirs || !activation)
    throw new Error(`VS Code bench: missing figures (floods ${floods.length}, activation ${!!activation}); its output: ${log}`);
  phase(' done\n');
  return { text: floodTable(bytes, ours, theirs, activation), json: { ours, theirs, activationMs: activation.ms } };
}

/** The side-by-side table of the two floods (bench/RESULTS.md, "Floods: ours against VS Code's own terminal"). */
function floodTable(bytes, ours, theirs, activation) {
  const p = (f, probe) => {
    const r = f.probes?.[probe];
    return r ? `${r.echoP50ms} / **${r.echoP95ms}** / ${r.echoMaxms} (${r.echoSamples})` : '—';
  };
  const rss = (f) => `${f.rssBeforeMiB} → ${f.rssPeakMiB} → ${f.rssAfterMiB} (+${f.rssGrowthMiB})`;
  /** @type {[string, (f: any) => unknown][]} */
  const rows = [
    ['until the end (s)', (f) => f.seconds],
    ['(a) echo in an Exec Bridge shell, p50 / p95 / max ms (samples)', (f) => p(f, 'execBridgeShell')],
    ["(b) echo in VS Code's own bash, p50 / p95 / max ms (samples)", (f) => p(f, 'vscodeBash')],
    ['extension-host RSS before → peak → after MiB (growth)', rss],
    ['extension-host heap growth MiB', (f) => f.heapGrowthMiB],
    [
      'extension-host loop delay p50 / p99 / max ms',
      (f) => `${f.extHostLoopDelayP50ms} / ${f.extHostLoopDelayP99ms} / ${f.extHostLoopDelayMaxms}`,
    ],
  ];
  const mib = bytes / 2 ** 20;
  return [
    `Terminal floods in VS Code 1.139.1 (code-server; test/vscode/suite/terminalFlood.test.ts): \`yes | head -c ${mib}M\`, ours first, after one unmeasured 32 MiB flood of each; activation ${activation.ms.toFixed(1)} ms`,
    '',
    `| ${mib} MiB | in an Exec Bridge terminal | in VS Code's own terminal |`,
    '|---|---:|---:|',
    ...rows.map(([label, f]) => `| ${label} | ${f(ours)} | ${f(theirs)} |`),
  ].join('\n');
}
