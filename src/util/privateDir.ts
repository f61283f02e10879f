import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/*
 * Exec Bridge's private directory on a machine: one per user, 0700, never visible inside a sandbox.
 * Everything a sandboxed command must not reach by path lives here: our stdio FIFOs, the seccomp
 * program, token files of bundled servers. Every sandbox we build hides every candidate location
 * behind an empty, inaccessible tmpfs (docs/security.md), whichever of them this process uses, so
 * two servers started with different environments still hide each other's state.
 */

/** Where the private directory may be, in order of preference (only the first is used; all are hidden). */
export function privateDirCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const uid = process.getuid?.() ?? 0;
  const out: string[] = [];
  if (env.EXEC_BRIDGE_RUNTIME_DIR && isAbsolute(env.EXEC_BRIDGE_RUNTIME_DIR)) out.push(env.EXEC_BRIDGE_RUNTIME_DIR);
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && isAbsolute(xdg) && isOwnPrivateDir(xdg, uid)) out.push(join(xdg, 'exec-bridge'));
  // /tmp rather than $TMPDIR on Linux: the same for every process of this user, whatever its env.
  if (process.platform === 'linux') out.push(`/tmp/exec-bridge-${uid}`);
  out.push(join(tmpdir(), `exec-bridge-${uid}`));
  return [...new Set(out)];
}

function isOwnPrivateDir(p: string, uid: number): boolean {
  const st = lstatSync(p, { throwIfNoEntry: false });
  return !!st && st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0;
}

/** A private directory that is not ours (another user's, a symlink, readable by others): refuse it. */
export class PrivateDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PrivateDirError';
  }
}

/** `<private dir>/token-<pid>-XXXXXX/token`: a bundled server's token, while it starts. */
export const TOKEN_DIR_PREFIX = 'token-';

let cached: string | undefined;

/**
 * The private directory, created 0700 if missing. Throws `PrivateDirError` with the fix when the
 * path exists but is not a directory of ours that only we can open: we never fall back to a
 * location that other servers' sandboxes would not hide.
 */
export function privateDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = privateDirCandidates(env)[0]!;
  if (cached === dir && isOwnPrivateDir(dir, process.getuid?.() ?? 0)) return dir;
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new PrivateDirError(`cannot create Exec Bridge's private directory ${dir}: ${(e as Error).message}`);
  }
  const uid = process.getuid?.() ?? 0;
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st || !st.isDirectory() || st.isSymbolicLink())
    throw new PrivateDirError(`${dir} must be a directory of Exec Bridge's (it is not a plain directory); remove it and try again`);
  if (st.uid !== uid)
    throw new PrivateDirError(
      `${dir} belongs to uid ${st.uid}, not to this user (${uid}); remove it (or set EXEC_BRIDGE_RUNTIME_DIR) and try again`,
    );
  if ((st.mode & 0o077) !== 0)
    throw new PrivateDirError(
      `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)}); run \`chmod 700 ${dir}\` and try again`,
    );
  cached = dir;
  return dir;
}

/**
 * A fresh subdirectory `<prefix><pid>-XXXXXX` of the private directory (0700). The pid in the
 * name lets `sweepDeadDirs` remove what a killed process left behind.
 */
export function makePrivateSubdir(prefix: string, env: NodeJS.ProcessEnv = process.env): string {
  return mkdtempSync(join(privateDir(env), `${prefix}${process.pid}-`));
}

/** Removes `<prefix><pid>-*` subdirectories whose process is gone. Returns how many it removed. */
export function sweepDeadDirs(prefix: string, env: NodeJS.ProcessEnv = process.env): number {
  let dir: string;
  let names: string[];
  try {
    dir = privateDir(env);
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || pidAlive(pid)) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
      removed++;
    } catch {
      // still being written (a dead server's last mkfifo, another sweeper): next time
    }
  }
  return removed;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
