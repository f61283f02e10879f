/**
 * A sandbox built ahead of time holds placeholder stubs in the user's workspace while it waits
 * (`PrewarmSpec.retain`). When it is thrown away, they may go only once nothing of it can run:
 * a bwrap still building its mounts makes a missing mount point again on the host, so a stub
 * removed under it came back as an empty `.git` or `.vscode` that no one claimed (CI c29: a test's
 * folder that could not be removed). Here the "sandbox" is a real process tree (a leader and a
 * child in the background), and the release checks, when it is called, whether any of it still
 * runs. Real processes, no bwrap needed.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { FifoPool } from '../../../src/server/fifoPool';
import { SandboxPrewarmer } from '../../../src/server/prewarm';
import type { PrewarmSpec } from '../../../src/server/spawnPlan';
import { until } from '../../helpers/procs';

const base = mkdtempSync(join(tmpdir(), 'eb-prewarm-release-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** Whether `pid` can still run: there, and not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false; // gone
  }
}

test(
  'a waiting sandbox thrown away releases its placeholders only once none of its processes runs',
  { skip: process.platform !== 'linux' && 'process trees are read from /proc' },
  async () => {
    const childPidFile = join(base, 'child.pid');
    let releasedWhile: string[] | undefined;
    let leader = 0;
    let onRelease!: () => void;
    const released = new Promise<void>((resolve) => (onRelease = resolve));
    const spec: PrewarmSpec = {
      key: 'k',
      // As a stub sandbox does: a leader that waits, and a process under it (bwrap's inner one).
      launch: { file: '/bin/sh', args: ['-c', `sleep 600 & echo $! > '${childPidFile}'; exec sleep 600`], files: [] },
      fingerprint: () => 'f',
      script: '',
      holdsPlaceholders: true,
      retain: () => () => {
        const child = Number(readFileSync(childPidFile, 'utf8'));
        releasedWhile = [leader, child].filter(running).map(String);
        onRelease();
      },
    };
    const lines: string[] = [];
    const fifos = new FifoPool();
    fifos.warm();
    const prewarmer = new SandboxPrewarmer(fifos, { idleMs: 60_000, log: (l) => lines.push(l) });
    try {
      prewarmer.prepare(spec, false);
      await until(() => lines.some((l) => l.includes('built one for the next start')), 30_000, 'the waiting sandbox');
      leader = Number(/\(pid (\d+)\)/.exec(lines.find((l) => l.includes('built one'))!)![1]);
      await until(() => existsSync(childPidFile) && readFileSync(childPidFile, 'utf8').endsWith('\n'), 30_000, 'its child');
      assert.ok(running(leader));
      prewarmer.dispose();
      await released;
      assert.deepEqual(releasedWhile, [], 'nothing of the sandbox runs when its placeholders are released');
    } finally {
      prewarmer.dispose();
      const child = existsSync(childPidFile) ? Number(readFileSync(childPidFile, 'utf8')) : 0;
      for (const p of [leader, child]) if (p > 0 && running(p)) process.kill(p, 'SIGKILL');
      fifos.dispose();
    }
  },
);
