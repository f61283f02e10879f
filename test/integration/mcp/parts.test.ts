/** The MCP orphan reaper (src/mcp/orphanReaper.ts) around a real server process and what it leaves behind. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { parseExitMarker, wrapWithReaper } from '../../../src/mcp/orphanReaper';
import { isAlive, until } from '../../helpers/procs';

function runWrapped(argv: string[]): Promise<{ code: number | null; stderr: string; pids: number[] }> {
  return new Promise((resolve) => {
    // detached: its own process group, as an exec-server gives each process.
    const child = spawn(wrapWithReaper(argv)[0]!, wrapWithReaper(argv).slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stdin.end('hello\n');
    child.on('close', (code) => resolve({ code, stderr, pids: stdout.split(/\s+/).filter(Boolean).map(Number) }));
  });
}

test('the reaper wrapper passes stdin through, reports the exit code, and kills what the server left behind', async () => {
  // The "server": reads a line from stdin, starts a helper that ignores INT/TERM/HUP, prints its pid, exits 7.
  const r = await runWrapped([
    'bash',
    '-c',
    `read line; [ "$line" = hello ] || exit 99; (trap '' INT TERM HUP; exec sleep 300) </dev/null >/dev/null 2>&1 & echo $!; echo oops >&2; exit 7`,
  ]);
  const markers = r.stderr
    .split('\n')
    .map(parseExitMarker)
    .filter((x) => x !== undefined);
  assert.deepEqual(markers, [7], r.stderr);
  assert.match(r.stderr, /^oops\n/);
  assert.equal(r.code, null, 'the wrapper killed its own group, itself included');
  assert.equal(r.pids.length, 1);
  await until(() => !isAlive(r.pids[0]!), 2000, 'the helper gone');
  assert.equal(parseExitMarker('exec-bridge-mcp-exit:x'), undefined);
  assert.equal(parseExitMarker('not a marker'), undefined);
});
