import { lstatSync, readFileSync, statSync } from 'node:fs';
import { shellLine } from '../../util';
import { ENV_TOOL } from '../executables';
import type { Layout } from './layout';

// The stub execs through `env` (ENV_TOOL) so the command gets exactly its environment (sh would add PWD and drop odd names).

/** What waits in a pre-started sandbox: a shell reading its script on stdin (the name shows in `ps`). */
export const PREWARM_STUB = ['/bin/sh', '-s', 'exec-bridge-prewarm'] as const;

/**
 * The script a pre-started sandbox's stub reads on stdin: exec the command through `env -i` with
 * exactly `env`, its real stdin moved from `stdinFd` to 0. (Read from stdin, not by opening
 * /dev/fd/N: reopening a FIFO whose writer already closed would block forever.) Undefined when the
 * command cannot be expressed exactly that way (no `env` tool, a variable name `env` would
 * misread, a program path containing `=`): such a start builds its sandbox on the spot.
 */
export function stubScript(stdinFd: number, command: string[], env: Record<string, string>): string | undefined {
  if (!ENV_TOOL || command[0]!.includes('=')) return undefined;
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (k === '' || k.includes('=') || k.includes('\0') || v.includes('\0')) return undefined;
    pairs.push(`${k}=${v}`);
  }
  return `exec ${shellLine([ENV_TOOL, '-i', '--', ...pairs, ...command])} 0<&${stdinFd} ${stdinFd}<&-\n`;
}

/**
 * What a sandbox's mounts captured from the host: the mount table and the identity of every path
 * bound or covered, placeholder stubs included. Equal before and after ⇒ a sandbox built earlier
 * sees what one built now would, in the same working directory. (A stub removed on the host, by
 * the user or an unsandboxed command, detaches the empty read-only mount on it inside a waiting
 * sandbox: a command there could then make the protected path, `.codex/config.toml` say, on the
 * host. The start that follows makes the stub again, so its identity differs.) A path's identity is
 * its device, inode and birth time: a folder deleted and made again usually gets the inode just
 * freed (ext4 gave it back 20 times in 20), so the inode alone took the new folder for the old one.
 */
export function hostFingerprint(layout: Layout, cwd: string): string {
  let mounts: string;
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'latin1');
  } catch {
    mounts = `unreadable ${Math.random()}`; // never equal: no reuse without proof
  }
  const ids = [...layout.writableRoots, ...layout.mounts.map((m) => m.path), ...(layout.links ?? [])].map(
    (p) => `${p}:${identity(p, lstatSync)}`,
  );
  // The folder the sandbox's shell changed into when it was built (followed, as chdir follows): a
  // cwd below a root that stays (build/ removed and made again) is not among the paths above.
  ids.push(`cwd ${cwd}:${identity(cwd, statSync)}`);
  return `${mounts}\n${ids.join('\n')}`;
}

/** `dev:ino:birth` of `p`; `-` when it is not there (missing, or a file on the way); never twice the same when it cannot be read. */
function identity(p: string, stat: typeof lstatSync): string {
  const id = pathIdentity(p, stat);
  return id === null ? `unreadable ${Math.random()}` : (id ?? '-'); // no reuse without proof
}

/**
 * A path's identity: device, inode and birth time (the inode alone is given back to the next
 * folder made, see `hostFingerprint`). Undefined when nothing is there (missing, or a file on the
 * way); null when it cannot be read. Also the running sandbox's guard's (./carveOutGuard.ts).
 */
export function pathIdentity(p: string, stat: typeof lstatSync = lstatSync): string | undefined | null {
  try {
    const st = stat(p, { throwIfNoEntry: false, bigint: true });
    return st ? `${st.dev}:${st.ino}:${st.birthtimeNs}` : undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? undefined : null;
  }
}
