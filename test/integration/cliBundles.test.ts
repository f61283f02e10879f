/**
 * The command line as built: dist/cli.js is a dispatcher that loads one bundle per command from
 * dist/cli/ (src/cli/commands.ts). Every command is reached through it; an installation without
 * a command's bundle (an SSH host gets the executor's side only) says so instead of a stack
 * trace; and the version that names a daemon and an SSH install covers exactly the executor's
 * files.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { COMMAND_BUNDLES } from '../../src/cli/commands';
import { bundleKey, EXECUTOR_FILES } from '../../src/client/daemonStart';
import { bundleFor, localUname } from '../../src/client/sshBootstrap';
import { copyBundle } from '../helpers/sshd';

const work = mkdtempSync(join(tmpdir(), 'eb-cli-bundles-'));
after(() => rmSync(work, { recursive: true, force: true }));
const CLI = copyBundle(join(work, 'full'));

interface Result {
  code: number | null;
  out: string;
  err: string;
}

/** `node cli args…` to its exit (bounded: killed after 30 s, which then fails the test). */
function cli(cliPath: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** A private runtime directory, so that `daemon status` looks at no real daemon. */
function runtimeEnv(name: string): NodeJS.ProcessEnv {
  const dir = join(work, name);
  mkdirSync(dir, { mode: 0o700 });
  return { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: dir };
}

describe('the command line: a dispatcher and one bundle per command', () => {
  test('each command runs from its bundle (its own answer to a usage question)', async () => {
    // What each says when asked for its usage, or when run with nothing to do: proof that its code ran.
    const cases: Record<keyof typeof COMMAND_BUNDLES, [string[], number, RegExp]> = {
      serve: [['--help'], 0, /^usage: exec-bridge serve /],
      run: [['--help'], 0, /^usage: exec-bridge run /],
      connect: [['--help'], 0, /^usage: exec-bridge connect /],
      daemon: [['status'], 1, /^no exec-bridge daemon is running\n$/],
      mcp: [['--help'], 0, /^usage: exec-bridge mcp /],
      'mcp-proxy': [[], 2, /^usage: exec-bridge mcp-proxy /],
      askpass: [[], 2, /^exec-bridge askpass: only ssh started by Exec Bridge runs this\n$/],
    };
    const env = runtimeEnv('rt-all');
    for (const [cmd, [args, code, says]] of Object.entries(cases)) {
      const r = await cli(CLI, [cmd, ...args], env);
      assert.equal(r.code, code, `${cmd}: ${r.err}`);
      assert.match(code === 2 ? r.err : r.out, says, cmd);
    }
    // And every bundle the dispatcher can load was built (nothing more in dist/cli).
    assert.deepEqual(
      readdirSync(join(dirname(CLI), 'cli')).sort(),
      [...new Set(Object.values(COMMAND_BUNDLES))].map((b) => `${b}.js`).sort(),
    );
  });

  test("zod's locales are not bundled (English, its default, is): a third of run's bundle", () => {
    // esbuild heads each module it bundles with a `// <path>` line.
    for (const f of [...readdirSync(join(dirname(CLI), 'cli')).map((b) => join(dirname(CLI), 'cli', b)), CLI]) {
      const locales = readFileSync(f, 'utf8').match(/^\/\/ node_modules\/zod\/v4\/locales\/.*$/gm) ?? [];
      assert.ok(
        locales.every((l) => l === '// node_modules/zod/v4/locales/en.js'),
        `${f}: ${locales.join(', ')}`,
      );
    }
  });

  test("an installation without a command's bundle (an SSH host's) names what is missing; the rest works", async () => {
    const host = join(work, 'host');
    copyBundle(host);
    for (const f of readdirSync(join(host, 'dist', 'cli'))) if (f !== 'server.js') rmSync(join(host, 'dist', 'cli', f));
    const cliPath = join(host, 'dist', 'cli.js');
    const run = await cli(cliPath, ['run', '--', 'true']);
    assert.equal(run.code, 1);
    assert.equal(
      run.err,
      `exec-bridge: the run command is not part of this installation (${join(host, 'dist', 'cli', 'run.js')} is missing)\n`,
    );
    const mcp = await cli(cliPath, ['mcp']);
    assert.equal(mcp.code, 1);
    assert.match(mcp.err, /^exec-bridge: the mcp command is not part of this installation \(.*\/dist\/cli\/mcp\.js is missing\)\n$/);
    const help = await cli(cliPath, ['--help']);
    assert.equal(help.code, 0);
    for (const cmd of ['serve', 'run', 'connect', 'daemon', 'mcp']) assert.match(help.out, new RegExp(`^usage: exec-bridge ${cmd} `, 'm'));
    const status = await cli(cliPath, ['daemon', 'status'], runtimeEnv('rt-host'));
    assert.equal(status.code, 1, status.err);
    assert.equal(status.out, 'no exec-bridge daemon is running\n');
  });

  test("a daemon's and an SSH install's version cover the executor's files, not the client commands' bundles", () => {
    const dir = join(work, 'versions');
    const cliPath = copyBundle(dir);
    const key = bundleKey(cliPath);
    const bundle = bundleFor(cliPath, null, localUname());
    assert.deepEqual(
      bundle.files.map((f) => f.path),
      EXECUTOR_FILES.map((f) => `dist/${f}`),
    );
    assert.equal(bundle.version.split('-').at(-1), key.split('-').at(-1), 'what the remote daemon computes from what it got');
    appendFileSync(join(dir, 'dist', 'cli', 'run.js'), '\n// another run\n');
    assert.equal(bundleKey(cliPath), key, 'a client command is not the daemon');
    appendFileSync(join(dir, 'dist', 'cli', 'server.js'), '\n// another server\n');
    const key2 = bundleKey(cliPath);
    assert.notEqual(key2, key, 'the daemon and the relay are');
    appendFileSync(cliPath, '\n// another dispatcher\n');
    assert.notEqual(bundleKey(cliPath), key2, 'and so is the dispatcher');
    assert.equal(bundleFor(cliPath, null, localUname()).version.split('-').at(-1), bundleKey(cliPath).split('-').at(-1));
  });
});
