import { closeSync, readdirSync, readFileSync } from 'node:fs';

/**
 * O_CLOEXEC as /proc/<pid>/fdinfo's octal `flags:` shows a descriptor's close-on-exec bit (the
 * generic Linux value: x86, arm, ppc, s390, riscv; only alpha, parisc and sparc differ).
 */
const O_CLOEXEC = 0o2000000;

/**
 * Closes every descriptor above stderr that this process inherited without close-on-exec: Linux
 * passes such a descriptor into every process we start, and neither spawn nor bwrap closes it, so
 * a directory descriptor on a workspace's `.git` (left open by a shell, a CI runner, the extension
 * host) let a sandboxed command write hooks through `/proc/self/fd/N` (docs/security.md,
 * "Descriptors the server inherited"). Everything Node opens is close-on-exec, its IPC channel too
 * (kept anyway: Node has already taken it, and NODE_CHANNEL_FD is gone from the environment by now).
 * Call it first thing in a server process. Returns the descriptors closed; undefined where there is
 * no /proc to read (not Linux, or no /proc mounted): nothing is closed then.
 */
export function closeInheritedFds(procSelf = '/proc/self', close: (fd: number) => void = closeSync): number[] | undefined {
  if (process.platform !== 'linux') return undefined;
  let names: string[];
  try {
    names = readdirSync(`${procSelf}/fd`);
  } catch {
    return undefined;
  }
  const channel = (process.channel as { fd?: number } | undefined)?.fd;
  const closed: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2 || fd === channel) continue;
    const flags = fdFlags(procSelf, fd);
    // Unreadable: gone already (the listing's own descriptor) or not ours to judge.
    if (flags === undefined || (flags & O_CLOEXEC) !== 0) continue;
    try {
      close(fd);
      closed.push(fd);
    } catch {
      // closed meanwhile
    }
  }
  return closed;
}

/** The `flags:` of `<procSelf>/fdinfo/<fd>` (octal in the file), or undefined. */
function fdFlags(procSelf: string, fd: number): number | undefined {
  try {
    const m = /^flags:\s*([0-7]+)\s*$/m.exec(readFileSync(`${procSelf}/fdinfo/${fd}`, 'latin1'));
    return m ? parseInt(m[1]!, 8) : undefined;
  } catch {
    return undefined;
  }
}
