/**
 * `exec-bridge mcp` as an agent meets it: the MCP SDK's Client over stdio spawns `node cli.js mcp …`
 * and calls its tools, once against our bundled daemon (in a runtime directory of its own) and once
 * against the real `codex exec-server` (`--url`). Run, exit code and bounded output, timeout,
 * background processes, a sandbox denial as a tool error, --allow-unsandboxed, bad input, and no
 * process left once the client disconnects.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { startExecServer, type ExecServerProcess, type ServerKind } from '../helpers/servers';
import { copyBundle } from '../helpers/sshd';
import { assertBoundedFlood, floodCommand, startMcp as startMcpClient, type Mcp } from './agentMcpClient';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-agent-mcp-')));
// A copy: a rebuild of dist/ while this file runs must not change the bundle (nor the daemon's key).
const CLI = copyBundle(join(base, 'bundle'));
const runtime = join(base, 'run');
// Outside every workspace and outside /tmp, which workspace-write may write.
const outside = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'eb-agent-out-'));
let tags = 0;
/** A unique `sleep` duration: the command is found by its cmdline (inside the sandbox `$$` is another pid namespace's). */
const tag = () => `${7000 + (process.pid % 1000)}${++tags}`;
const sleeping = (t: string) => liveProcesses().some((p) => procFile(p.pid, 'cmdline') === `sleep\u0000${t}\u0000`);

/** The pids of the bundled daemons of runtime directory `dir` (or of every one of this file: under `base`). */
function daemons(dir?: string): number[] {
  const all = liveProcesses().filter((p) => {
    const cmd = procFile(p.pid, 'cmdline').split('\0');
    const env = procFile(p.pid, 'environ');
    return (
      cmd.includes('daemon') &&
      cmd.includes('run') &&
      env.includes(dir ? `EXEC_BRIDGE_RUNTIME_DIR=${dir}\0` : `EXEC_BRIDGE_RUNTIME_DIR=${base}/`)
    );
  });
  // A child the daemon is starting has its command line until it execs: not a daemon.
  return all.filter((p) => !all.some((d) => d.pid === p.ppid)).map((p) => p.pid);
}

