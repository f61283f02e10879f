import { accessSync, constants, statSync } from 'node:fs';

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
