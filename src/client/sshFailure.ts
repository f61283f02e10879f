import { removeHostKeyCommand, sshCommandLine } from './sshTarget';

/* Why an SSH executor could not be reached, in the user's words and with the fix. */

export type SshFailureKind = 'no-ssh' | 'auth' | 'host-key' | 'unreachable' | 'no-node' | 'old-node' | 'platform' | 'install' | 'other';

/** One failure, worded for the user with the fix. */
export class SshConnectError extends Error {
  constructor(
    readonly kind: SshFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'SshConnectError';
  }
}

/** ssh's exit without our ready line, as one message with the fix (commands in it work when pasted). */
export function describeSshFailure(
  targetText: string,
  stderr: string,
  code: number | null,
  asked?: { prompts: number },
  sshOptions: readonly string[] = [],
): SshConnectError {
  const err = stderr.trim();
  const last = err.split('\n').slice(-2).join(' ').trim();
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/i.test(err))
    return new SshConnectError(
      'host-key',
      `${targetText}'s host key has CHANGED since it was recorded in known_hosts: this can be an attack. Check with the machine's owner, then remove the old key (${removeHostKeyCommand(targetText, sshOptions, stderr)})`,
    );
  if (/Host key verification failed|No .* host key is known/i.test(err))
    return new SshConnectError(
      'host-key',
      `${targetText}'s host key is not known: connect once in a terminal (${sshCommandLine(targetText, sshOptions)}) to check and accept it, then try again`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err) && asked && asked.prompts > 0)
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): the password or passphrase you entered was not accepted; connect again to retry`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err) && asked)
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): add your key to ssh-agent (ssh-add) or set IdentityFile in ~/.ssh/config`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err))
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): add your key to ssh-agent (ssh-add) or set IdentityFile in ~/.ssh/config; password and passphrase prompts are not supported (BatchMode)`,
    );
  if (/Could not resolve hostname|Connection refused|Connection timed out|No route to host|Network is unreachable/i.test(err))
    return new SshConnectError('unreachable', `cannot reach ${targetText}: ${last}`);
  return new SshConnectError('other', `ssh to ${targetText} failed (exit ${code ?? '?'})${last ? `: ${last}` : ''}`);
}
