/**
 * A terminal reopened after a window reload (`TerminalRun` with `attach`), against our real
 * exec-server in process: the first window's client goes away, a new client resumes the session and
 * the run replays the retained output, then follows it live to its end. Also: output older than the
 * executor's window is replayed from its spool; what a spool cap (or a client that does not ask for
 * the spool) dropped is skipped with a notice (not a failure), and `detach` leaves the process running.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ExecServerClient, ProcessHandle } from '../../../src/client';
import { TerminalRun, type RunSpec } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import { connectInProcess } from '../../helpers/inProcessServer';
import { terminalText } from '../../helpers/terminalText';

const WAIT_MS = 15_000;
const MiB = 1024 * 1024;
let server: ExecServer;
/** One whose spool keeps 2 MiB per process (memory window included). */
let capped: ExecServer;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-reattach-'));
  server = new ExecServer({ sandboxPrewarmMs: 0 });
  capped = new ExecServer({ sandboxPrewarmMs: 0, spoolProcessBytes: 2 * MiB });
});
after(async () => {
  await server.close();
  await capped.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(resumeSessionId?: string, o: { on?: ExecServer; outputSpool?: boolean } = {}): Promise<ExecServerClient> {
  return connectInProcess(o.on ?? server, {
    // As the extension's connections do (the client's default is not to ask).
    outputSpool: o.outputSpool ?? true,
    ...(resumeSessionId ? { resumeSessionId } : {}),
  });
}

function spec(overrides: Partial<RunSpec> = {}): RunSpec {
  return {
    kind: 'command',
    executor: 'local',
    commandLine: 'make it',
    argv: [],
    cwd: dir,
    tty: false,
    pipeStdin: false,
    sandboxLabel: 'none',
    ...overrides,
  };
}

/** A reopened terminal over `client`'s process `processId`; its text without colours. */
function reopen(client: ExecServerClient, processId: string, s = spec()) {
  /** How often the run asked to terminate its process. */
  const terminations = { count: 0 };
  const run = new TerminalRun(s, {
    start: () => Promise.reject(new Error('a reopened terminal starts nothing')),
    attach: async () => {
      const attached = await client.attachProcess(processId, { tty: s.tty, stdinWritable: s.pipeStdin || s.tty });
      const handle = new Proxy(attached.handle, {
        get(target, key) {
          if (key === 'terminate') {
            return () => {
              terminations.count++;
              return target.terminate();
            };
          }
          const v: unknown = Reflect.get(target, key);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      return { ...attached, handle };
    },
    approve: () => Promise.reject(new Error('no approvals here')),
    beforeRun: () => Promise.reject(new Error('a reopened terminal asks nothing')),
    onConnectionState: client.onDidChangeState,
    canResize: () => true,
  });
  const { text, until } = terminalText(run, WAIT_MS);
  run.model.open({ cols: 80, rows: 24 });
  run.start();
  return { run, text, until, terminations };
}

function firstOutput(h: ProcessHandle, pattern: RegExp): Promise<string> {
  let text = '';
  return new Promise((resolve) => {
    h.onEvent((e) => {
      if (e.type !== 'output') return;
      text += e.data.toString();
      if (pattern.test(text)) resolve(text);
    });
  });
}

describe('a terminal reopened after a window reload', () => {
  test('replays what the process printed from its first byte, then follows it live to its exit code', async () => {
    const first = await connect();
    const gate = join(dir, 'gate-1');
    const p = await first.startProcess({
      argv: ['bash', '-c', `mkfifo ${gate}; for i in 1 2 3; do echo "early $i"; done; read -r _ < ${gate}; echo late; exit 3`],
      cwd: dir,
      tty: false,
    });
    await firstOutput(p, /early 3\n/);
    first.dispose('window reload');
    const second = await connect(first.sessionId);
    try {
      const t = reopen(second, p.processId);
      await t.until(/early 3/);
      writeFileSync(gate, 'go\n');
      await t.run.done;
      assert.equal(t.run.model.exitCode, 3);
      assert.match(t.text(), /^\$ make it\nsandbox: none\n↻ reopened after the window reload\nearly 1\nearly 2\nearly 3\nlate\n/);
      assert.match(t.text(), /exit code 3/);
    } finally {
      second.dispose();
    }
  });

  /** Starts 3 MiB of `x` then a marker on `on`, and reopens it in a second client (which asks for the spool or not). */
  async function printed3MiB(name: string, o: { on?: ExecServer; outputSpool?: boolean }) {
    const first = await connect(undefined, o);
    const gate = join(dir, name);
    // 3 MiB, far beyond the 1 MiB window, then a marker.
    const p = await first.startProcess({
      argv: [
        'bash',
        '-c',
        `mkfifo ${gate}; head -c 3145728 /dev/zero | tr '\\0' x; echo; echo "tail-marker"; read -r _ < ${gate}; echo bye`,
      ],
      cwd: dir,
      tty: false,
    });
    await firstOutput(p, /tail-marker/);
    first.dispose('window reload');
    const second = await connect(first.sessionId, o);
    try {
      const t = reopen(second, p.processId);
      await t.until(/tail-marker/);
      writeFileSync(gate, 'go\n');
      await t.run.done;
      assert.equal(t.run.model.exitCode, 0);
      assert.match(t.text(), /tail-marker\nbye\n/);
      return { text: t.text(), xs: (t.text().match(/x{16,}/g) ?? []).join('').length };
    } finally {
      second.dispose();
    }
  }

  test("output beyond the executor's in-memory window is replayed from its spool, from the first byte", async () => {
    const { text, xs } = await printed3MiB('gate-2', {});
    assert.equal(xs, 3145728, 'every byte is shown');
    assert.match(text, /↻ reopened after the window reload\nx/);
  });

  test('output a spool cap dropped is skipped with a notice saying how much; the rest follows, the run does not fail', async () => {
    const { text, xs } = await printed3MiB('gate-3', { on: capped });
    assert.ok(xs > 0 && xs <= 2 * MiB && xs > 2 * MiB - 256 * 1024, `only what the 2 MiB cap keeps is shown (${xs} bytes)`);
    const m = /↻ reopened after the window reload; ([\d.]+) MiB of earlier output was dropped \(spool cap 2 MiB\)\n/.exec(text);
    assert.ok(m, text.slice(0, 300));
    assert.equal(Number(m[1]), Number(((3145728 - xs) / MiB).toFixed(1)));
  });

  test('a client that does not ask for the spool gets the newest 1 MiB and the old notice', async () => {
    const { text, xs } = await printed3MiB('gate-4', { outputSpool: false });
    assert.match(text, /no longer holds its oldest output/);
    assert.ok(xs > 0 && xs <= MiB, `only the retained tail is shown (${xs} bytes)`);
  });

  test('detach (the window goes away) leaves the process running; closing the terminal ends it', async () => {
    const first = await connect();
    const p = await first.startProcess({ argv: ['sh', '-c', 'echo "pid $$"; exec sleep 300'], cwd: dir, tty: false });
    const pid = Number(/pid (\d+)/.exec(await firstOutput(p, /pid \d+\n/))![1]);
    first.dispose('window reload');
    const second = await connect(first.sessionId);
    try {
      const a = reopen(second, p.processId);
      await a.until(/pid \d+/);
      a.run.detach();
      assert.equal(a.terminations.count, 0, 'detach does not end the process');
      const read = await second.call('process/read', { processId: p.processId, afterSeq: 0 });
      assert.equal(read.exited, false, 'still running after detach');
      const third = await (async () => {
        second.dispose('window reload');
        return connect(first.sessionId);
      })();
      try {
        const b = reopen(third, p.processId);
        await b.until(/pid \d+/);
        b.run.close();
        assert.equal(b.terminations.count, 1, 'closing the terminal ends the process');
        await b.run.done;
        const deadline = Date.now() + WAIT_MS;
        while (Date.now() < deadline && isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
        assert.equal(isAlive(pid), false, 'closing the terminal ended the process');
      } finally {
        third.dispose();
      }
    } finally {
      second.dispose();
    }
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
