/**
 * The private directory keeps one `ssh-<hash>` folder per SSH destination ever used (src/client/
 * sshShare.ts). A folder whose master exited (no socket left in it) and that nothing touched for an
 * hour is swept when a connection looks its own folder up; a folder with a live socket, a fresh
 * one, and anything not named like ours stay.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SHARE_DIR_STALE_MS, sweepShareDirs } from '../../src/client/sshShare';

const base = mkdtempSync(join(tmpdir(), 'eb-share-sweep-'));
const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
  rmSync(base, { recursive: true, force: true });
});

function folder(name: string, ageMs: number, files: string[] = ['d-0123456789ab.json']): string {
  const dir = join(base, name);
  mkdirSync(dir, { mode: 0o700 });
  const then = new Date(Date.now() - ageMs);
  for (const f of files) {
    writeFileSync(join(dir, f), '{}', { mode: 0o600 });
    utimesSync(join(dir, f), then, then);
  }
  utimesSync(dir, then, then);
  return dir;
}

test('a destination folder without a socket, untouched for an hour, is swept; one in use, a fresh one and others stay', async () => {
  const old = 2 * SHARE_DIR_STALE_MS;
  folder('ssh-00000000000000a1', old);
  const live = folder('ssh-00000000000000a2', old);
  // A master's control socket (what ssh leaves while it runs).
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(join(live, 'c'), resolve));
  folder('ssh-00000000000000a3', 60_000);
  const keep = folder('ssh-00000000000000a4', old);
  folder('spool-123-abcdef', old);
  folder('ssh-notours', old);
  sweepShareDirs(base, keep);
  assert.deepEqual(readdirSync(base).sort(), [
    'spool-123-abcdef',
    'ssh-00000000000000a2',
    'ssh-00000000000000a3',
    'ssh-00000000000000a4',
    'ssh-notours',
  ]);
});
