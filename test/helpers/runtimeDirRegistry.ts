/** The registry of runtime directories (src/util/privateDir.ts) as its tests look at it. */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fixedPrivateDirs, sandboxHiddenDirs } from '../../src/util/privateDir';

/**
 * A directory of the test's own for runtime directories (the caller removes it), outside /tmp where
 * the temp dir allows: the fixed place `/tmp/exec-bridge-<uid>` is shared with every other test and
 * server of this user.
 */
export function registryTestBase(): string {
  return realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-registry-')));
}

export const REGISTRY = join(fixedPrivateDirs().at(-1)!, 'runtime-dirs');

/** The registry entry a server with `pid` makes for `dir`. */
export const entryFor = (dir: string, pid: number) =>
  join(REGISTRY, `${createHash('sha256').update(dir).digest('hex').slice(0, 32)}-${pid}`);

/** Every directory a sandbox build (whose environment names none) hides. */
export const hidden = () => {
  const d = sandboxHiddenDirs({});
  return [...d.own, ...d.others];
};