after(() => {
  // The bundled daemon outlives its clients by design: this file's go now.
  for (const pid of daemons()) process.kill(pid, 'SIGKILL');
  rmSync(base, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

function startMcp(args: string[], cwd: string, runtimeDir = runtime): Promise<Mcp> {
  return startMcpClient(CLI, args, {
    cwd,
    env: { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtimeDir } as Record<string, string>,
    clientName: 'agent-mcp-test',
  });
}

const KINDS: readonly ServerKind[] = ['ours', 'codex'];

for (const kind of KINDS) {
  describe(`exec-bridge mcp against ${kind === 'ours' ? 'the bundled daemon' : 'codex exec-server'}`, () => {
    const ws = realpathSync(mkdtempSync(join(base, `ws-${kind}-`)));
    let codex: ExecServerProcess | undefined;
    /** The executor arguments: the bundled daemon by default (its directory: ours), or codex by URL. */
    const executor = () => (codex ? ['--url', codex.url, '--cwd', ws] : []);
    let mcp: Mcp;

    before(async () => {
      if (kind === 'codex') codex = await startExecServer('codex');
      mcp = await startMcp(executor(), ws);
    });
    after(async () => {
      await mcp?.close();
      await codex?.stop();
    });

    test('lists its six tools, each described, and the executor with its sandbox', async () => {
      const { tools } = await mcp.client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), [
        'list_executors',
        'read_process_output',
        'run_command',
        'start_process',
        'stop_process',
        'write_process_input',
      ]);
      for (const t of tools) assert.ok((t.description ?? '').length > 60, `${t.name} is described`);
      const run = tools.find((t) => t.name === 'run_command')!;
      assert.deepEqual(run.inputSchema.required, ['command']);
      const list = await mcp.call('list_executors');
      assert.equal(list.isError, false);
      assert.match(
        list.text,
        kind === 'ours' ? /^- bundled \(default\): this machine/m : /^- 127\.0\.0\.1:\d+ \(default\): exec-server at ws:/m,
      );
      assert.match(list.text, /Sandbox: workspace-write, network off; unsandboxed runs: refused/);
    });

    test('run_command: the exit code, stdout and stderr, in the default directory', async () => {
      const r = await mcp.call('run_command', {
        command: 'echo out; echo err >&2; pwd; echo "v=$EB_AGENT_V ${HOME:+home}"; exit 3',
        env: { EB_AGENT_V: 'yes' },
      });
      assert.equal(r.isError, false, r.text);
      assert.match(r.text, /^Ran `echo out; .*` on \S+ in .* \(sandbox: workspace-write, network off\)\.\nExit: exit code 3\.\n/);
      // `env` is laid over the executor's environment (HOME is still there).
      for (const line of ['out', 'err', ws, 'v=yes home']) assert.ok(r.text.split('\n').includes(line), `${line} in ${r.text}`);
      // A failure of the command's own is an answer, not a denial.
      const plain = await mcp.call('run_command', { command: 'ls /nonexistent-eb-agent' });
      assert.equal(plain.isError, false, plain.text);
      assert.match(plain.text, /\nExit: exit code 2\.\n/);
      assert.match((await mcp.call('list_executors')).text, /; connected; default cwd /);
    });

    test('run_command: 50 MiB of output comes back as head and tail within the bound, with the marker', async () => {
      assertBoundedFlood(await mcp.call('run_command', { command: floodCommand(52428800), timeout_seconds: 120 }), 52428800);
    });

    test('run_command: a timeout kills the command and says so', async () => {
      const t = tag();
      // 3 s: time enough for the first line even on a loaded machine (it must be in the answer).
      const r = await mcp.call('run_command', { command: `echo started; exec sleep ${t}`, timeout_seconds: 3 });
      assert.equal(r.isError, true);
      assert.match(r.text, /^timed out after 3 s: the command was killed \(exit code 137 \(killed\)\)/);
      assert.match(r.text, /\nstarted\n/);
      assert.equal(sleeping(t), false, 'the command is gone');
    });

    test('background: start, wait for its output, write its stdin, stop it; an ended one still answers', async () => {
      const s = await mcp.call('start_process', {
        command: 'echo ready; while read l; do echo "got $l"; done',
        wait_seconds: 30,
        wait_for: 'ready',
      });
      assert.equal(s.isError, false, s.text);
      const id = /^Started `echo ready; .*` in the background as "(bg-[0-9a-f]{8})" on /.exec(s.text)?.[1];
      assert.ok(id, s.text);
      assert.match(
        s.text,
        /\nState: running for \d+ s \(sandbox: workspace-write, network off\)\.\nNew output \(stdout and stderr, 6 bytes\):\nready\n$/,
      );
      assert.match((await mcp.call('read_process_output', { id })).text, /\nNew output: none\.$/);
      assert.match(
        (await mcp.call('write_process_input', { id, text: 'hello' })).text,
        new RegExp(`^Wrote 6 bytes to the stdin of "${id}"`),
      );
      const got = await mcp.call('read_process_output', { id, wait_seconds: 30, wait_for: 'got hello' });
      assert.match(got.text, /\ngot hello\n$/);
      assert.match((await mcp.call('list_executors')).text, new RegExp(`^- ${id}: \`echo ready; .*\` on \\S+, running for `, 'm'));
      const stop = await mcp.call('stop_process', { id });
      assert.equal(stop.isError, false, stop.text);
      assert.match(stop.text, new RegExp(`^Stopped "${id}"\\.\\nState: ended, exit code 130 \\(interrupted\\)\\.\\nNew output: none\\.$`));
      const after = await mcp.call('read_process_output', { id });
      assert.equal(after.isError, false);
      assert.match(after.text, /^State: ended, exit code 130 \(interrupted\)\.\nNew output: none\.$/);
      assert.match((await mcp.call('stop_process', { id })).text, new RegExp(`^"${id}" had already ended\\.`));

      const b = await mcp.call('start_process', { command: 'echo bye; exit 4', wait_seconds: 30 });
      assert.equal(b.isError, false, b.text);
      assert.match(
        b.text,
        /^Started `echo bye; exit 4` in the background as "bg-[0-9a-f]{8}" on .*, and it already ended\.\nState: ended, exit code 4\.\nNew output \(stdout and stderr, 4 bytes\):\nbye\n$/,
      );
      const id2 = /as "(bg-[0-9a-f]{8})"/.exec(b.text)![1]!;
      assert.match(
        (await mcp.call('write_process_input', { id: id2, text: 'x' })).text,
        new RegExp(`^"${id2}" has ended; nothing was written\\.`),
      );
    });

    test('a sandbox denial is a tool error; unsandboxed: true is refused without --allow-unsandboxed', async () => {
      const target = join(outside, `denied-${kind}`);
      const r = await mcp.call('run_command', { command: `touch ${target}` });
      assert.equal(r.isError, true, r.text);
      assert.match(
        r.text,
        /^blocked by the sandbox: `touch .*` ended with exit code 1 because the sandbox \(workspace-write, network off\) stopped something it tried; /,
      );
      assert.match(r.text, /this server runs nothing outside the sandbox \(it was started without --allow-unsandboxed\)/);
      assert.match(r.text, /Read-only file system/);
      const again = await mcp.call('run_command', { command: `touch ${target}`, unsandboxed: true });
      assert.equal(again.isError, true);
      assert.match(again.text, /^unsandboxed: true is refused: /);
      assert.equal(existsSync(target), false);
      const bg = await mcp.call('start_process', { command: 'sleep 1', unsandboxed: true });
      assert.match(bg.text, /^unsandboxed: true is refused: /);
      // Inside the workspace the same command is fine.
      assert.match((await mcp.call('run_command', { command: `touch ${join(ws, 'inside')}` })).text, /\nExit: exit code 0\.\n/);
      // A background command is judged the same way when it ends.
      const bgDenied = await mcp.call('start_process', { command: `touch ${target}`, wait_seconds: 30 });
      assert.equal(bgDenied.isError, true, bgDenied.text);
      assert.match(bgDenied.text, /^blocked by the sandbox: .*\nStarted `touch .*, and it already ended\.\nState: ended, exit code 1\./s);
    });

    test('--allow-unsandboxed: the denial says to re-run only if the user allowed it, and unsandboxed: true runs it', async () => {
      const open = await startMcp([...executor(), '--allow-unsandboxed'], ws);
      try {
        const target = join(outside, `allowed-${kind}`);
        const r = await open.call('run_command', { command: `touch ${target}` });
        assert.equal(r.isError, true);
        assert.match(r.text, /; re-run with unsandboxed: true only if the user allowed it\.\nRan `touch .*\nExit: exit code 1\.\n/);
        const again = await open.call('run_command', { command: `touch ${target}`, unsandboxed: true });
        assert.equal(again.isError, false, again.text);
        assert.equal(existsSync(target), true);
        assert.match((await open.call('list_executors')).text, /unsandboxed runs: allowed when the user agreed/);
      } finally {
        await open.close();
      }
    });

    test('bad input is a tool error that says what is wrong', async () => {
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['run_command', { command: '' }, /command must not be empty/],
        ['run_command', {}, /Invalid arguments for tool run_command: .*command/s],
        ['run_command', { command: 5 }, /Invalid arguments for tool run_command: .*command/s],
        ['run_command', { command: 'true', timeout_seconds: 0 }, /timeout_seconds must be more than 0/],
        ['run_command', { command: 'true', timeout_seconds: 99999 }, /timeout_seconds may be at most 3600/],
        ['run_command', { command: 'true', executor: 'nope' }, /^there is no executor "nope": use one of /],
        [
          'run_command',
          { command: 'true', cwd: '/nonexistent-eb-agent' },
          /^could not start the command on .* in \/nonexistent-eb-agent: /,
        ],
        ['start_process', { command: '  ' }, /^command is empty/],
        ['start_process', { command: 'true', wait_seconds: 61 }, /wait_seconds may be at most 60/],
        ['read_process_output', { id: 'bg99' }, /^there is no background process "bg99"/],
        ['read_process_output', { id: 'bg99', wait_seconds: -1 }, /wait_seconds must not be negative/],
        ['write_process_input', { id: 'bg99', text: 'x' }, /^there is no background process "bg99"/],
        ['write_process_input', { id: 'bg99' }, /Invalid arguments for tool write_process_input: .*text/s],
        ['stop_process', { id: 'bg99' }, /^there is no background process "bg99"/],
        ['nope', {}, /Tool nope not found/],
      ];
      for (const [name, a, message] of cases) {
        const r = await mcp.call(name, a);
        assert.equal(r.isError, true, `${name} ${JSON.stringify(a)}: ${r.text}`);
        assert.match(r.text, message, `${name} ${JSON.stringify(a)}`);
      }
    });

    test('the client disconnects: every process it started is killed, in flight or in the background, and the server exits', async () => {
      const m = await startMcp(executor(), ws);
      const [bgTag, runTag] = [tag(), tag()];
      assert.match((await m.call('start_process', { command: `exec sleep ${bgTag}`, wait_seconds: 0 })).text, /^Started `exec sleep/);
      const inFlight = m.call('run_command', { command: `exec sleep ${runTag}`, timeout_seconds: 600 }).catch(() => undefined);
      await until(() => sleeping(bgTag) && sleeping(runTag), 20_000, 'both commands running');
      await m.close();
      await inFlight;
      await until(() => !sleeping(bgTag) && !sleeping(runTag), 10_000, 'both commands gone');
      assert.equal(isAlive(m.pid), false, 'the mcp server exited');
      assert.match(m.stderr(), /closing: stdin ended/);
      assert.match(m.stderr(), /stopping 2 process\(es\)/);
    });
  });
}

describe('exec-bridge mcp with several executors', () => {
  test('the first is the default, "executor" names another: here a stdio launcher of our exec-server', async () => {
    const [a, b] = [realpathSync(mkdtempSync(join(base, 'ws-a-'))), realpathSync(mkdtempSync(join(base, 'ws-b-')))];
    const m = await startMcp(['--bundled', '--stdio', `${process.execPath} ${CLI} serve --listen stdio`, '--name', 'piped', '--cwd', b], a);
    try {
      const list = await m.call('list_executors');
      assert.match(list.text, /^- bundled \(default\): this machine .*; default cwd (.*)$/m);
      assert.match(list.text, new RegExp(`^- piped: stdio: .* serve --listen stdio; not connected; default cwd ${b}$`, 'm'));
      assert.match((await m.call('run_command', { command: 'pwd' })).text, new RegExp(`\\n${a}\\n$`));
      const piped = await m.call('run_command', { command: 'pwd', executor: 'piped' });
      assert.match(piped.text, new RegExp(`^Ran \`pwd\` on piped in ${b} .*\\n${b}\\n$`, 's'));
      assert.match((await m.call('list_executors')).text, /^- piped: .*; connected; /m);
    } finally {
      await m.close();
    }
  });
});

