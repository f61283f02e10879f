/**
 * Token files and the no-token warning, through the real command line (dist/cli.js): `serve` and
 * `run` refuse a token file that group or others may read (as ssh refuses such a key), and `serve`
 * on loopback without a token says loudly that every local user can run commands through it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CLI_JS } from '../helpers/servers';
import { until } from '../helpers/procs';

const dir = mkdtempSync(join(tmpdir(), 'eb-cli-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function tokenFile(name: string, mode: number, content = 'a-token-of-ours'): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  chmodSync(p, mode);
  return p;
}

interface Cli {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  code: Promise<number | null>;
}

function cli(args: string[]): Cli {
  const child = spawn(process.execPath, [CLI_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  // Bounded: a server that should have refused to start is killed (and the test then fails).
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = new Promise<number | null>((r) =>
    child.on('close', (c) => {
      clearTimeout(timer);
      r(c); // 'close': output fully read
    }),
  );
  return { child, out: () => out, err: () => err, code };
}

async function stop(c: Cli): Promise<void> {
  if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGTERM');
  await c.code;
}

describe('token files and the no-token warning (command line)', () => {
  test('serve refuses a token file readable by group or others, naming it and the fix; exit 2', async () => {
    for (const mode of [0o644, 0o640]) {
      const p = tokenFile(`serve-${mode.toString(8)}`, mode);
      const c = cli(['serve', '--listen', 'ws://127.0.0.1:0', '--token-file', p]);
      assert.equal(await c.code, 2);
      assert.match(
        c.err(),
        new RegExp(`--token-file ${p} is accessible by group or others \\(mode 0${mode.toString(8)}\\).*Fix: chmod 600 ${p}`),
      );
      assert.equal(c.out(), '', 'never listened');
    }
    const empty = tokenFile('serve-empty', 0o600, '\n');
    const c = cli(['serve', '--token-file', empty]);
    assert.equal(await c.code, 2);
    assert.match(c.err(), /--token-file .*serve-empty is empty/);
  });

  test('run refuses a token file readable by group or others before connecting anywhere', async () => {
    const p = tokenFile('run-644', 0o644);
    const c = cli(['run', '--url', 'ws://127.0.0.1:9', '--token-file', p, '--no-stdin', '--', 'true']);
    assert.notEqual(await c.code, 0);
    assert.match(c.err(), new RegExp(`--token-file ${p} is accessible by group or others .*chmod 600 ${p}`));
    const empty = tokenFile('run-empty', 0o600, '');
    const e = cli(['run', '--url', 'ws://127.0.0.1:9', '--token-file', empty, '--no-stdin', '--', 'true']);
    assert.notEqual(await e.code, 0);
    assert.match(e.err(), /--token-file .*run-empty is empty/);
  });

  test('serve on loopback without a token warns loudly on stderr; with a 0600 token file it does not', async () => {
    const open = cli(['serve', '--listen', 'ws://127.0.0.1:0']);
    try {
      await until(() => /^ws:\/\/127\.0\.0\.1:\d+\n$/.test(open.out()) && /WITHOUT a token/.test(open.err()), 15_000, 'URL and warning');
      assert.match(open.err(), /WARNING: exec-bridge is listening on 127\.0\.0\.1 WITHOUT a token: any local user or process can connect/);
      assert.match(open.err(), /--token-file/);
    } finally {
      await stop(open);
    }
    const guarded = cli(['serve', '--listen', 'ws://127.0.0.1:0', '--token-file', tokenFile('good', 0o600)]);
    try {
      await until(() => /^ws:\/\/127\.0\.0\.1:\d+\n$/.test(guarded.out()), 15_000, 'URL');
    } finally {
      await stop(guarded);
    }
    assert.doesNotMatch(guarded.err(), /WARNING|WITHOUT a token/);
  });
});
