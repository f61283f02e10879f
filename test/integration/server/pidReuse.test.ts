/**
 * A pid comes back. With pid_max at 32768 (the default in containers) a busy machine hands a pid
 * out again within minutes; a server that signals the group or session of a process it reaped
 * long ago then kills whoever has that number now. Seen for real: a terminal command on the
 * bundled daemon ended with exit 137 while another window's session expired (issue 27).
 *
 * Each test makes the kernel give a reaped leader's pid to a stranger (a detached `sleep`, leader
 * of its own group and session, like every command we start) through ns_last_pid, then does what
 * once signalled that number: process/terminate of the exited process, the end of its session,
 * and the orphan watchdog after a SIGKILL of the server. The stranger must live through each; what
 * is really left of ours (a nohup child of an exited leader) must still die.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { isAlive, until } from '../../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

const LAST_PID = '/proc/sys/kernel/ns_last_pid';
const canChoosePids = (() => {
  try {
    accessSync(LAST_PID, constants.W_OK);
    return process.platform === 'linux';
  } catch {
    return false;
  }
})();
const skip = canChoosePids ? false : `needs a writable ${LAST_PID} (root on Linux) to hand a pid out again`;

const strangers: ChildProcess[] = [];
after(() => {
  for (const s of strangers) s.kill('SIGKILL');
});

/** A detached `sleep` (its own session) with exactly `pid`; other processes may take it first, so a few tries. */
async function strangerWithPid(pid: number): Promise<ChildProcess> {
  for (let attempt = 0; attempt < 200; attempt++) {
    writeFileSync(LAST_PID, String(pid - 1));
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    strangers.push(child);
    if (child.pid === pid) return child;
    child.kill('SIGKILL');
  }
  throw new Error(`pid ${pid} could not be handed to a stranger in 200 tries`);
}

/** Starts `script` under `sh`, waits for it to close, and returns the numbers it printed (its own pid first). */
async function exitedProcess(c: RawClient, id: string, script: string): Promise<number[]> {
  await c.call('process/start', startParams(id, ['sh', '-c', `echo $$; ${script}`]));
  await c.processEvents(id);
  const out = c.output(id);
  return [...out.matchAll(/\d+/g)].map((m) => Number(m[0]));
}

describe('a pid given out again is never signalled as ours', { skip }, () => {
  let server: StartedServer | undefined;
  after(async () => {
    await server?.stop();
  });

  test('process/terminate of an exited process leaves the process that has its pid now', async () => {
    // The default TTL: the exited process stays known for hours.
    const own = await startServer('ours');
    const { client: c } = await RawClient.session(own.url);
    try {
      const [pid] = await exitedProcess(c, 'gone', 'true');
      const stranger = await strangerWithPid(pid!);
      assert.equal((await c.call('process/read', { processId: 'gone' })).result?.closed, true, 'still known');
      assert.deepEqual((await c.call('process/terminate', { processId: 'gone' })).result, { running: false });
      // The exited branch signals at once, before it answers: the stranger is judged now.
      assert.ok(isAlive(stranger.pid!), 'the stranger lives');
    } finally {
      c.close();
      await own.stop();
    }
  });

  test('the end of a session leaves the process that has the pid of one of its exited processes; its own nohup child dies', async () => {
    server = await startServer('ours', ['--session-ttl-ms', '3000']);
    const { client: c } = await RawClient.session(server.url);
    const [pid] = await exitedProcess(c, 'gone', 'true');
    // An exited leader whose nohup child lives on in its group: that one is ours to kill.
    const [, orphan] = await exitedProcess(c, 'left', 'nohup sleep 300 >/dev/null 2>&1 & echo $!');
    assert.ok(isAlive(orphan!), 'the nohup child runs');
    const stranger = await strangerWithPid(pid!);
    // A read keeps an exited process known for the TTL from now; detached, it stays until the session ends.
    assert.equal((await c.call('process/read', { processId: 'gone' })).result?.closed, true, 'still known');
    c.close();
    // The detached session ends after its TTL, and every process of it is ended in one go: once
    // the nohup child is dead, the exited process before it was dealt with too.
    await until(() => !isAlive(orphan!), 30_000, 'the nohup child of the ended session killed');
    assert.ok(isAlive(stranger.pid!), 'the stranger lives');
  });

  test('a SIGKILLed server: its watchdog leaves the process that has the pid of an exited leader, and kills what is left of ours', async () => {
    const own = await startServer('ours');
    const { client: c } = await RawClient.session(own.url);
    const [pid] = await exitedProcess(c, 'gone', 'true');
    const [, orphan] = await exitedProcess(c, 'left', 'nohup sleep 300 >/dev/null 2>&1 & echo $!');
    const stranger = await strangerWithPid(pid!);
    const guard = watchdogOf(own.child.pid!);
    assert.ok(guard, 'the server has its watchdog');
    // The "leader reaped" line for both went out before their process/closed; SIGKILL now.
    process.kill(own.child.pid!, 'SIGKILL');
    c.close();
    await until(() => !isAlive(guard), 10_000, 'the watchdog done');
    assert.ok(!isAlive(orphan!), 'the nohup child of an exited leader died with the server');
    assert.ok(isAlive(stranger.pid!), 'the stranger lives');
    await own.stop();
  });
});

/** The orphan watchdog (a `/bin/sh` named exec-bridge-orphan-guard) started by the server `pid`. */
function watchdogOf(serverPid: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === serverPid && cmd.includes('exec-bridge-orphan-guard')) return Number(name);
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}
