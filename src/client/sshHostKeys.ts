import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { sshUserHome } from './sshConfigFiles';
import { parseSshTarget, sshArgs } from './sshConnector';

/*
 * "Unknown host key" for an SSH executor: we never accept a key silently. The UI asks instead:
 * it shows the host's key fingerprints (from ssh-keyscan, for the host and port ssh itself would
 * use, per `ssh -G`), and only when the user confirms are the keys appended to the known_hosts
 * file ssh reads.
 */

export interface HostKeyScan {
  /** What ssh connects to (after ~/.ssh/config). */
  hostname: string;
  port: number;
  /** The name the key is recorded under: HostKeyAlias, else `host` or `[host]:port`. */
  recordAs: string;
  /** The first UserKnownHostsFile. */
  knownHostsFile: string;
  /** known_hosts lines to add. */
  lines: string[];
  /** `SHA256:… (ED25519)`, one per key, for the user to compare. */
  fingerprints: string[];
}

function run(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: 15_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} failed: ${(stderr || err.message).trim().split('\n').slice(-1)[0]}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Reads the host's keys without trusting them. */
export async function scanHostKeys(target: string, sshOptions: string[] = [], sshPath = 'ssh'): Promise<HostKeyScan> {
  const t = parseSshTarget(target);
  const args = sshArgs(t, sshOptions, 'true');
  // `ssh -G` prints the configuration it would use, without connecting.
  const conf = await run(sshPath, ['-G', ...args.slice(1, -1)]);
  const get = (k: string) => new RegExp(`^${k} (.*)$`, 'm').exec(conf)?.[1]?.trim();
  const hostname = get('hostname') ?? t.host;
  const port = Number(get('port') ?? t.port ?? 22);
  const alias = get('hostkeyalias');
  const recordAs = alias && alias !== 'none' ? alias : port === 22 ? hostname : `[${hostname}]:${port}`;
  const knownHostsFile = (get('userknownhostsfile') ?? '~/.ssh/known_hosts').split(/\s+/)[0]!.replace(/^~(?=\/)/, sshUserHome());
  const scanned = await run('ssh-keyscan', ['-T', '10', '-p', String(port), hostname]);
  const keys = scanned
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.trim().split(/\s+/).slice(1, 3).join(' '));
  if (keys.length === 0) throw new Error(`${hostname}:${port} offered no host key`);
  const lines = keys.map((k) => `${recordAs} ${k}`);
  const fp = await run('ssh-keygen', ['-l', '-f', '-'], lines.join('\n') + '\n');
  const fingerprints = fp
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const f = l.trim().split(/\s+/);
      return `${f[1]} ${f.at(-1)}`;
    });
  return { hostname, port, recordAs, knownHostsFile, lines, fingerprints };
}

/** Appends the scanned keys to the known_hosts file (after the user confirmed them). */
export function trustHostKeys(scan: HostKeyScan): void {
  mkdirSync(dirname(scan.knownHostsFile), { recursive: true, mode: 0o700 });
  appendFileSync(scan.knownHostsFile, scan.lines.map((l) => l + '\n').join(''), { mode: 0o600 });
}

/** Whether a connect failure is the unknown-host-key one (the case the UI offers to check). */
export function isUnknownHostKey(message: string): boolean {
  return /host key is not known/.test(message);
}
