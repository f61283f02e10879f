import { createHash, randomBytes } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { shellWord } from './shellQuote';

/*
 * Exec Bridge's private directory on a machine: one per user, 0700, never visible inside a sandbox.
 * Everything a sandboxed command must not reach by path lives here: our stdio FIFOs, the seccomp
 * program, token files of bundled servers. Every sandbox we build hides every place where a server
 * of this user may keep it, whatever the environment of the server that builds the sandbox
 * (`sandboxHiddenDirs`, docs/security.md): the fixed places, this environment's candidates, and
 * every runtime directory another server registered (`runtime-dirs/` of the fixed places).
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

/**
 * The places every server of this user computes alike, whatever its environment: the XDG runtime
 * directory of the uid (Linux) and `/tmp/exec-bridge-<uid>`. They also hold the registry of the
 * other runtime directories in use, and each is created before any sandbox binds its parent.
 */
export function fixedPrivateDirs(uid: number = process.getuid?.() ?? 0): string[] {
  const out: string[] = [];
  if (process.platform === 'linux' && isOwnPrivateDir(`/run/user/${uid}`, uid)) out.push(`/run/user/${uid}/exec-bridge`);
  out.push(`/tmp/exec-bridge-${uid}`);
  return out;
}

/**
 * `<fixed place>/runtime-dirs/<hash>-<pid>`: a symlink naming a runtime directory that process
 * `pid` of this user uses (the hash names the directory, so one entry per directory and process).
 */
const REGISTRY = 'runtime-dirs';
/** What older versions kept in the temp directory: FIFO directories and `run --bundled` token directories. */
const OLD_VERSION_PREFIXES = ['exec-bridge-fifo-', 'exec-bridge-run-'];

/**
 * Records `dir` (a runtime directory other than the fixed ones) in the registry of every fixed
 * place that is ours, before `dir` is made, so that the sandboxes other servers build from now on
 * hide it. Fails closed: a directory no registry names would be visible to their sandboxes.
 */
function registerRuntimeDir(dir: string, uid: number): void {
  const fixed = fixedPrivateDirs(uid);
  if (fixed.includes(dir)) return;
  const entry = `${createHash('sha256').update(dir).digest('hex').slice(0, 32)}-${process.pid}`;
  let registered = 0;
  for (const home of fixed) {
    try {
      if (!makeOwnDir(home, uid) || !makeOwnDir(join(home, REGISTRY), uid)) continue;
      const link = join(home, REGISTRY, entry);
      if (readLink(link) !== dir) {
        const tmp = `${link}.${randomBytes(6).toString('hex')}.tmp`;
        symlinkSync(dir, tmp);
        renameSync(tmp, link);
      }
      registered++;
    } catch {
      // this place is not usable (read-only, full): the others may be
    }
  }
  if (registered === 0)
    throw new PrivateDirError(
      `cannot record ${dir} in ${fixed.map((f) => join(f, REGISTRY)).join(' or ')}, so other Exec Bridge servers' sandboxes could see it; make ${fixed.at(-1)} a directory of this user's (chmod 700) and try again`,
    );
}

/**
 * The runtime directories that live processes of this user registered (in fixed places that are
 * ours), and whether each exists. Entries of dead processes are dropped: what a directory holds
 * matters only while a process of ours uses it (a dead server's pipe ends and token open nothing).
 */
function registeredRuntimeDirs(uid: number): Array<{ dir: string; exists: boolean }> {
  const out = new Map<string, boolean>();
  for (const home of fixedPrivateDirs(uid)) {
    const reg = join(home, REGISTRY);
    if (!isOwnPrivateDir(home, uid) || !isOwnPrivateDir(reg, uid)) continue;
    let names: string[];
    try {
      names = readdirSync(reg);
    } catch {
      continue;
    }
    for (const name of names) {
      const m = /^[0-9a-f]{32}-(\d+)$/.exec(name);
      if (!m) continue; // a rename in progress, or not ours
      if (!processLives(Number(m[1]))) {
        try {
          unlinkSync(join(reg, name));
        } catch {
          // another reader removed it
        }
        continue;
      }
      const target = readLink(join(reg, name));
      if (!target || !isAbsolute(target) || out.has(target)) continue;
      out.set(target, !!lstatSync(target, { throwIfNoEntry: false }));
    }
  }
  return [...out].map(([dir, exists]) => ({ dir, exists }));
}

/** Whether `pid` runs (a zombie does not: it holds nothing, and its parent may never reap it). */
export function processLives(pid: number): boolean {
  if (process.platform !== 'linux') return pidAlive(pid);
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Directories of ours that older versions made in the temp directory (they may still be running). */
function oldVersionDirs(uid: number): string[] {
  const out: string[] = [];
  for (const parent of new Set(['/tmp', tmpdir()])) {
    for (const name of listCached(parent)) {
      if (!OLD_VERSION_PREFIXES.some((p) => name.startsWith(p))) continue;
      const p = join(parent, name);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory() && st.uid === uid) out.push(p);
    }
  }
  return out;
}

