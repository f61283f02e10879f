/**
 * Work survives a long outage (issue "Work survives the night"): an SSH executor on the loopback
 * sshd, a command printing a numbered line every 100 ms, and an outage in its worst form — the
 * remote side sees its TCP connection close at once (so the remote daemon detaches the session at
 * the start), while the client's side is black-holed and new connections hang — that lasts longer
 * than both old limits: the remote daemon's default TTL (30 s, which now applies only to clients that
 * ask for none) and the client's old 25 s recovery deadline. Our client asks for a 10 h session and
 * keeps retrying while the executor keeps it; `exec-bridge run --deadline-ms 0` does the same. Then
 * every line arrives exactly once, in order, from the same remote process.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_SESSION_TTL_MS, ExecServerClient } from '../../src/client';
import { sshConnector } from '../../src/client/sshConnector';
import { FaultProxy } from '../helpers/faultProxy';
import { until } from '../helpers/procs';
import { copyBundle, NODE_PTY_DIR, startSshd, type Sshd } from '../helpers/sshd';
import { gather } from './clientHelpers';

let sshd: Sshd;
const work = mkdtempSync(join(tmpdir(), 'eb-night-test-'));
const CLI = copyBundle(join(work, 'v1'));
/**
 * The six minutes. EXEC_BRIDGE_OUTAGE_S shortens it for a quick local run; scripts/test.mjs
 * runs this file beside the rest of the integration suite (it sleeps through the outage).
 */
const OUTAGE_MS = Number(process.env.EXEC_BRIDGE_OUTAGE_S ?? 360) * 1000;
/** Ticker lines at most: 10 a second for the outage and the minutes around it. */
const MAX_LINES = OUTAGE_MS / 100 + 3000;

