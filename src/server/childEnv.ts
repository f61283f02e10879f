import type { EnvPolicy } from '../protocol';

/** The variables `inherit: "core"` keeps from the server's own environment. */
const CORE_VARS = ['HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'TMPDIR', 'USER'];

/** Unless `ignoreDefaultExcludes`, names that look like secrets are not inherited. */
const DEFAULT_EXCLUDES = ['*KEY*', '*SECRET*', '*TOKEN*'];

/**
 * Our own secrets: the bearer token `serve` and `run` read from the environment, and the askpass
 * secret of an SSH attempt. They enter no child's environment, from any source (the server's own
 * environment, `set`, `env`) and whatever the policy: with one, a network-on sandbox could connect
 * to us and start an unsandboxed command (docs/security.md, "Our secrets in environments").
 */
export const OWN_SECRET_VARS: readonly string[] = ['EXEC_BRIDGE_TOKEN', 'EXEC_BRIDGE_ASKPASS_SECRET'];

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

/**
 * The child's environment for `process/start`: without a policy, `env` is the whole environment;
 * with one, start from the server's environment as the policy says, then overlay `set`, then `env`
 * (`env` wins over `set`, as in the real server). The result has no prototype, and keys are copied
 * by definition, never by assignment: a variable named `__proto__` is a variable like any other.
 * `OWN_SECRET_VARS` are dropped last, from every source.
 */
export function buildChildEnv(
  env: Record<string, string>,
  policy: EnvPolicy | null | undefined,
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  const put = (entries: Iterable<[string, string]>) => {
    for (const [k, v] of entries) out[k] = v; // on a prototype-less object `__proto__` is a plain key
  };
  if (!policy) {
    put(Object.entries(env));
    return withoutOwnSecrets(out);
  }
  let entries = Object.entries(base).filter((e): e is [string, string] => typeof e[1] === 'string');
  if (policy.inherit === 'none') entries = [];
  else if (policy.inherit === 'core') entries = entries.filter(([k]) => CORE_VARS.includes(k));
  const excludes = [...(policy.ignoreDefaultExcludes ? [] : DEFAULT_EXCLUDES), ...policy.exclude].map(globToRegExp);
  put(entries.filter(([k]) => !excludes.some((re) => re.test(k))));
  put(Object.entries(policy.set));
  if (policy.includeOnly.length > 0) {
    const keep = policy.includeOnly.map(globToRegExp);
    for (const k of Object.keys(out)) if (!keep.some((re) => re.test(k))) delete out[k];
  }
  put(Object.entries(env));
  return withoutOwnSecrets(out);
}

function withoutOwnSecrets(env: Record<string, string>): Record<string, string> {
  for (const k of OWN_SECRET_VARS) delete env[k];
  return env;
}
