/**
 * The bash integration script, written to the executor through fs/* and run in a real PTY on a real
 * server (ours and codex): the user's ~/.bashrc is still loaded, nothing in the home changes but our
 * cache folder, and the shell prints VS Code's OSC 633 marks (prompt, command line, executed,
 * finished with the exit code, cwd).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, websocketConnector } from '../../src/client';
import { inheritAllEnv } from '../../src/client/envPolicy';
import { injectShellIntegration, integrationDir } from '../../src/core/shellIntegration';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';
import { gather } from './clientHelpers';

const osc = (body: string) => `\x1b]633;${body}\x07`;

for (const kind of ['ours', 'codex'] as const) {
  describe(`bash shell integration on ${kind}`, () => {
    let server: ExecServerProcess;
    let client: ExecServerClient;
    let home: string;

    before(async () => {
      home = fs.mkdtempSync(join(tmpdir(), 'exec-bridge-si-home-'));
      fs.writeFileSync(join(home, '.bashrc'), 'export EB_USER_RC=loaded\nPS1="user-prompt> "\n');
      server = await startExecServer(kind, { token: true, env: { ...process.env, HOME: home } });
      client = await ExecServerClient.connect({ connector: websocketConnector(server.url, server.token), clientName: 'si-test' });
    });
    after(async () => {
      client?.dispose();
      await server?.stop();
      fs.rmSync(home, { recursive: true, force: true });
    });

    test('marks every command and keeps the user’s bashrc and prompt', async () => {
      const options = await injectShellIntegration(client, {
        argv: ['/bin/bash', '-i'],
        cwd: home,
        envPolicy: inheritAllEnv(),
        env: { TERM: 'xterm-256color', HOME: home },
        tty: true,
      });
      const dir = integrationDir(home, 'bash');
      assert.deepEqual(options.argv, ['/bin/bash', '--rcfile', join(dir, 'bashrc'), '-i']);
      assert.deepEqual(fs.readdirSync(home).sort(), ['.bashrc', '.cache']);
      assert.equal(fs.readFileSync(join(home, '.bashrc'), 'utf8'), 'export EB_USER_RC=loaded\nPS1="user-prompt> "\n');

      const h = await client.startProcess(options);
      const out = gather(h);
      try {
        await out.until((t) => t.includes(`${osc('B')}`), 15_000, 'the first prompt');
        await h.write('echo "rc=$EB_USER_RC"; (exit 3)\n');
        await out.until((t) => t.includes(osc('D;3')), 15_000, 'the exit code mark');
        await h.write('cd /tmp && true\n');
        await out.until((t) => t.includes(osc('D;0')) && t.includes(osc('P;Cwd=/tmp')), 15_000, 'the cwd mark');
        await h.write('exit\n');
        await h.completion;
      } finally {
        await h.terminate().catch(() => undefined);
      }
      const t = out.text();
      assert.ok(t.includes(`${osc('A')}user-prompt> ${osc('B')}`), 'the user prompt sits between A and B');
      assert.ok(t.includes(`${osc('E;echo "rc=$EB_USER_RC"\\x3b (exit 3)')}${osc('C')}`), 'command line, then executed');
      assert.ok(t.includes('rc=loaded'), 'the user bashrc ran');
      assert.ok(t.indexOf(osc('C')) < t.indexOf('rc=loaded') && t.indexOf('rc=loaded') < t.indexOf(osc('D;3')), 'output between C and D');
      assert.ok(t.includes(osc(`P;Cwd=${home}`)), 'the first cwd');
      // A second start finds the scripts already there and rewrites nothing.
      const before = fs.statSync(join(dir, 'bashrc')).mtimeMs;
      await injectShellIntegration(client, { argv: ['/bin/bash', '-i'], cwd: home, tty: true });
      assert.equal(fs.statSync(join(dir, 'bashrc')).mtimeMs, before);
    });

    test('other shells start unchanged', async () => {
      const o = { argv: ['/bin/sh', '-i'], cwd: home, tty: true };
      assert.equal(await injectShellIntegration(client, o), o);
    });
  });
}
