/**
 * A window reload against a real executor daemon (`dist/cli.js daemon run`): the old window's client
 * goes away, a *new* client resumes the remembered session by its id, its processes are still there
 * and their output is complete from the first byte; `ExecutorConnection` with a `SessionMemory`
 * hands back the terminals and ends the other leftovers (MCP servers) before anything can start them
 * anew; an expired session is said as such; and after the TTL and the daemon's idle time nothing is left.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DisconnectedError, ExecServerClient, SessionExpiredError, type ClientOptions } from '../../src/client';
import { BundledServer } from '../../src/core/bundledServer';
import { ExecutorConnection, type RestoredSession } from '../../src/core/executorConnection';
import { SessionMemory } from '../../src/core/sessionMemory';
import { ensureDaemon } from '../../src/client/daemonStart';
import { isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { CLI_JS } from '../helpers/servers';
import { copyBundle } from '../helpers/sshd';
import { gather, numberedLines } from './clientHelpers';
import { MapMemento } from '../helpers/mapMemento';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) {
    for (const pid of daemonsIn(join(d, 'p'))) process.kill(pid, 'SIGKILL');
    rmSync(d, { recursive: true, force: true });
  }
});

/** A fresh private directory (the daemon's world) for one test. */
function world(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'eb-reload-'));
  dirs.push(dir);
  return { dir, env: { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: join(dir, 'p') } };
}

