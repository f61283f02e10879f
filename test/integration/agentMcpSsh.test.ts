/**
 * `exec-bridge mcp --ssh` as an agent meets it: the MCP SDK's Client over stdio spawns
 * `node cli.js mcp --ssh root@127.0.0.1:PORT …` against the real OpenSSH server on loopback
 * (test/helpers/sshd.ts; its logins have a HOME of their own), which installs our bundle there and
 * runs the commands under that executor's daemon. A command runs there in the sandbox, its output
 * comes back bounded, a denial is the tool error, nothing is left running once the client goes; and
 * a model's build-test-fix loop in a small project on that executor (issue 22's "done when").
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { descendantsOf, isAlive, liveProcesses, procFile, until } from '../helpers/procs';
import { copyBundle, startSshd, type Sshd } from '../helpers/sshd';
import { assertBoundedFlood, floodCommand, startMcp as startMcpClient, type Mcp } from './agentMcpClient';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'eb-agent-ssh-')));
// A copy: a rebuild of dist/ while this file runs must not change the bundle installed over ssh.
const CLI = copyBundle(join(base, 'bundle'));
// Outside /tmp, which workspace-write may write: the executor's workspace, and a folder beside it.
const varTmp = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
const workspace = realpathSync(mkdtempSync(join(varTmp, 'eb-agent-ssh-ws-')));
const outside = realpathSync(mkdtempSync(join(varTmp, 'eb-agent-ssh-out-')));
let sshd: Sshd;
let tags = 0;
/** A unique `sleep` duration: the command is found by its cmdline. */
const tag = () => `${8000 + (process.pid % 1000)}${++tags}`;
const sleeping = (t: string) => liveProcesses().some((p) => procFile(p.pid, 'cmdline') === `sleep\u0000${t}\u0000`);