describe('exec-bridge mcp command line', () => {
  test('a usage error exits 2 with the reason on stderr, before any MCP on stdout', () => {
    const r = spawnSync(process.execPath, [CLI, 'mcp', '--sandbox', 'none'], { encoding: 'utf8', input: '', timeout: 20_000 });
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^exec-bridge mcp: --sandbox must be read-only, workspace-write or full-access, got none\nusage: exec-bridge mcp /,
    );
  });
});

describe('exec-bridge mcp killed outright', () => {
  test('its processes end with its session on the bundled daemon (--session-ttl-ms)', async () => {
    const ws = realpathSync(mkdtempSync(join(base, 'ws-killed-')));
    const m = await startMcp(['--session-ttl-ms', '1000'], ws);
    const t = tag();
    assert.match((await m.call('start_process', { command: `exec sleep ${t}`, wait_seconds: 0 })).text, /^Started `exec sleep/);
    await until(() => sleeping(t), 20_000, 'the command running');
    process.kill(m.pid, 'SIGKILL');
    await until(() => !isAlive(m.pid), 5_000, 'the mcp server gone');
    // No kill from us: the daemon ends the detached session, and its processes, after the TTL.
    await until(() => !sleeping(t), 20_000, 'the command ended with the session');
    await m.close();
  });
});

describe('exec-bridge mcp when the bundled daemon dies', () => {
  test("the answers say so in this CLI's words (not VS Code's Reconnect), and the next command starts a new daemon", async () => {
    // A daemon of its own: the other tests' sessions are not in it.
    const dir = join(base, 'run-dies');
    const ws = realpathSync(mkdtempSync(join(base, 'ws-dies-')));
    const m = await startMcp([], ws, dir);
    try {
      assert.match((await m.call('run_command', { command: 'true' })).text, /\nExit: exit code 0\./);
      const [pid, ...more] = daemons(dir);
      assert.ok(pid !== undefined && more.length === 0, `one daemon: ${pid} ${more.join(' ')}`);
      const [runTag, bgTag] = [tag(), tag()];
      const bg = await m.call('start_process', { command: `exec sleep ${bgTag}`, wait_seconds: 0 });
      const id = /as "(bg-[0-9a-f]{8})"/.exec(bg.text)?.[1];
      assert.ok(id, bg.text);
      const inFlight = m.call('run_command', { command: `exec sleep ${runTag}`, timeout_seconds: 600 });
      await until(() => sleeping(runTag) && sleeping(bgTag), 20_000, 'both commands running');
      // The whole group, as an OOM kill would.
      process.kill(-pid, 'SIGKILL');
      const gone = `the bundled exec-server \\(the exec-bridge daemon, pid ${pid}\\) is gone, and what ran on it ended with it\\. The next command of this MCP server starts it again: run again what you still need`;
      const r = await inFlight;
      assert.equal(r.isError, true, r.text);
      // The kill can fall between the spawn (the test sees the sleep) and the start's answer reaching
      // the client (CI c23, under load): then the start itself is what was lost. The same words either way.
      assert.match(
        r.text,
        new RegExp(`^(lost \`exec sleep ${runTag}\`: ${gone}\nOutput: none\\.|could not start the command on bundled in ${ws}: ${gone})$`),
      );
      assert.doesNotMatch(r.text, /Reconnect|status bar|may still be running/);
      const read = await m.call('read_process_output', { id });
      assert.equal(read.isError, true, read.text);
      assert.match(read.text, new RegExp(`^State: lost: lost \`exec sleep ${bgTag}\`: ${gone}\\.\nNew output: none\\.$`));
      // What ran on it ended with it (the orphan guard), as the words say.
      await until(() => !sleeping(runTag) && !sleeping(bgTag), 10_000, 'both commands gone with the daemon');
      const again = await m.call('run_command', { command: 'echo again' });
      assert.equal(again.isError, false, again.text);
      assert.match(again.text, /\nExit: exit code 0\.\n.*\nagain\n$/s);
      const [next] = daemons(dir);
      assert.ok(next !== undefined && next !== pid, `a new daemon (${next}, was ${pid})`);
    } finally {
      await m.close();
      for (const p of daemons(dir)) process.kill(p, 'SIGKILL');
    }
  });
});
