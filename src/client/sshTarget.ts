import { shellLine } from '../util';
import { sshUserHome } from './sshConfigFiles';

/* An SSH destination as the user writes it, and the ssh command lines we build for it. */

export interface SshTarget {
  user?: string;
  host: string;
  port?: number;
}

/** `[user@]host[:port]` (an IPv6 host in brackets). Throws a message naming the expected form. */
export function parseSshTarget(text: string): SshTarget {
  const m = /^(?:([^@\s:/]+)@)?(\[[0-9A-Fa-f:.]+\]|[^@\s:/[\]]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m || m[2]!.startsWith('-')) throw new Error(`"${text}" is not an SSH destination: use [user@]host[:port]`);
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`"${text}": port must be 1-65535`);
  return { ...(m[1] ? { user: m[1] } : {}), host: m[2]!.replace(/^\[|\]$/g, ''), ...(port ? { port } : {}) };
}

/**
 * The ssh argv (without the ssh binary): BatchMode first so that no prompt can ever wait for a
 * terminal; `askpass`: no BatchMode, prompts go to SSH_ASKPASS (forced, so never to a terminal either).
 */
export function sshArgs(
  target: SshTarget,
  sshOptions: string[],
  command: string | undefined,
  askpass = false,
  extra: string[] = [],
): string[] {
  const args = askpass ? ['-T'] : ['-T', '-o', 'BatchMode=yes'];
  for (const o of sshOptions) args.push('-o', o);
  args.push('-o', 'ConnectTimeout=10', '-o', 'ServerAliveInterval=5', '-o', 'ServerAliveCountMax=3');
  if (target.port) args.push('-p', String(target.port));
  if (target.user) args.push('-l', target.user);
  args.push(...extra, '--', target.host);
  if (command !== undefined) args.push(command);
  return args;
}

/** The value of `-o Name=value` (or `Name value`) among `sshOptions`, case-insensitive as ssh reads it; the first wins. */
function sshOption(sshOptions: readonly string[], name: string): string | undefined {
  for (const o of sshOptions) {
    const m = /^\s*([A-Za-z]+)\s*(?:=|\s)\s*(.*?)\s*$/.exec(o);
    if (m && m[1]!.toLowerCase() === name.toLowerCase()) return m[2];
  }
  return undefined;
}

/**
 * The `ssh` command a user pastes in a terminal to reach `targetText` as the executor does (our
 * `-o` options, the port as `-p`: `user@host:port` is no ssh syntax), e.g. to accept a host key.
 */
export function sshCommandLine(targetText: string, sshOptions: readonly string[] = []): string {
  const t = parseSshTarget(targetText);
  const argv = ['ssh'];
  for (const o of sshOptions) argv.push('-o', o);
  if (t.port) argv.push('-p', String(t.port));
  argv.push(t.user ? `${t.user}@${t.host}` : t.host);
  return shellLine(argv);
}

/**
 * The command that removes `targetText`'s recorded host key: ssh's own (its warning names the file
 * and the name the key is recorded under), else built as ssh records it (HostKeyAlias, else `host`
 * or `[host]:port`, in the first UserKnownHostsFile of our options).
 */
export function removeHostKeyCommand(targetText: string, sshOptions: readonly string[] = [], stderr = ''): string {
  const own = /^\s*(ssh-keygen -f (['"])[^'"$`\\\n]*\2 -R (['"])[^'"$`\\\n]*\3)\s*$/m.exec(stderr)?.[1];
  if (own) return own;
  const t = parseSshTarget(targetText);
  const alias = sshOption(sshOptions, 'HostKeyAlias');
  const name = alias && alias.toLowerCase() !== 'none' ? alias : t.port && t.port !== 22 ? `[${t.host}]:${t.port}` : t.host;
  const file = sshOption(sshOptions, 'UserKnownHostsFile')
    ?.split(/\s+/)[0]
    ?.replace(/^~(?=\/)/, sshUserHome());
  return shellLine(['ssh-keygen', ...(file ? ['-f', file] : []), '-R', name]);
}
