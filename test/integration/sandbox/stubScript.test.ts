/**
 * The script a pre-started sandbox's stub shell reads (src/server/sandbox stubScript): run through
 * the real /bin/sh exactly as the stub runs it, the command must get exactly its argv, environment
 * and stdin, and nothing else.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PREWARM_STUB, stubScript } from '../../../src/server/sandbox';

const PRINT =
  "process.stdout.write(JSON.stringify({ argv: process.argv.slice(1), env: process.env, stdin: require('fs').readFileSync(0, 'utf8') }))";

test('through /bin/sh the command gets exactly its argv, environment and stdin', { skip: process.platform === 'win32' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'exec-bridge-stub-'));
  try {
    const input = join(dir, 'stdin');
    writeFileSync(input, 'from the real stdin\n');
    const argv = ['a b', "it's", 'x\ny', '$HOME', '`id`', '*', '', 'ünï', '-i', '--', 'A=B', '"q"', '\\', '#c', ';', '&&', '|'];
    const env = { PATH: '/usr/bin:/bin', 'ODD-NAME.x': 'v', '-dash': '1', MULTI: 'l1\nl2', EMPTY: '', Q: `'"$\\\``, LANG: 'C.UTF-8' };
    const script = stubScript(3, [process.execPath, '-e', PRINT, ...argv], env);
    assert.ok(script);
    const run = (script: string) => {
      const fd = openSync(input, 'r');
      try {
        return spawnSync(PREWARM_STUB[0], PREWARM_STUB.slice(1), {
          input: script,
          stdio: ['pipe', 'pipe', 'pipe', fd],
          env: {},
          encoding: 'utf8',
          timeout: 20_000,
        });
      } finally {
        closeSync(fd);
      }
    };
    const r = run(script);
    assert.equal(r.status, 0, r.stderr);
    const seen = JSON.parse(r.stdout) as { argv: string[]; env: Record<string, string>; stdin: string };
    assert.deepEqual(seen.argv, argv);
    assert.deepEqual(seen.env, env);
    assert.equal(seen.stdin, 'from the real stdin\n');
    // `[` is a dash builtin: /proc/self is the shell the command became, fd 3 must be gone.
    const fds = run(stubScript(3, ['/bin/sh', '-c', 'if [ -e /proc/self/fd/3 ]; then echo leaked; else echo closed; fi'], {})!);
    assert.equal(fds.stdout, 'closed\n', fds.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