before(async () => {
  sshd = await startSshd();
});
after(async () => {
  // Also stops the executor's daemon (it outlives its clients by design).
  await sshd?.stop();
  rmSync(base, { recursive: true, force: true });
  rmSync(workspace, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

/** `exec-bridge mcp` with the ssh executor (the test sshd's keys and known host) as its default, the workspace as its --cwd. */
function startMcp(extra: string[] = []): Promise<Mcp> {
  const ssh = ['--ssh', `root@127.0.0.1:${sshd.port}`, ...sshd.clientOptions.flatMap((o) => ['--ssh-option', o])];
  return startMcpClient(CLI, [...ssh, '--name', 'devbox', '--cwd', workspace, ...extra], {
    cwd: base,
    env: process.env as Record<string, string>,
    clientName: 'agent-mcp-ssh-test',
    // A first call installs the bundle over ssh: more than the SDK's default 60 s on a busy machine.
    callTimeoutMs: 180_000,
  });
}

/** Processes on the executor's side of this sshd: its logins' processes carry its runtime directory. */
function executorSide(): number[] {
  return liveProcesses()
    .filter((p) => procFile(p.pid, 'environ').includes(`EXEC_BRIDGE_RUNTIME_DIR=${sshd.runtimeDir}\0`))
    .map((p) => p.pid);
}

/** Those of them that are neither the executor's daemon nor its descendants (the relay of an ssh login); all of them while no daemon runs. */
function besideDaemon(): number[] {
  const side = executorSide();
  const daemon = side.find((p) => procFile(p, 'cmdline').split('\0').includes('daemon'));
  const under = daemon === undefined ? [] : descendantsOf(daemon).map((p) => p.pid);
  return side.filter((p) => p !== daemon && !under.includes(p));
}

describe('exec-bridge mcp --ssh against a real sshd', () => {
  let mcp: Mcp;
  before(async () => {
    mcp = await startMcp();
  });
  after(async () => {
    await mcp?.close();
  });

  test('a command runs on the ssh executor, in the sandbox, in its workspace', async () => {
    const r = await mcp.call('run_command', { command: 'echo "home=$HOME"; pwd; touch made-here && echo made' });
    assert.equal(r.isError, false, `${r.text}\n${mcp.stderr()}`);
    assert.match(
      r.text,
      new RegExp(
        `^Ran \`echo "home=\\$HOME"; .*\` on devbox in ${workspace} \\(sandbox: workspace-write, network off\\)\\.\\nExit: exit code 0\\.\\n`,
      ),
    );
    // HOME is the one the sshd's logins get: the command ran behind ssh, not here.
    for (const line of [`home=${sshd.home}`, workspace, 'made']) assert.ok(r.text.split('\n').includes(line), `${line} in ${r.text}`);
    assert.ok(existsSync(join(workspace, 'made-here')), 'the workspace is writable');
    assert.ok(existsSync(join(sshd.home, '.exec-bridge', 'bin', 'exec-bridge')), 'the bundle was installed over ssh');
    const list = await mcp.call('list_executors');
    assert.match(
      list.text,
      new RegExp(`^- devbox \\(default\\): ssh root@127\\.0\\.0\\.1:${sshd.port}; connected; default cwd ${workspace}$`, 'm'),
    );
    assert.match(list.text, /^Sandbox: workspace-write, network off; unsandboxed runs: refused/m);
    // The process ran under the executor's daemon (the sshd's runtime directory), a child of no process of ours.
    const t = tag();
    const bg = await mcp.call('start_process', { command: `exec sleep ${t}`, wait_seconds: 0 });
    assert.equal(bg.isError, false, bg.text);
    const pid = await until(
      () => liveProcesses().find((p) => procFile(p.pid, 'cmdline') === `sleep\u0000${t}\u0000`)?.pid,
      20_000,
      'the sleep',
    );
    assert.ok(
      executorSide().some((d) => descendantsOf(d).some((p) => p.pid === pid)),
      "the command is a descendant of the executor's daemon",
    );
    assert.ok(!descendantsOf(mcp.pid).some((p) => p.pid === pid), 'and not of the mcp server');
    const id = /as "(bg-[0-9a-f]{8})"/.exec(bg.text)![1]!;
    assert.match((await mcp.call('stop_process', { id })).text, /^Stopped "bg-[0-9a-f]{8}"\.\nState: ended, exit code 130/);
  });

  test('8 MiB of output comes back over ssh as head and tail within the bound, with the marker', async () => {
    assertBoundedFlood(await mcp.call('run_command', { command: floodCommand(8 * 1024 * 1024) }), 8 * 1024 * 1024);
  });

  test('a write outside the workspace is blocked by the sandbox there: the tool error, and nothing written', async () => {
    const target = join(outside, 'denied');
    const r = await mcp.call('run_command', { command: `touch ${target}` });
    assert.equal(r.isError, true, r.text);
    assert.match(
      r.text,
      /^blocked by the sandbox: `touch .*` ended with exit code 1 because the sandbox \(workspace-write, network off\) stopped something it tried; this server runs nothing outside the sandbox/,
    );
    assert.match(r.text, /\nRan `touch .*` on devbox in .*\nExit: exit code 1\.\n/);
    assert.match(r.text, /Read-only file system/);
    assert.equal(existsSync(target), false);
    const again = await mcp.call('run_command', { command: `touch ${target}`, unsandboxed: true });
    assert.equal(again.isError, true);
    assert.match(again.text, /^unsandboxed: true is refused: /);
    assert.equal(existsSync(target), false);
  });

  test("a model's build-test-fix loop in a small project on the executor, every step sandboxed", async () => {
    const project = join(workspace, 'calc');
    const sandboxed = (text: string) => assert.match(text, /^Ran `[^]*` on devbox in .* \(sandbox: workspace-write, network off\)\.\n/);
    // The project, written by the tool: a source file with a bug, a build that copies it to
    // dist/, a test of the built file.
    const setup = await mcp.call('run_command', {
      command: [
        'mkdir -p calc/src && cd calc',
        "printf '%s\\n' 'exports.add = (a, b) => a - b;' > src/calc.js",
        "printf '%s\\n' \"const fs = require('fs');\" \"fs.mkdirSync('dist', { recursive: true });\" \"fs.writeFileSync('dist/calc.js', '// built\\\\n' + fs.readFileSync('src/calc.js', 'utf8'));\" \"console.log('built dist/calc.js');\" > build.js",
        "printf '%s\\n' \"const assert = require('assert');\" \"const { add } = require('./dist/calc.js');\" \"assert.strictEqual(add(2, 3), 5, 'add(2, 3)');\" \"console.log('1 test passed');\" > test.js",
        'ls src build.js test.js',
      ].join('\n'),
    });
    assert.equal(setup.isError, false, setup.text);
    sandboxed(setup.text);
    const cycle = (command: string) => mcp.call('run_command', { command, cwd: 'calc' });

    const failing = await cycle('node build.js && node test.js');
    assert.equal(failing.isError, false, 'a failing test is an answer, not a tool error');
    sandboxed(failing.text);
    assert.match(failing.text, /\nExit: exit code 1\.\n/);
    assert.match(failing.text, /^built dist\/calc\.js$/m);
    assert.match(failing.text, /AssertionError.*add\(2, 3\)/);
    assert.match(failing.text, /-1/, 'the wrong sum in the failure');

    // The fix, as a model makes it: a command that rewrites the line.
    const fix = await cycle("sed -i 's/a - b/a + b/' src/calc.js && cat src/calc.js");
    sandboxed(fix.text);
    assert.match(fix.text, /\nExit: exit code 0\.\n[^]*^exports\.add = \(a, b\) => a \+ b;$/m);

    const passing = await cycle('node build.js && node test.js');
    sandboxed(passing.text);
    assert.match(passing.text, /\nExit: exit code 0\.\n/);
    assert.match(passing.text, /^1 test passed$/m);
    // The files on the executor (this machine behind the sshd) are what the tool wrote.
    assert.equal(readFileSync(join(project, 'src', 'calc.js'), 'utf8'), 'exports.add = (a, b) => a + b;\n');
    assert.equal(readFileSync(join(project, 'dist', 'calc.js'), 'utf8'), '// built\nexports.add = (a, b) => a + b;\n');
  });
});

describe('exec-bridge mcp --ssh: the client disconnects', () => {
  test('every command it started on the executor is killed, the server and its processes exit, only the daemon stays there', async () => {
    const m = await startMcp();
    const [bgTag, runTag] = [tag(), tag()];
    assert.match((await m.call('start_process', { command: `exec sleep ${bgTag}`, wait_seconds: 0 })).text, /^Started `exec sleep/);
    const inFlight = m.call('run_command', { command: `exec sleep ${runTag}`, timeout_seconds: 600 }).catch(() => undefined);
    await until(() => sleeping(bgTag) && sleeping(runTag), 30_000, 'both commands running');
    // Its own processes (an ssh of its own, when it has one; a shared master outlives it by design).
    const own = descendantsOf(m.pid).map((p) => p.pid);
    await m.close();
    await inFlight;
    await until(() => !sleeping(bgTag) && !sleeping(runTag), 15_000, 'both commands gone');
    await until(() => !isAlive(m.pid), 10_000, 'the mcp server gone');
    await until(() => own.every((p) => !isAlive(p)), 10_000, "the server's own processes gone");
    // On the executor only its daemon stays (by design; with its orphan guard): the relay of this server's ssh login went too.
    await until(() => besideDaemon().length === 0, 10_000, 'nothing but the daemon on the executor');
    assert.match(m.stderr(), /closing: stdin ended/);
    assert.match(m.stderr(), /stopping 2 process\(es\)/);
  });
});
