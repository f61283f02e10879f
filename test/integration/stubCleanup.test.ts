/**
 * Sandbox placeholder stubs go with a server that dies (issue 14 item 8): the server's orphan
 * watchdog removes its claims and the stubs it made once our pipe to it closes, SIGKILL included,
 * instead of leaving `.codex` / `.vscode` in the workspace until the next sandboxed start there.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ExecServerClient } from '../../src/client';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { until } from '../helpers/procs';
import { gather } from './clientHelpers';
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

/**
 * Issue 24 item 1: a user who makes `.vscode/tasks.json` while a sandboxed command runs writes it
 * into the placeholder (the folder is there on the host). The marker beside it is what
 * `files.exclude` hides `.vscode` by, so it must go at once, not when the command ends; the
 * command's view stays the empty read-only placeholder. After a SIGKILL too, nothing hides it.
 */
for (const ending of ['ends', 'is SIGKILLed'] as const) {
  test(`a .vscode the user makes while a command runs is never hidden (the server ${ending}); the sandbox still protects it`, async () => {
    const ws = join(base, `user-${ending === 'ends' ? 'end' : 'kill'}`);
    mkdirSync(ws);
    const server = await startExecServer('ours');
    const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: server.url }, keepalive: false, deadlineMs: 1000 });
    try {
      const h = await client.startProcess({
        argv: [
          '/bin/sh',
          '-c',
          'echo started; while [ ! -e go ]; do sleep 0.05; done; echo "inside: [$(ls -A .vscode)]"; ' +
            '(echo x > .vscode/tasks.json) 2>/dev/null && echo wrote || echo refused; ' +
            '(mkdir .vscode/sub) 2>/dev/null && echo made || echo refused; while [ ! -e stop ]; do sleep 0.05; done',
        ],
        cwd: ws,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      });
      const out = gather(h);
      await out.until((t) => t.includes('started'), 10_000, 'the command started');
      const marker = join(ws, '.vscode.exec-bridge-stub');
      assert.ok(existsSync(join(ws, '.vscode')) && existsSync(marker), 'the placeholder and its marker while the command runs');
      // What VS Code's "Configure Tasks" does: the folder is there, so it writes the file into it.
      writeFileSync(join(ws, '.vscode', 'tasks.json'), '{ "version": "2.0.0" }\n');
      await until(() => !existsSync(marker), 2000, 'the marker gone as soon as the user put a file in the folder');
      assert.ok(existsSync(join(ws, '.codex.exec-bridge-stub')), 'the other placeholders keep theirs');
      writeFileSync(join(ws, 'go'), '');
      await out.until((t) => /made|refused\s+refused/.test(t), 10_000, 'the command tried .vscode');
      assert.match(out.text(), /inside: \[\]/, 'the command still sees the empty placeholder, not the user\u2019s file');
      assert.doesNotMatch(out.text(), /wrote|made/, 'nor can it write there');
      assert.ok(!existsSync(marker), 'the marker did not come back');
      if (ending === 'ends') {
        writeFileSync(join(ws, 'stop'), '');
        await h.completion;
      } else process.kill(server.child.pid!, 'SIGKILL');
      await until(() => readdirSync(join(ws, '.vscode')).length === 1, 10_000, 'our claim gone from the user\u2019s folder');
      assert.deepEqual(readdirSync(join(ws, '.vscode')), ['tasks.json']);
      assert.equal(readFileSync(join(ws, '.vscode', 'tasks.json'), 'utf8'), '{ "version": "2.0.0" }\n');
      assert.ok(!existsSync(marker), 'nothing hides the user\u2019s .vscode');
      // The other placeholders may be claimed again for a while by the sandbox built ahead for the
      // next command (it keeps them 5 s); then they go, each directory and then its marker.
      const markers = (): string[] => readdirSync(ws).filter((n) => n.endsWith('.exec-bridge-stub'));
      await until(() => !existsSync(join(ws, '.codex')) && markers().length === 0, 20_000, 'the other placeholders and every marker gone');
      assert.ok(!existsSync(marker), 'the .vscode marker never came back');
    } finally {
      client.dispose();
      await server.stop();
    }
  });
}
