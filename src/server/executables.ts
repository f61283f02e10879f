import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** A regular file we may execute (what execvp would accept). */
export function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The search path execvp uses when PATH is unset. */
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * The first executable file called `name` in the directories of `pathVar` (the default path when
 * undefined), in order; empty entries are skipped, and relative ones too unless `relativeDirs`.
 */
export function findOnPath(name: string, pathVar: string | undefined, opts: { relativeDirs?: boolean } = {}): string | undefined {
  for (const dir of (pathVar ?? DEFAULT_PATH).split(delimiter)) {
    if (!dir || (!opts.relativeDirs && !isAbsolute(dir))) continue;
    const p = join(dir, name);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

/**
 * Where the server finds the helpers it runs on its own behalf (bwrap, mkfifo, the watchdog's
 * pkill and rm), never its inherited PATH: that PATH may name a folder inside a workspace (an
 * activated `.venv/bin`, `node_modules/.bin`), which a sandboxed command can write, and what it
 * plants there would run unsandboxed (docs/security.md, "Helpers the server runs itself"). These
 * folders are root's on every system we run on, and no sandbox policy makes them writable. The
 * distribution's come first; /usr/local after them (a group may write it on some systems, e.g.
 * Debian's `staff`); NixOS keeps its system tools only in its root-owned system profile.
 */
export const SYSTEM_DIRS: readonly string[] = [
  '/usr/bin',
  '/bin',
  '/usr/sbin',
  '/sbin',
  '/usr/local/bin',
  '/usr/local/sbin',
  '/run/current-system/sw/bin',
];

/** `SYSTEM_DIRS` as a PATH, for the shells the server runs itself (the orphan watchdog). */
export const SYSTEM_PATH = SYSTEM_DIRS.join(':');

/** The first executable file called `name` in `dirs` (default `SYSTEM_DIRS`), by absolute path. */
export function findSystemTool(name: string, dirs: readonly string[] = SYSTEM_DIRS): string | undefined {
  return dirs.map((dir) => join(dir, name)).find((p) => isExecutableFile(p));
}

/** `env` from coreutils, if this machine has it. */
export const ENV_TOOL = ['/usr/bin/env', '/bin/env'].find((p) => isExecutableFile(p));
