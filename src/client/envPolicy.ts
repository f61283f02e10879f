import type { EnvPolicy } from '../protocol';

/**
 * The executor's whole environment (minus its default excludes and `exclude`), as a locally
 * spawned child would inherit ours. `env` of the start is laid on top.
 */
export function inheritAllEnv(exclude: readonly string[] = []): EnvPolicy {
  return { inherit: 'all', ignoreDefaultExcludes: false, exclude: [...exclude], set: {}, includeOnly: [] };
}