/** A directory's names, read again only when its mtime changed (a busy /tmp is large; a sandbox is built often). */
const listings = new Map<string, { mtimeNs: bigint; names: string[] }>();
function listCached(dir: string): string[] {
  const st = lstatSync(dir, { throwIfNoEntry: false, bigint: true });
  if (!st?.isDirectory()) return [];
  const hit = listings.get(dir);
  if (hit && hit.mtimeNs === st.mtimeNs) return hit.names;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    names = [];
  }
  listings.set(dir, { mtimeNs: st.mtimeNs, names });
  return names;
}

/**
 * `<runtime dir>/.exec-bridge-cover`: an empty mode-000 directory that the server using a
 * registered runtime directory makes in it. Other servers' sandboxes bind it over that directory
 * with `--ro-bind-try`, so a directory removed meanwhile is skipped instead of failing the start
 * (a tmpfs needs its mount point to exist). Only the directory's own server writes in it: another
 * one making something there could make a removal of the directory fail.
 */
export const COVER_NAME = '.exec-bridge-cover';

/** Where a server of this user may keep sockets, tokens or FIFOs (see `sandboxHiddenDirs`). */
export interface HiddenDirs {
  /** Covered by a tmpfs: ours to make and keep (this environment's candidates, the fixed places), and others' without a cover. */
  own: string[];
  /**
   * Among `own`: other processes' directories (registered without a cover, older versions'). They
   * go when their process ends, possibly while a sandbox is being built (src/server/sandbox/coverRace.ts).
   */
  transient?: string[];
  /** Other servers' runtime directories, covered by their `COVER_NAME` (missing ones included: bwrap skips them). */
  others: string[];
}

/**
 * Every place where a server of this user may keep sockets, tokens or FIFOs: this environment's
 * candidates and the fixed places (each made now if missing, so that none can appear later inside
 * a sandbox built now), the registered runtime directories, and what older versions left in `/tmp`
 * and the temp directory. A sandbox hides all of them; `fs/*` calls with a sandbox deny them.
 */
export function sandboxHiddenDirs(env: NodeJS.ProcessEnv = process.env): HiddenDirs {
  const uid = process.getuid?.() ?? 0;
  const own = new Set<string>();
  for (const d of [...privateDirCandidates(env), ...fixedPrivateDirs(uid)]) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch {
      // exists already, or cannot be made (then nothing of ours can be there)
    }
    const real = realDir(d);
    if (real) own.add(real);
  }
  const others = new Set<string>();
  const transient = new Set<string>();
  for (const { dir, exists } of registeredRuntimeDirs(uid)) {
    // Gone while its process lives (it makes it again on its next use): listed still, which keeps
    // the argv stable; its cover went with it, so bwrap skips it.
    if (!exists) {
      others.add(dir);
      continue;
    }
    const real = realDir(dir);
    if (!real || own.has(real)) continue;
    if (hasCover(real, uid)) others.add(real);
    else {
      own.add(real); // no cover (its server is older, or is making it right now): a tmpfs
      transient.add(real);
    }
  }
  // An older version's: tmpfs (they make no cover).
  for (const d of oldVersionDirs(uid)) {
    const real = realDir(d);
    if (real && !own.has(real)) {
      own.add(real);
      transient.add(real);
    }
  }
  return { own: [...own], transient: [...transient], others: [...others].sort() };
}

function hasCover(dir: string, uid: number): boolean {
  const st = lstatSync(join(dir, COVER_NAME), { throwIfNoEntry: false });
  return !!st && st.isDirectory() && st.uid === uid && (st.mode & 0o777) === 0;
}

function realDir(p: string): string | undefined {
  try {
    const real = realpathSync.native(p);
    return lstatSync(real).isDirectory() ? real : undefined;
  } catch {
    return undefined;
  }
}

function readLink(p: string): string | undefined {
  try {
    return readlinkSync(p);
  } catch {
    return undefined;
  }
}

/** Makes `p` (0700) if missing; true if it is then a plain directory of ours that only we can open. */
function makeOwnDir(p: string, uid: number): boolean {
  try {
    mkdirSync(p, { mode: 0o700 });
  } catch {
    // exists, or cannot be made: checked below
  }
  return isOwnPrivateDir(p, uid);
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
  const uid = process.getuid?.() ?? 0;
  // Registered first (again on every use: a temp cleaner may have removed the entry), made second.
  registerRuntimeDir(dir, uid);
  if (cached === dir && isOwnPrivateDir(dir, uid)) return dir;
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new PrivateDirError(`cannot create Exec Bridge's private directory ${dir}: ${(e as Error).message}`);
  }
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st || !st.isDirectory() || st.isSymbolicLink())
    throw new PrivateDirError(`${dir} must be a directory of Exec Bridge's (it is not a plain directory); remove it and try again`);
  if (st.uid !== uid)
    throw new PrivateDirError(
      `${dir} belongs to uid ${st.uid}, not to this user (${uid}); remove it (or set EXEC_BRIDGE_RUNTIME_DIR) and try again`,
    );
  if ((st.mode & 0o077) !== 0)
    throw new PrivateDirError(
      `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)}); run \`chmod 700 ${shellWord(dir)}\` and try again`,
    );
  // Other servers' sandboxes bind this over the directory (see COVER_NAME); fixed places get a tmpfs.
  if (!fixedPrivateDirs(uid).includes(dir)) {
    try {
      mkdirSync(join(dir, COVER_NAME), { mode: 0 });
    } catch {
      // exists already, or cannot be made: other servers then cover the directory with a tmpfs
    }
  }
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
