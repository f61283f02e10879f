/**
 * Sandbox placeholder stubs go with a server that dies (issue 14 item 8): the server's orphan
 * watchdog removes its claims and the stubs it made once our pipe to it closes, SIGKILL included,
 * instead of leaving `.codex` / `.vscode` in the workspace until the next sandboxed start there.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ExecServerClient } from '../../src/client';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { until } from '../helpers/procs';
import { startExecServer } from '../helpers/servers';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'exec-bridge-stubs-')));
after(() => rmSync(base, { recursive: true, force: true }));

test('a SIGKILLed server leaves no placeholder stub behind; a user\u2019s own empty .vscode stays', async () => {
  const ws = join(base, 'ws');
  const own = join(base, 'own');
  mkdirSync(ws);
  mkdirSync(join(own, '.vscode'), { recursive: true });
  const server = await startExecServer('ours');
  const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: server.url }, keepalive: false, deadlineMs: 1000 });
  try {
    const start = (cwd: string) =>
      client.startProcess({
        argv: ['/bin/sh', '-c', 'sleep 30'],
        cwd,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(cwd).href }),
      });
    await start(ws);
    await start(own);
    await until(() => existsSync(join(ws, '.codex')) && existsSync(join(ws, '.vscode')), 10_000, 'the stubs while the commands run');
    assert.ok(
      readdirSync(join(own, '.vscode')).some((n) => n.startsWith('.exec-bridge-claim-')),
      'claimed, not made',
    );
    // Each stub we made has its marker beside it (what files.exclude keys on); the user's folder has none.
    assert.deepEqual(readdirSync(ws).sort(), [
      '.codex',
      '.codex.exec-bridge-stub',
      '.git',
      '.git.exec-bridge-stub',
      '.vscode',
      '.vscode.exec-bridge-stub',
    ]);
    assert.ok(!readdirSync(own).includes('.vscode.exec-bridge-stub'), 'no marker beside a folder we did not make');
    process.kill(server.child.pid!, 'SIGKILL');
    await until(() => readdirSync(ws).length === 0, 10_000, 'the stubs and their markers gone after the crash');
    await until(() => readdirSync(join(own, '.vscode')).length === 0, 10_000, 'our claim gone from the user\u2019s folder');
    assert.deepEqual(readdirSync(own), ['.vscode'], 'the user\u2019s own empty .vscode stays, alone');
    assert.deepEqual(readdirSync(ws), []);
  } finally {
    client.dispose();
    await server.stop();
  }
});
