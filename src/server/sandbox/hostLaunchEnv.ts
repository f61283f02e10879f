/*
 * The environment of the host-side launcher of a sandbox (./planner.ts).
 */

/**
 * The host-side launcher (bwrap, and the shell in front of it for a PTY) runs outside the sandbox
 * with the command's environment. The dynamic loader's variables would make it load code or read
 * files named there before any namespace exists (`LD_PRELOAD=./x.so`, an `LD_LIBRARY_PATH` with a
 * workspace folder or an empty element: code a sandboxed command could have written). So they are
 * moved: bwrap gets the environment without them and sets them for the command (`--setenv`), which
 * sees exactly the environment it asked for. (The pre-started path already runs bwrap with an
 * empty environment; its script sets the command's.)
 */
export function hostLaunchEnv(env: Record<string, string>): { env: Record<string, string>; moved: Array<[string, string]> } {
  const out = Object.create(null) as Record<string, string>;
  const moved: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('LD_') || LOADER_VARS.includes(k)) moved.push([k, v]);
    else out[k] = v;
  }
  return { env: out, moved };
}

/** Besides `LD_*`: what makes glibc load modules or read files from a path it names (ld.so drops them for setuid programs). */
const LOADER_VARS = ['GCONV_PATH', 'GLIBC_TUNABLES', 'LOCPATH', 'NLSPATH', 'MALLOC_TRACE', 'HOSTALIASES', 'RESOLV_HOST_CONF'];
