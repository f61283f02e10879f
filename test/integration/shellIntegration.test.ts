/**
 * The bash and zsh integration scripts, written to the executor through fs/* and run in a real PTY on
 * a real server (ours and codex): the user's ~/.bashrc (~/.zshenv, ~/.zshrc) is still loaded,
 * nothing in the home changes but our cache folder, and the shell prints VS Code's OSC 633 marks
 * (prompt, command line, executed, finished with the exit code, cwd).
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
const ZSH = '/usr/bin/zsh';

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

// The user's own zsh setup: a .zshenv and a .zshrc with a prompt, options and an alias that would
// break a script defined after it (ksh arrays, unset parameters as errors, `local` aliased), and a
// precmd hook of its own that ends in a failing command (as prompt themes do).
const ZSHENV = 'export EB_USER_ENV=loaded\n';
const ZSHRC = [
  'export EB_USER_RC=loaded',
  "PS1='user-prompt> '",
  'setopt ksh_arrays no_unset sh_word_split',
  "alias local='echo LOCAL'",
  "alias printf='echo PRINTF'",
  'autoload -Uz add-zsh-hook',
  '__user_precmd() { EB_USER_HOOK=$((${EB_USER_HOOK:-0} + 1)); false; }',
  'add-zsh-hook precmd __user_precmd',
  '',
].join('\n');

// Where the user keeps them: $HOME, or a ZDOTDIR set in the executor's environment.
const zshCases = [
  { server: 'ours', zdotdir: undefined },
  { server: 'codex', zdotdir: undefined },
  { server: 'ours', zdotdir: '.config/zsh' },
] as const;

for (const { server: kind, zdotdir } of zshCases) {
  describe(`zsh shell integration on ${kind}${zdotdir ? `, ZDOTDIR=~/${zdotdir}` : ''}`, () => {
    let server: ExecServerProcess;
    let client: ExecServerClient;
    let home: string;
    let userDir: string;

    before(async () => {
      home = fs.mkdtempSync(join(tmpdir(), 'exec-bridge-si-zsh-'));
      userDir = zdotdir ? join(home, zdotdir) : home;
      fs.mkdirSync(userDir, { recursive: true });
      fs.writeFileSync(join(userDir, '.zshenv'), ZSHENV);
      fs.writeFileSync(join(userDir, '.zshrc'), ZSHRC);
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
      delete env['ZDOTDIR'];
      if (zdotdir) env['ZDOTDIR'] = userDir;
      server = await startExecServer(kind, { token: true, env });
      client = await ExecServerClient.connect({ connector: websocketConnector(server.url, server.token), clientName: 'si-zsh' });
    });
    after(async () => {
      client?.dispose();
      await server?.stop();
      fs.rmSync(home, { recursive: true, force: true });
    });

    test('marks every command and keeps the user’s .zshenv, .zshrc, prompt, options and hooks', async () => {
      const options = await injectShellIntegration(client, {
        argv: [ZSH, '-i'],
        cwd: home,
        envPolicy: inheritAllEnv(),
        env: { TERM: 'xterm-256color', HOME: home },
        tty: true,
      });
      const dir = integrationDir(home, 'zsh');
      assert.equal(options.argv[0], ZSH);
      assert.deepEqual(fs.readdirSync(dir).sort(), ['.zshenv', '.zshrc'], 'our files are on the executor');
      assert.deepEqual(fs.readdirSync(home).sort(), zdotdir ? ['.cache', '.config'] : ['.cache', '.zshenv', '.zshrc']);

      const h = await client.startProcess(options);
      const out = gather(h);
      const line = 'echo "env=$EB_USER_ENV rc=$EB_USER_RC zdotdir=${ZDOTDIR-unset} x=${EXEC_BRIDGE_USER_ZDOTDIR-unset}"; (exit 3)';
      try {
        await out.until((t) => t.includes(osc('B')), 15_000, 'the first prompt');
        await h.write(`${line}\n`);
        await out.until((t) => t.includes(osc('D;3')), 15_000, 'the exit code mark');
        await h.write('cd /tmp && true\n');
        await out.until((t) => t.includes(osc('D;0')) && t.includes(osc('P;Cwd=/tmp')), 15_000, 'the cwd mark');
        await h.write('echo "hooks=$EB_USER_HOOK"\n');
        await out.until((t) => /hooks=\d/.test(t), 15_000, 'the hook count');
        await h.write('exit\n');
        await h.completion;
      } finally {
        await h.terminate().catch(() => undefined);
      }
      const t = out.text();
      const shown = JSON.stringify(t);
      assert.ok(t.includes(`${osc('A')}user-prompt> ${osc('B')}`), `the user prompt sits between A and B: ${shown}`);
      assert.ok(t.includes(`${osc(`E;${line.replace(';', '\\x3b')}`)}${osc('C')}`), `command line, then executed: ${shown}`);
      // The user's startup files ran, and inside the shell ZDOTDIR is as the user had it.
      assert.ok(t.includes(`env=loaded rc=loaded zdotdir=${zdotdir ? userDir : 'unset'} x=unset`), `the user's files ran: ${shown}`);
      assert.ok(t.indexOf(osc('C')) < t.indexOf('env=loaded') && t.indexOf('env=loaded') < t.indexOf(osc('D;3')), 'output between C and D');
      assert.ok(t.includes(osc(`P;Cwd=${home}`)), 'the first cwd');
      assert.match(t, /hooks=[3-9]/, 'the user precmd hook ran at every prompt');
      assert.ok(
        !/LOCAL|PRINTF|parameter not set|command not found/.test(t),
        `the user's aliases and options do not reach our functions: ${shown}`,
      );
      // The user's precmd hook ends in `false`: every D still carries the command's status.
      const codes = [...t.matchAll(/\x1b\]633;D;(\d+)\x07/g)].map((m) => Number(m[1]));
      assert.deepEqual(codes.slice(0, 3), [3, 0, 0]);
      assert.equal(fs.readFileSync(join(userDir, '.zshenv'), 'utf8'), ZSHENV);
      assert.equal(fs.readFileSync(join(userDir, '.zshrc'), 'utf8'), ZSHRC);
    });
  });
}
