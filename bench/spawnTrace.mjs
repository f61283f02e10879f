// Preload for our server (`node --import ./bench/spawnTrace.mjs dist/cli.js serve …`), used by
// bench/spawnCost.mjs --trace: times every child_process.spawn of the server (the call itself,
// and from the call to 'exit' and 'close', with the call's absolute time) and writes them as JSON
// to $SPAWN_TRACE_OUT on SIGUSR2. Not product code.
import cp from 'node:child_process';
import fs from 'node:fs';
const spawn = /** @type {(...args: unknown[]) => import('node:child_process').ChildProcess} */ (cp.spawn);
const rows = [];
/** @param {unknown[]} args */
function tracedSpawn(...args) {
  const file = args[0];
  const t0 = performance.now();
  const child = spawn(...args);
  const row = { file, at: performance.timeOrigin + t0, sync: performance.now() - t0 };
  rows.push(row);
  child.once('exit', () => (row.exit = performance.now() - t0));
  child.once('close', () => (row.close = performance.now() - t0));
  return child;
}
// @ts-expect-error: the traced function takes what spawn() takes
cp.spawn = tracedSpawn;
process.on('SIGUSR2', () => fs.writeFileSync(String(process.env.SPAWN_TRACE_OUT), JSON.stringify(rows)));
