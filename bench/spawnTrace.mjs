// Preload for our server (`node --import ./bench/spawnTrace.mjs dist/cli.js serve …`), used by
// bench/spawnCost.mjs --trace: times every child_process.spawn of the server (the call itself,
// and from the call to 'exit' and 'close', with the call's absolute time) and writes them as JSON
// to $SPAWN_TRACE_OUT on SIGUSR2. Not product code.
import cp from 'node:child_process';
import fs from 'node:fs';
const spawn = cp.spawn;
const rows = [];
cp.spawn = function tracedSpawn(file) {
  const t0 = performance.now();
  const child = spawn.apply(this, arguments);
  const row = { file, at: performance.timeOrigin + t0, sync: performance.now() - t0 };
  rows.push(row);
  child.once('exit', () => (row.exit = performance.now() - t0));
  child.once('close', () => (row.close = performance.now() - t0));
  return child;
};
process.on('SIGUSR2', () => fs.writeFileSync(process.env.SPAWN_TRACE_OUT, JSON.stringify(rows)));
