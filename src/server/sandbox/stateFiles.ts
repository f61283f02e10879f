import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateDir } from '../../util';
import { SandboxUnavailableError } from './errors';
import { keyringOffFilter, managedNetworkFilter, networkOffFilter } from './seccomp';

/*
 * The sandbox planner's state on disk (./planner.ts): the seccomp programs bwrap loads, written to
 * `sandbox/` in our private directory, 0700, which no sandbox sees.
 */
export class SandboxStateFiles {
  private readonly seccompPrograms = new Map<'net-off' | 'keyring-off', Buffer | null>();
  private managedFilter: Buffer | undefined;

  constructor(private dir?: string) {}

  /** The managed network's filter (its bridge loads it), built once. */
  managedNetworkFilter(): Buffer {
    try {
      return (this.managedFilter ??= managedNetworkFilter());
    } catch (e) {
      const reason = `cannot enforce a managed network on this machine: ${(e as Error).message}.`;
      throw new SandboxUnavailableError(reason, `${reason.slice(0, -1)}; the command was not run. Run on x86_64/arm64.`);
    }
  }

  /**
   * Where the seccomp program lives: `sandbox/` in our private directory, which no sandbox can see
   * (see `hidden` in planLinux), so a sandboxed command can neither read nor swap the filter of the next one.
   */
  stateDir(): string {
    if (this.dir) return this.dir;
    let dir: string;
    try {
      dir = join(privateDir(), 'sandbox');
      mkdirSync(dir, { mode: 0o700, recursive: true });
    } catch (e) {
      throw new SandboxUnavailableError(`${(e as Error).message}.`, `${(e as Error).message}; the command was not run.`);
    }
    return (this.dir = dir);
  }

  /**
   * The filter file, checked on every use (cheap: a few hundred bytes) and rewritten if it changed.
   * Undefined only for the keyring filter on an architecture we have no syscall table for (the
   * network-off one then fails closed instead).
   */
  seccompFile(kind: 'net-off' | 'keyring-off'): string | undefined {
    let bpf = this.seccompPrograms.get(kind);
    if (bpf === undefined) {
      try {
        bpf = kind === 'net-off' ? networkOffFilter() : keyringOffFilter();
      } catch (e) {
        if (kind === 'net-off') {
          const reason = `cannot turn the network off on this machine: ${(e as Error).message}.`;
          throw new SandboxUnavailableError(
            reason,
            `${reason.slice(0, -1)}; the command was not run. Allow the network in the sandbox request or run on x86_64/arm64.`,
          );
        }
        bpf = null;
      }
      this.seccompPrograms.set(kind, bpf);
    }
    if (bpf === null) return undefined;
    const file = join(this.stateDir(), `${kind}-${process.arch}-${createHash('sha256').update(bpf).digest('hex').slice(0, 16)}.bpf`);
    let current: Buffer | undefined;
    try {
      current = readFileSync(file);
    } catch {
      current = undefined;
    }
    if (!current || !current.equals(bpf)) {
      const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(tmp, bpf, { mode: 0o400, flag: 'wx' });
      renameSync(tmp, file);
    }
    return file;
  }
}
