#!/usr/bin/env node
// MCP spawn → ready: server-memory through an exec-server (ours and codex) with our
// ExecProcessTransport, against the SDK's own StdioClientTransport spawning it locally.
// "Ready" = process spawned, `initialize` answered, `notifications/initialized` sent, `tools/list`
// answered (what a user waits for before the tree shows tools). The exec connection is opened once
// beforehand (the extension keeps it open), so it is not counted.
//
// Usage: node bench/mcp.mjs [N=15]   (needs `npm run build` for our server)
// Runs are interleaved (local, ours, ours+reaper, codex, …) so machine load hits all alike.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as esbuild from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const N = Number(process.argv[2] ?? 15);
const tmp = mkdtempSync(join(tmpdir(), 'mcp-bench-'));
const outfile = join(tmp, 'bench-lib.cjs');
// Bundle just what the benchmark needs from src/ (no tsc output required).
await esbuild.build({
  stdin: {
    contents: `
      export { ExecServerClient } from './src/client';
      export { ExecProcessTransport } from './src/mcp/execProcessTransport';
      export { startExecServer } from './test/helpers/servers';
    `,
    resolveDir: root,
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  external: ['node-pty'],
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  // servers.ts finds the repo as three levels above its compiled folder (<out>/test/helpers).
  define: { __dirname: JSON.stringify(join(root, 'out', 'test', 'helpers')) },
});
const require = createRequire(import.meta.url);
const lib = require(outfile);
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const SERVER = join(root, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const memFile = (i) => join(tmp, `mem-${i}.jsonl`);

async function once(makeTransport, i) {
  const client = new Client({ name: 'bench', version: '0' });
  const t0 = performance.now();
  const transport = makeTransport(i);
  await client.connect(transport);
  const t1 = performance.now();
  const { tools } = await client.listTools();
  const t2 = performance.now();
  if (tools.length !== 9) throw new Error(`expected 9 tools, got ${tools.length}`);
  const c0 = performance.now();
  await client.close();
  const c1 = performance.now();
  return { ready: t2 - t0, init: t1 - t0, close: c1 - c0 };
}

const local = (i) =>
  new StdioClientTransport({ command: process.execPath, args: [SERVER], env: { MEMORY_FILE_PATH: memFile(i) }, stderr: 'pipe' });
const viaExec = (client, reapOrphans) => (i) =>
  new lib.ExecProcessTransport({
    client,
    launch: {
      argv: [process.execPath, SERVER],
      cwd: tmp,
      env: { MEMORY_FILE_PATH: memFile(i) },
      envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] },
    },
    reapOrphans,
    graceMs: 1000,
  });

const ours = await lib.startExecServer('ours');
const codex = await lib.startExecServer('codex');
const oursClient = await lib.ExecServerClient.connect({ endpoint: { kind: 'websocket', url: ours.url } });
const codexClient = await lib.ExecServerClient.connect({ endpoint: { kind: 'websocket', url: codex.url } });

const variants = {
  'local StdioClientTransport': local,
  'ours exec-server': viaExec(oursClient, false),
  'ours exec-server + reaper wrapper': viaExec(oursClient, true),
  'codex exec-server': viaExec(codexClient, false),
  'codex exec-server + reaper wrapper': viaExec(codexClient, true),
};
/** @typedef {{ ready: number, init: number, close: number }} Round the ms of one round */
/** Each variant's rounds, in the order of `variants`. @type {Record<string, Round[]>} */
const results = {};
try {
  // One warm-up round (file cache, JIT) that is not counted.
  for (const make of Object.values(variants)) await once(make, 0);
  for (let i = 1; i <= N; i++) {
    for (const [name, make] of Object.entries(variants)) (results[name] ??= []).push(await once(make, i));
  }
} finally {
  oursClient.dispose();
  codexClient.dispose();
  await ours.stop();
  await codex.stop();
  rmSync(tmp, { recursive: true, force: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const localRounds = results['local StdioClientTransport'];
if (!localRounds) throw new Error('no rounds of the local StdioClientTransport');
const base = median(localRounds.map((r) => r.ready));
console.log(`\nserver-memory spawn → ready (initialize + tools/list), N=${N}, medians in ms (min–max), node ${process.version}\n`);
console.log('| transport | spawn→ready | ×local | spawn→initialized | close() |');
console.log('|---|---|---|---|---|');
for (const [name, rs] of Object.entries(results)) {
  const ready = rs.map((r) => r.ready);
  const m = median(ready);
  console.log(
    `| ${name} | ${m.toFixed(0)} (${Math.min(...ready).toFixed(0)}–${Math.max(...ready).toFixed(0)}) | ${(m / base).toFixed(2)} | ${median(rs.map((r) => r.init)).toFixed(0)} | ${median(rs.map((r) => r.close)).toFixed(0)} |`,
  );
}