before(async () => {
  sshd = await startSshd();
});
after(async () => {
  await sshd?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** `pid N`, `line 1`, `line 2`, … every 100 ms until `gate` exists (at most MAX_LINES), `pid N`. */
function ticker(gate: string): string[] {
  return [
    'bash',
    '-c',
    `echo "pid $$"; i=0; while [ ! -e ${gate} ] && [ $i -lt ${MAX_LINES} ]; do i=$((i+1)); echo "line $i"; sleep 0.1; done; echo "pid $$"`,
  ];
}

/** Every line exactly once, in order, between two equal pid lines; returns how many lines. */
function assertComplete(text: string): number {
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'ends with a newline');
  const first = lines.shift();
  const last = lines.pop();
  assert.match(first ?? '', /^pid \d+$/);
  assert.equal(last, first, 'the same process from start to end');
  lines.forEach((l, i) => assert.equal(l, `line ${i + 1}`, `line ${i + 1} exactly once, in order`));
  return lines.length;
}

/** The remote daemon's `exec-bridge daemon status` (the host user's view). */
function remoteStatus(): string {
  try {
    return execFileSync(join(sshd.home, '.exec-bridge', 'bin', 'exec-bridge'), ['daemon', 'status'], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, HOME: sshd.home, EXEC_BRIDGE_RUNTIME_DIR: sshd.runtimeDir },
    });
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

describe('a long outage under ssh', () => {
  test(
    'the client and run --deadline-ms 0 ride out an outage longer than the old TTL and deadline',
    { timeout: OUTAGE_MS + 240_000 },
    async () => {
      const proxy = await FaultProxy.start(sshd.port);
      const target = `root@127.0.0.1:${proxy.port}`;
      const client = await ExecServerClient.connect({
        connector: sshConnector({ target, sshOptions: sshd.clientOptions, cliPath: CLI, nodePtyDir: NODE_PTY_DIR }),
        // The first attempt installs the bundle; a black-holed attempt is given up on after this.
        attemptTimeoutMs: 30_000,
        // Tight enough to notice the black hole within seconds, loose enough for a loaded machine.
        keepalive: { intervalMs: 1_000, timeoutMs: 5_000 },
      });
      const states: string[] = [];
      client.onDidChangeState((s) => {
        if (states.at(-1) !== s.kind) states.push(s.kind);
      });
      let cliOut = '';
      let cliErr = '';
      let child: ReturnType<typeof spawn> | undefined;
      try {
        assert.equal(client.sessionTtlMs, DEFAULT_SESSION_TTL_MS, 'the executor keeps our session 10 h');
        assert.equal(client.recoveryDeadlineMs, DEFAULT_SESSION_TTL_MS + 60_000, 'and the client retries as long');
        const gate = join(work, 'gate-client');
        const h = await client.startProcess({ argv: ticker(gate), cwd: '/tmp' });
        const out = gather(h);

        const cliGate = join(work, 'gate-cli');
        child = spawn(
          process.execPath,
          [
            CLI,
            'run',
            '--ssh',
            target,
            ...sshd.clientOptions.flatMap((o) => ['--ssh-option', o]),
            '--no-stdin',
            '--deadline-ms',
            '0',
            '--',
            ...ticker(cliGate),
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        child.stdout!.setEncoding('utf8').on('data', (d: string) => (cliOut += d));
        child.stderr!.setEncoding('utf8').on('data', (d: string) => (cliErr += d));
        const cliExit = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));

        await out.until((t) => t.includes('line 20\n'), 60_000, 'line 20 from the client');
        await until(() => cliOut.includes('line 20\n'), 60_000, `line 20 from run --ssh; stderr: ${cliErr}`);

        proxy.outage();
        // The remote side saw the close: its daemon holds both sessions detached (the status says until when).
        const status = await until(
          () => {
            const s = remoteStatus();
            return (s.match(/: detached /g) ?? []).length >= 2 ? s : undefined;
          },
          60_000,
          'the remote daemon to detach both sessions',
        );
        assert.match(status, /kept|ends \d{4}-/);
        await until(() => client.state.kind === 'recovering', 30_000, 'the client to notice the black hole');
        const rec = client.state;
        assert.ok(rec.kind === 'recovering' && rec.until !== undefined && rec.until - rec.since > 3600_000, JSON.stringify(rec));
        await until(() => cliErr.includes('connection lost'), 30_000, `run to notice; stderr: ${cliErr}`);
        assert.match(cliErr, /until the executor says the session is gone/);

        // The outage itself: a duration, not a wait for an event.
        await new Promise((r) => setTimeout(r, OUTAGE_MS));
        const late = client.state;
        assert.equal(late.kind, 'recovering', 'still retrying, not failed');
        // It kept trying all along, and at a bounded rate: each attempt hangs until its 30 s timeout,
        // and after 30 s the backoff allows up to 30 s between attempts.
        const attempts = late.kind === 'recovering' ? late.attempt : -1;
        assert.ok(attempts >= Math.floor(OUTAGE_MS / 90_000) && attempts <= OUTAGE_MS / 1_000, `${attempts} attempts`);
        assert.equal(child.exitCode, null, `run still waiting; stderr: ${cliErr}`);

        proxy.heal();
        client.retryNow(); // as the extension does when the window gets focus
        await until(() => client.state.kind === 'connected', 120_000, 'the client to resume');
        await until(() => cliErr.includes('resumed after'), 120_000, `run to resume; stderr: ${cliErr}`);

        writeFileSync(gate, '');
        writeFileSync(cliGate, '');
        assert.equal((await h.completion).exitCode, 0);
        assert.equal(await cliExit, 0, cliErr);
        const n = assertComplete(out.text());
        const m = assertComplete(cliOut);
        // The processes kept printing through the outage (10 lines a second).
        assert.ok(n > OUTAGE_MS / 200 && m > OUTAGE_MS / 200, `${n} and ${m} lines`);
        // Never failed; the last drop (the outage) ended in a resume. (A keepalive that timed out on a
        // loaded machine before the outage may add an earlier recovering → connected.)
        assert.ok(!states.includes('failed'), states.join(' → '));
        assert.deepEqual(states.slice(-2), ['recovering', 'connected']);
      } finally {
        child?.kill('SIGKILL');
        client.dispose();
        await proxy.close();
      }
    },
  );
});