function daemonsIn(runtimeDir: string): number[] {
  return liveProcesses()
    .filter((p) => {
      try {
        const cmd = procFile(p.pid, 'cmdline').split('\0');
        return cmd.includes('daemon') && procFile(p.pid, 'environ').includes(`EXEC_BRIDGE_RUNTIME_DIR=${runtimeDir}\0`);
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

/** `pid <pid>`, lines 1..1000, a wait for a line on `fifo`, lines 1001..2000, `pid <pid>`. */
function gated(fifo: string): string[] {
  return [
    'bash',
    '-c',
    `mkfifo ${fifo}; echo "pid $$"; for ((i=1;i<=1000;i++)); do echo "line $i"; done; read -r _ < ${fifo}; for ((i=1001;i<=2000;i++)); do echo "line $i"; done; echo "pid $$"`,
  ];
}

const quiet: Partial<ClientOptions> = { keepalive: false, clientName: 'reload-test' };

describe('window reload: a new client resumes the session by its id', () => {
  test('processes are still there; a command and a shell get their output complete, then live', async () => {
    const { dir, env } = world();
    const daemon = await ensureDaemon({ cliPath: CLI_JS, env, sessionTtlMs: 30_000, idleExitMs: 2_000 });
    const endpoint = { kind: 'websocket' as const, url: daemon.url, token: daemon.token };
    const first = await ExecServerClient.connect({ ...quiet, endpoint });
    const fifo = join(dir, 'gate');
    const cmd = await first.startProcess({ argv: gated(fifo), cwd: dir, tty: false });
    const shell = await first.startProcess({
      argv: ['bash', '--norc', '--noprofile', '-i'],
      cwd: dir,
      tty: true,
      env: { PS1: '$ ', TERM: 'dumb' },
    });
    const before = gather(cmd);
    await before.until((t) => t.includes('line 1000\n'), 15_000, 'the first 1000 lines');
    const shellBefore = gather(shell);
    await shell.write('echo "before-$((1+1))"\n');
    await shellBefore.until((t) => t.includes('before-2'), 15_000, 'the shell');
    const pid = /^pid (\d+)/.exec(before.text())![1];
    const sessionId = first.sessionId;
    // The old extension host goes away: its connection closes, the session is detached.
    first.dispose('window reload');

    const second = await ExecServerClient.connect({ ...quiet, endpoint, resumeSessionId: sessionId });
    try {
      assert.equal(second.sessionId, sessionId, 'the same session, not a new one');
      const cmdAgain = await second.attachProcess(cmd.processId, { tty: false, stdinWritable: false });
      assert.equal(cmdAgain.evictedBefore, 0);
      const replay = gather(cmdAgain.handle);
      writeFileSync(fifo, 'go\n');
      const done = await cmdAgain.handle.completion;
      assert.equal(done.exitCode, 0);
      assert.equal(replay.text(), `pid ${pid}\n${numberedLines(2000)}pid ${pid}\n`, 'every byte, once, in order, from the first');

      const shellAgain = await second.attachProcess(shell.processId, { tty: true, stdinWritable: true });
      const shellText = gather(shellAgain.handle);
      await shellText.until((t) => t.includes('before-2'), 5_000, 'the replayed shell output');
      await shellAgain.handle.write('echo "after-$((2+1))"\n');
      await shellText.until((t) => t.includes('after-3'), 15_000, 'the live shell');
      await shellAgain.handle.write('exit 4\n');
      assert.equal((await shellAgain.handle.completion).exitCode, 4);
    } finally {
      second.dispose();
    }
  });

  test('a session another client still holds is not taken (a second window does not adopt it)', async () => {
    const { env } = world();
    const daemon = await ensureDaemon({ cliPath: CLI_JS, env, idleExitMs: 2_000 });
    const endpoint = { kind: 'websocket' as const, url: daemon.url, token: daemon.token };
    const holder = await ExecServerClient.connect({ ...quiet, endpoint });
    try {
      const err = await ExecServerClient.connect({ ...quiet, endpoint, resumeSessionId: holder.sessionId }).then(
        () => assert.fail('resumed an attached session'),
        (e: Error) => e,
      );
      assert.match(err.message, /already attached to another connection/);
      assert.equal(holder.state.kind, 'connected');
    } finally {
      holder.dispose();
    }
  });

  test('takeOverSession: a client still holding the session is told and fails for good; the new one has its processes', async () => {
    const { dir, env } = world();
    const daemon = await ensureDaemon({ cliPath: CLI_JS, env, idleExitMs: 2_000 });
    const endpoint = { kind: 'websocket' as const, url: daemon.url, token: daemon.token };
    const holder = await ExecServerClient.connect({ ...quiet, endpoint });
    let second: ExecServerClient | undefined;
    try {
      const fifo = join(dir, 'gate');
      const p = await holder.startProcess({ argv: gated(fifo), cwd: dir, tty: false });
      await gather(p).until((t) => t.includes('line 1000\n'), 15_000, 'the first 1000 lines');
      const holderFailed = new Promise<DisconnectedError>((resolve) => {
        holder.onDidChangeState((s) => {
          if (s.kind === 'failed') resolve(s.error);
        });
      });
      second = await ExecServerClient.connect({ ...quiet, endpoint, resumeSessionId: holder.sessionId, takeOverSession: true });
      assert.equal(second.sessionId, holder.sessionId, 'the same session');
      const why = await holderFailed;
      assert.equal(why.reason, 'takenOver');
      assert.match(why.message, /another window resumed this executor session/);
      await assert.rejects(p.completion, (e: unknown) => e instanceof DisconnectedError && e.reason === 'takenOver');
      await assert.rejects(holder.readFile(fifo), (e: unknown) => e instanceof DisconnectedError, 'the old client is done');
      const again = await second.attachProcess(p.processId, { tty: false, stdinWritable: false });
      const text = gather(again.handle);
      writeFileSync(fifo, 'go\n');
      assert.equal((await again.handle.completion).exitCode, 0);
      assert.match(text.text(), new RegExp(`^pid \\d+\\n${numberedLines(2000)}pid \\d+\\n$`), 'every byte, from the first');
      assert.equal(second.state.kind, 'connected', 'nobody took it back');
    } finally {
      second?.dispose();
      holder.dispose();
    }
  });

  test('an unknown session id is SessionExpiredError', async () => {
    const { env } = world();
    const daemon = await ensureDaemon({ cliPath: CLI_JS, env, idleExitMs: 2_000 });
    const err = await ExecServerClient.connect({
      ...quiet,
      endpoint: { kind: 'websocket', url: daemon.url, token: daemon.token },
      resumeSessionId: '00000000-0000-4000-8000-000000000000',
    }).then(
      () => assert.fail('resumed a session that does not exist'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SessionExpiredError, String(err));
  });
});

describe('window reload: ExecutorConnection with a SessionMemory', () => {
  /** `cliPath`: the extension's bundle (another build is another version, with a daemon of its own). */
  function window(memento: MapMemento, env: NodeJS.ProcessEnv, ttlMs = 30_000, cliPath = CLI_JS) {
    const bundled = new BundledServer({ cliPath, env, sessionTtlMs: () => ttlMs, idleExitMs: 1_000 });
    const conn = new ExecutorConnection(
      { kind: 'bundled', name: 'bundled', cwd: '/' },
      // The window asks for its session's TTL (execBridge.sessionTtlSeconds in the extension).
      {
        bundled,
        memory: new SessionMemory(memento),
        getToken: () => Promise.resolve(undefined),
        clientOptions: quiet,
        sessionTtlMs: () => ttlMs,
      },
    );
    const restored: RestoredSession[] = [];
    conn.onDidRestore((r) => restored.push(r));
    return { bundled, conn, restored, close: () => (conn.dispose('window reload'), bundled.dispose()) };
  }
  const terminalInfo = {
    title: 'build · bundled',
    kind: 'command' as const,
    commandLine: 'build',
    cwd: '/',
    sandboxed: false,
    sandboxLabel: 'none',
  };

  test('resumes the remembered session: its terminal is handed back, an MCP server left over is ended first', async () => {
    const { dir, env } = world();
    const memento = new MapMemento();
    const w1 = window(memento, env);
    const c1 = await w1.conn.connect();
    const fifo = join(dir, 'gate');
    const term = await c1.startProcess({ argv: gated(fifo), cwd: dir, tty: false });
    w1.conn.rememberTerminal(term.processId, terminalInfo);
    const mcp = await c1.startProcess({ argv: ['sh', '-c', 'echo "pid $$"; exec sleep 300'], cwd: dir, tty: false, pipeStdin: true });
    const mcpOut = gather(mcp);
    await mcpOut.until((t) => /pid \d+\n/.test(t), 10_000, 'the MCP stand-in');
    const mcpPid = Number(/pid (\d+)/.exec(mcpOut.text())![1]);
    await gather(term).until((t) => t.includes('line 1000\n'), 15_000, 'the first 1000 lines');
    const sessionId = c1.sessionId;
    w1.close();
    assert.ok(isAlive(mcpPid), 'a detached session keeps its processes');

    const w2 = window(memento, env);
    try {
      const t0 = performance.now();
      const c2 = await w2.conn.connect();
      assert.equal(c2.sessionId, sessionId);
      assert.equal(w2.restored.length, 1);
      assert.deepEqual(
        w2.restored[0]!.terminals.map((p) => [p.processId, p.terminal?.title]),
        [[term.processId, 'build · bundled']],
      );
      // Ended before connect() resolved: whatever starts the server again cannot run it twice.
      await until(() => !isAlive(mcpPid), 2_000, 'the leftover MCP server gone');
      const again = await c2.attachProcess(term.processId, { tty: false, stdinWritable: false });
      const text = gather(again.handle);
      await text.until((t) => t.includes('line 1000\n'), 5_000, 'the replay');
      console.log(`# resume + replay of 1000 lines: ${(performance.now() - t0).toFixed(0)} ms`);
      writeFileSync(fifo, 'go\n');
      assert.equal((await again.handle.completion).exitCode, 0);
      assert.match(text.text(), new RegExp(`^pid \\d+\\n${numberedLines(2000)}pid \\d+\\n$`));
    } finally {
      w2.close();
    }
  });

  test('a previous window that lingers (its extension host still connected) does not keep the session from the new one', async () => {
    const { dir, env } = world();
    const memento = new MapMemento();
    const w1 = window(memento, env);
    const c1 = await w1.conn.connect();
    const term = await c1.startProcess({ argv: ['sh', '-c', 'echo ready; exec sleep 300'], cwd: dir, tty: false });
    w1.conn.rememberTerminal(term.processId, terminalInfo);
    await gather(term).until((t) => t.includes('ready'), 10_000, 'the terminal command');
    const sessionId = c1.sessionId;
    // w1 is not closed: code-server keeps a reloaded window's extension host for a while.
    const w1Failed = new Promise<string>((resolve) => {
      w1.conn.onDidChangeState((s) => {
        if (s.kind === 'failed') resolve(s.message);
      });
    });
    const w2 = window(memento, env);
    try {
      const c2 = await w2.conn.connect();
      assert.equal(c2.sessionId, sessionId, 'the remembered session, at once (not -32010 until the old one goes)');
      assert.deepEqual(
        w2.restored[0]?.terminals.map((p) => p.processId),
        [term.processId],
      );
      assert.match(await w1Failed, /another window resumed this executor session/);
      // The old window, asked again, does not take the session back: it gets a new one.
      const c1b = await w1.conn.connect();
      assert.notEqual(c1b.sessionId, sessionId);
      assert.equal(c2.state.kind, 'connected');
      assert.equal(
        new SessionMemory(memento).recall('bundled', JSON.stringify({ kind: 'bundled', name: 'bundled', cwd: '/' }))?.sessionId,
        sessionId,
      );
    } finally {
      w2.close();
      w1.close();
    }
  });

  test('a remembered session that expired: said once, with how many terminals it had; a new session', async () => {
    const { dir, env } = world();
    const memento = new MapMemento();
    const w1 = window(memento, env, 10_000);
    const c1 = await w1.conn.connect();
    const term = await c1.startProcess({ argv: ['sleep', '300'], cwd: dir, tty: false });
    w1.conn.rememberTerminal(term.processId, terminalInfo);
    const old = c1.sessionId;
    w1.close();
    // The daemon was restarted meanwhile (a crash, or `exec-bridge daemon stop`): the session is gone.
    const gone = new BundledServer({ cliPath: CLI_JS, env });
    await gone.ensureStarted();
    await gone.stop();
    const w2 = window(memento, env);
    try {
      const c2 = await w2.conn.connect();
      assert.notEqual(c2.sessionId, old);
      assert.equal(w2.restored.length, 1);
      assert.match(w2.restored[0]!.expired ?? '', /no longer has session/);
      assert.equal(w2.restored[0]!.lostTerminals, 1);
      assert.equal(w2.conn.hasRememberedProcesses, false, 'the new session starts empty');
    } finally {
      w2.close();
    }
  });

  test('a closed window: after the TTL its processes are ended, after the idle time the daemon exits', async () => {
    const { dir, env } = world();
    const memento = new MapMemento();
    const w1 = window(memento, env, 1_500);
    const c1 = await w1.conn.connect();
    const p = await c1.startProcess({ argv: ['sh', '-c', 'echo "pid $$"; exec sleep 300'], cwd: dir, tty: false });
    const out = gather(p);
    await out.until((t) => /pid \d+\n/.test(t), 10_000, 'the pid');
    const pid = Number(/pid (\d+)/.exec(out.text())![1]);
    const daemon = w1.bundled.pid!;
    w1.close();
    await until(() => !isAlive(pid), 10_000, 'the process ended after the TTL');
    await until(() => !isAlive(daemon), 10_000, 'the daemon exited when idle');
    assert.deepEqual(daemonsIn(env.EXEC_BRIDGE_RUNTIME_DIR!), []);
  });

  test("an extension update: the new version resumes the session on the older version's daemon, which retires once idle", async () => {
    const { dir, env } = world();
    const memento = new MapMemento();
    // Two builds of the bundle are two versions: a daemon each (bundleKey hashes the bundle).
    const v1 = copyBundle(join(dir, 'v1'));
    const v2 = copyBundle(join(dir, 'v2'), '\n// version 2\n');
    const open = (cliPath: string) => window(memento, env, 600_000, cliPath);
    const w1 = open(v1);
    const c1 = await w1.conn.connect();
    const oldDaemon = w1.bundled.pid!;
    const fifo = join(dir, 'gate');
    const term = await c1.startProcess({ argv: gated(fifo), cwd: dir, tty: false });
    w1.conn.rememberTerminal(term.processId, terminalInfo);
    await gather(term).until((t) => t.includes('line 1000\n'), 15_000, 'the first 1000 lines');
    const sessionId = c1.sessionId;
    w1.close(); // the update: the old window goes, its daemon stays

    const w2 = open(v2);
    try {
      const c2 = await w2.conn.connect();
      assert.equal(c2.sessionId, sessionId, 'the same session, found on the older daemon');
      assert.equal(w2.bundled.pid, oldDaemon);
      assert.equal(w2.bundled.usingOtherVersion, true);
      assert.equal(w2.restored.length, 1);
      assert.equal(w2.restored[0]!.expired, undefined, 'not reported as lost');
      assert.deepEqual(
        w2.restored[0]!.terminals.map((p) => p.processId),
        [term.processId],
      );
      const again = await c2.attachProcess(term.processId, { tty: false, stdinWritable: false });
      const text = gather(again.handle);
      writeFileSync(fifo, 'go\n');
      assert.equal((await again.handle.completion).exitCode, 0);
      assert.match(text.text(), new RegExp(`^pid \\d+\\n${numberedLines(2000)}pid \\d+\\n$`), 'complete from the first byte');
      // New work of this window runs in its session there too.
      const echo = await c2.startProcess({ argv: ['echo', 'after the update'], cwd: dir });
      const eo = gather(echo);
      await echo.completion;
      assert.equal(eo.text(), 'after the update\n');
      // Reconnect starts a new session on this version's daemon; the old one exits once its session is gone.
      const c3 = await w2.conn.reconnect();
      assert.notEqual(c3.sessionId, sessionId);
      assert.equal(w2.bundled.usingOtherVersion, false);
      assert.notEqual(w2.bundled.pid, oldDaemon);
    } finally {
      w2.close();
    }
  });
});
