/**
 * A real OpenSSH server for tests on 127.0.0.1 (docs: /work/shared/docs/ssh-testing.md): its own
 * config, generated host and client keys, and a separate "remote" HOME and runtime dir (set with
 * sshd's SetEnv) so remote installs and daemons never mix with local ones. A second port serves
 * a login whose PATH has no `node`.
 *
 *   const sshd = await startSshd();
 *   sshConnector({ target: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions, … })
 *   await sshd.stop();
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive, liveProcesses } from './procs';

export const SSHD_BIN = '/usr/sbin/sshd';
/** The name the test server's host key is recorded under (HostKeyAlias). */
export const HOST_ALIAS = 'eb-test-sshd';
/** The passphrase of `passphraseKey`. */
export const PASSPHRASE = 'correct horse battery';

export interface Sshd {
  port: number;
  /** A port whose logins have a PATH without node (uname and sh only). */
  noNodePort: number;
  /** A port whose logins find a `node` that says v18.19.0. */
  oldNodePort: number;
  dir: string;
  /** The remote user's HOME. */
  home: string;
  /** The remote side's EXEC_BRIDGE_RUNTIME_DIR (its daemon lives here). */
  runtimeDir: string;
  clientKey: string;
  /** A client key protected by PASSPHRASE (authorized too): ssh prompts for it (no agent is used). */
  passphraseKey: string;
  /** A known_hosts file holding this server's host key. */
  knownHosts: string;
  /** `-o` options for a client that trusts this server (HostKeyAlias, so on any port) and uses the test key. */
  clientOptions: string[];
  stop(): Promise<void>;
  log(): string;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'eb-sshd-'));
  chmodSync(dir, 0o755);
  mkdirSync('/run/sshd', { recursive: true });
  const home = join(dir, 'home');
  const runtimeDir = join(dir, 'run');
  mkdirSync(home, { mode: 0o755 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  for (const k of ['host', 'client']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, k)]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', PASSPHRASE, '-f', join(dir, 'locked')]);
  writeFileSync(join(dir, 'authorized'), Buffer.concat([readFileSync(join(dir, 'client.pub')), readFileSync(join(dir, 'locked.pub'))]));
  // Logins without node: a PATH with only what the probe needs.
  const bare = join(dir, 'bare-bin');
  mkdirSync(bare);
  for (const b of ['uname', 'sh'])
    symlinkSync(
      execFileSync('sh', ['-c', `command -v ${b}`])
        .toString()
        .trim(),
      join(bare, b),
    );
  const old = join(dir, 'old-bin');
  mkdirSync(old);
  for (const b of ['uname', 'sh']) symlinkSync(join(bare, b), join(old, b));
  writeFileSync(join(old, 'node'), '#!/bin/sh\necho v18.19.0\n', { mode: 0o755 });
  const [port, noNodePort, oldNodePort] = [await freePort(), await freePort(), await freePort()];
  const env = `HOME=${home} EXEC_BRIDGE_RUNTIME_DIR=${runtimeDir}`;
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      `Port ${noNodePort}`,
      `Port ${oldNodePort}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      `PidFile ${join(dir, 'pid')}`,
      `SetEnv ${env} PATH=${process.env.PATH ?? '/usr/bin:/bin'}`,
      `Match LocalPort ${noNodePort}`,
      `  SetEnv ${env} PATH=${bare}`,
      `Match LocalPort ${oldNodePort}`,
      `  SetEnv ${env} PATH=${old}`,
      '',
    ].join('\n'),
  );
  const hostPub = readFileSync(join(dir, 'host.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
  const knownHosts = join(dir, 'known_hosts');
  // One alias for every port (and for a fault proxy's port in front of them).
  writeFileSync(knownHosts, `${HOST_ALIAS} ${hostPub}\n`);
  const logFile = join(dir, 'log');
  const child: ChildProcess = spawn(SSHD_BIN, ['-D', '-f', join(dir, 'sshd_config'), '-E', logFile], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  // Ready when it accepts on every port (bounded).
  for (const p of [port, noNodePort, oldNodePort]) {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`sshd exited: ${safeRead(logFile)}`);
      const ok = await new Promise<boolean>((r) => {
        const s = net.connect(p, '127.0.0.1');
        s.once('connect', () => (s.destroy(), r(true)));
        s.once('error', () => r(false));
      });
      if (ok) break;
      if (i > 200) throw new Error(`sshd does not accept on ${p}: ${safeRead(logFile)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return {
    port,
    noNodePort,
    oldNodePort,
    dir,
    home,
    runtimeDir,
    clientKey: join(dir, 'client'),
    passphraseKey: join(dir, 'locked'),
    knownHosts,
    clientOptions: [
      `IdentityFile=${join(dir, 'client')}`,
      'IdentitiesOnly=yes',
      `HostKeyAlias=${HOST_ALIAS}`,
      `UserKnownHostsFile=${knownHosts}`,
      'StrictHostKeyChecking=yes',
      'LogLevel=ERROR',
    ],
    log: () => safeRead(logFile),
    async stop() {
      // Its connections go first: an ssh master shared by a client (ControlPersist) then sees its end and exits.
      if (child.pid !== undefined)
        for (const p of liveProcesses().filter((x) => x.ppid === child.pid)) {
          try {
            process.kill(p.pid, 'SIGTERM');
          } catch {
            // gone already
          }
        }
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      // The remote daemon (started through the relay, detached) goes too.
      try {
        for (const d of execFileSync('sh', ['-c', `ls -d ${runtimeDir}/daemon-* 2>/dev/null || true`])
          .toString()
          .split('\n')) {
          if (!d) continue;
          try {
            const { pid } = JSON.parse(readFileSync(join(d, 'state.json'), 'utf8')) as { pid: number };
            process.kill(pid, 'SIGTERM');
            for (let i = 0; i < 150 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 20));
            if (isAlive(pid)) process.kill(pid, 'SIGKILL');
          } catch {
            // not running
          }
        }
      } catch {
        // nothing
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function safeRead(p: string): string {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return '';
  }
}

/**
 * A private copy of `dist/cli.js` and the commands' bundles beside it, `dist/cli/*.js` (with the
 * repo's package.json beside its folder): other builds in the same tree rewrite dist/ at any time,
 * and a bundle that changes mid-test is another version.
 */
export function copyBundle(dir: string, suffix = ''): string {
  const repo = join(__dirname, '..', '..', '..');
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), readFileSync(join(repo, 'package.json')));
  const cli = join(dir, 'dist', 'cli.js');
  writeFileSync(cli, readFileSync(join(repo, 'dist', 'cli.js'), 'utf8') + suffix);
  // The commands' bundles that the dispatcher loads (src/cli/commands.ts).
  mkdirSync(join(dir, 'dist', 'cli'), { recursive: true });
  for (const f of readdirSync(join(repo, 'dist', 'cli')))
    if (f.endsWith('.js')) writeFileSync(join(dir, 'dist', 'cli', f), readFileSync(join(repo, 'dist', 'cli', f)));
  return cli;
}

/** The repo's node-pty package folder (shipped to a remote of our platform). */
export const NODE_PTY_DIR = join(__dirname, '..', '..', '..', 'node_modules', 'node-pty');
