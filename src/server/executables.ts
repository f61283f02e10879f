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

/** `env` from coreutils, if this machine has it. */
export const ENV_TOOL = ['/usr/bin/env', '/bin/env'].find((p) => isExecutableFile(p));
