#!/usr/bin/env node
// `npm start` (interim, until the VS Code demo lands): starts the bundled exec-server on loopback
// with a fresh token and prints how to use it. Ctrl-C stops it and every process it started.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'exec-bridge-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
const server = spawn(process.execPath, [join(root, 'dist/cli.js'), 'serve', '--listen', 'ws://127.0.0.1:0', '--token-file', tokenFile, '--verbose'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
server.stdout.once('data', (d) => {
  const url = d.toString().trim();
  console.log(`Exec Bridge exec-server listening on ${url}`);
  console.log(`token file: ${tokenFile}`);
  console.log(`\nRun a command through it:\n  node dist/cli.js run --url ${url} --token-file ${tokenFile} -- bash -c 'echo hello from the executor; uname -a'`);
  console.log(`Or use it from codex-compatible clients with "Authorization: Bearer $(cat ${tokenFile})".\nCtrl-C stops it.`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.kill('SIGTERM'));
server.on('exit', (code) => process.exit(code ?? 0));
