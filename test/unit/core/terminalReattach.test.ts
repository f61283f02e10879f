/**
 * A terminal reopened after a window reload (`TerminalRun` with `attach`), against our real
 * exec-server in process: the first window's client goes away, a new client resumes the session and
 * the run replays the retained output, then follows it live to its end. Also: output older than the
 * executor's window is skipped with a notice (not a failure), and `detach` leaves the process running.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, type ProcessHandle } from '../../../src/client';
import { TerminalRun, type RunSpec } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import { MemoryTransport } from '../../helpers/memoryTransport';

const WAIT_MS = 15_000;
let server: ExecServer;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-reattach-'));
  server = new ExecServer({ sandboxPrewarmMs: 0 });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(resumeSessionId?: string): Promise<ExecServerClient> {
  return ExecServerClient.connect({
    connector: async () => {
      const [near, far] = MemoryTransport.pair();
      server.serve(far);
      return near;
    },
    keepalive: false,
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
    onConnectionState: client.onDidChangeState,
    canResize: () => true,
  });
  let raw = '';
  const waiters = new Set<() => void>();
  run.model.onWrite((t) => {
    raw += t;
    for (const w of [...waiters]) w();
  });
  const text = () => raw.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r\n/g, '\n');
  const until = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(text())) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${pattern}; text ends ${JSON.stringify(text().slice(-200))}`));
      }, WAIT_MS);
      waiters.add(check);
      check();
    });
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

  test('output older than the executor keeps is skipped with a notice; the rest follows, the run does not fail', async () => {
    const first = await connect();
    const gate = join(dir, 'gate-2');
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
    const second = await connect(first.sessionId);
    try {
      const t = reopen(second, p.processId);
      await t.until(/tail-marker/);
      writeFileSync(gate, 'go\n');
      await t.run.done;
      assert.equal(t.run.model.exitCode, 0);
      assert.match(t.text(), /no longer holds its oldest output/);
      assert.match(t.text(), /tail-marker\nbye\n/);
      const xs = (t.text().match(/x/g) ?? []).length;
      assert.ok(xs > 0 && xs < 3145728, `only the retained tail is shown (${xs} bytes)`);
    } finally {
      second.dispose();
    }
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
