import { lstatSync, readFileSync } from 'node:fs';
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
 * bound or covered (placeholders are ours and carry none). Equal before and after ⇒ a sandbox
 * built earlier sees what one built now would.
 */
export function hostFingerprint(layout: Layout): string {
  let mounts: string;
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'latin1');
  } catch {
    mounts = `unreadable ${Math.random()}`; // never equal: no reuse without proof
  }
  const ids = [...layout.writableRoots, ...layout.mounts.filter((m) => m.kind !== 'placeholder').map((m) => m.path)].map((p) => {
    const st = lstatSync(p, { throwIfNoEntry: false, bigint: true });
    return st ? `${p}:${st.dev}:${st.ino}` : `${p}:-`;
  });
  return `${mounts}\n${ids.join('\n')}`;
}
