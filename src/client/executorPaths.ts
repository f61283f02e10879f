import { fileURLToPath } from 'node:url';
import type { EnvironmentInfo } from '../protocol';

/** A `file:` URI the executor reported, as a path; undefined when it is missing or not in local form. */
export function executorPath(uri: string | undefined): string | undefined {
  if (!uri?.startsWith('file:')) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}

/**
 * Where commands run when nothing says otherwise: the executor user's home, else the server's own
 * cwd. Home comes first because the server's cwd is often `/`, which would make a workspace-write
 * sandbox meaningless.
 */
export function defaultExecutorDir(info: EnvironmentInfo | undefined): string | undefined {
  return executorPath(info?.userHomeDir) ?? executorPath(info?.cwd);
}
