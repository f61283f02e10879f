#!/usr/bin/env node
// SSH executor figures (issues 11 and 26): `node bench/ssh.mjs` (after `node esbuild.config.mjs`;
// needs /usr/sbin/sshd). Bundles bench/sshBench.ts with esbuild and runs it (REPS=5 by default;
// PHASES=roundtrip,connect, see there).
import { spawnSync } from 'node:child_process';
import * as esbuild from 'esbuild';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const outfile = join(root, 'bench/out/sshBench.js');
await esbuild.build({
  entryPoints: [join(root, 'bench/sshBench.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  outfile,
  logLevel: 'warning',
  external: ['node-pty'],
  // test/helpers/sshd.ts finds the repo from its compiled place (<out>/test/helpers): put it there.
  define: { __dirname: JSON.stringify(join(root, 'out-bench', 'test', 'helpers')) },
});
process.exit(spawnSync(process.execPath, [outfile], { stdio: 'inherit', cwd: root }).status ?? 1);
