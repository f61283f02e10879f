/**
 * Sandboxes built ahead of time and other servers' private directories (issue 20 item 1): every
 * sandbox covers the private directories of the other servers of this user, and those come and go
 * as servers start and stop. The plan key leaves them out and the prewarmer checks them instead: a
 * waiting sandbox serves a start only if it covers every directory that start must hide (hiding
 * more is safe), so a server that stops does not throw away the sandboxes built ahead of time, and
 * one that starts does not get a sandbox that would let a command see its directory. Real bwrap.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { FifoPool } from '../../src/server/fifoPool';
import { SandboxPrewarmer } from '../../src/server/prewarm';
import { SandboxPlanner } from '../../src/server/sandbox';
import { COVER_NAME } from '../../src/util/privateDir';
import { until } from '../helpers/procs';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-prewarm-covers-')));
// A discarded waiting sandbox is killed in the background: its placeholders in ws may outlive the test by a moment.
after(() => rmSync(base, { recursive: true, force: true, maxRetries: 10 }));
const ws = join(base, 'ws');
const state = join(base, 'state');
/** Two other servers' private directories, each with the cover its own server makes. */
const [a, b] = ['a', 'b'].map((n) => join(base, `other-${n}`));
for (const d of [ws, a!, b!]) mkdirSync(d, { recursive: true });
for (const d of [a!, b!]) mkdirSync(join(d, COVER_NAME), { mode: 0 });
mkdirSync(state, { mode: 0o700 });

let others: string[] = [];
const planner = new SandboxPlanner({ stateDir: state, hiddenDirs: () => ({ own: [], others }) });

async function specWith(dirs: string[]) {
  others = dirs;
  const plan = await planner.plan({
    argv: ['/bin/true'],
    cwd: ws,
    env: { PATH: '/usr/bin:/bin' },
    tty: false,
    sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
  });
  assert.ok(plan.prewarm, 'a plan that can be built ahead of time');
  return { plan, spec: plan.prewarm };
}

test('the key leaves out the covers; a waiting sandbox serves a start whose covers it has, never one with a new directory', async () => {
  const both = await specWith([a!, b!]);
  const onlyA = await specWith([a!]);
  assert.equal(onlyA.spec.key, both.spec.key, 'another server stopping does not change the key');
  assert.deepEqual(both.spec.covers, [a, b]);
  assert.deepEqual(onlyA.spec.covers, [a]);
  assert.ok(both.spec.launch.args.join(' ').includes(`${join(b!, COVER_NAME)} ${b}`), 'the build covers b');

  const lines: string[] = [];
  const fifos = new FifoPool();
  fifos.warm();
  const prewarmer = new SandboxPrewarmer(fifos, { idleMs: 60_000, log: (l) => lines.push(l) });
  try {
    // Built while a and b ran; b's server stopped since: the waiting sandbox still serves.
    prewarmer.prepare(both.spec, false);
    await until(() => lines.some((l) => l.includes('built one for the next start')), 30_000, 'a sandbox built ahead of time');
    const warm = prewarmer.take(onlyA.spec, false);
    assert.ok(warm, `a superset serves: ${lines.join(' | ')}`);
    const exited = new Promise<number | null>((r) => warm.child.once('exit', (code) => r(code)));
    warm.run(onlyA.spec.script);
    assert.equal(await exited, 0, 'the command ran in it');
    warm.release();

    // Built while only a ran; b's server started since: that sandbox must not be used.
    lines.length = 0;
    prewarmer.prepare(onlyA.spec, false);
    await until(() => lines.some((l) => l.includes('built one for the next start')), 30_000, 'another sandbox built ahead of time');
    assert.equal(prewarmer.take(both.spec, false), undefined, 'a sandbox that does not cover b never runs a start that must hide b');
    await until(() => lines.some((l) => l.includes(`does not cover ${b}`)), 10_000, 'the log line');
  } finally {
    prewarmer.dispose();
    both.plan.dispose();
    onlyA.plan.dispose();
  }
});
