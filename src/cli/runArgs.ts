import { parseSshTarget } from '../client';
import type { SandboxPolicyName } from '../protocol';
import { errorMessage } from '../util';
import { applyOptions, help, listValue, sandboxPolicyValue, UsageError, type OptionTable } from './cliOptions';

export { RUN_USAGE } from './usage';

export { HelpRequested, UsageError } from './cliOptions';

/* `exec-bridge run`'s command line: the usage text and the parser (the run itself is in run.ts). */

export interface RunArgs {
  url?: string;
  ssh?: string;
  sshOptions: string[];
  bundled: boolean;
  tokenFile?: string;
  tty: boolean;
  cwd?: string;
  stdin: boolean;
  deadlineMs?: number;
  sessionTtlMs?: number;
  verbose: boolean;
  sandbox?: SandboxPolicyName;
  sandboxNetwork: boolean;
  /** Managed network lists (`--sandbox-network-allow/-deny`). */
  networkAllow: string[];
  networkDeny: string[];
  argv: string[];
}

/** A duration in ms: at least `min` (0 for `--deadline-ms`, "never give up"). */
function msValue(flag: string, v: string, min: 0 | 1): number {
  const n = Number(v);
  if (Number.isSafeInteger(n) && n >= min) return n;
  throw new UsageError(
    min === 0 ? `${flag} must be 0 (never give up) or a positive integer, got ${v}` : `${flag} must be a positive integer, got ${v}`,
  );
}

const RUN_OPTIONS: OptionTable<RunArgs> = {
  '--url': (o, v) => (o.url = v()),
  '--bundled': (o) => (o.bundled = true),
  '--ssh': (o, v) => (o.ssh = v()),
  '--ssh-option': (o, v) => o.sshOptions.push(v()),
  '--token-file': (o, v) => (o.tokenFile = v()),
  '--tty': (o) => (o.tty = true),
  '--cwd': (o, v) => (o.cwd = v()),
  '--no-stdin': (o) => (o.stdin = false),
  '--deadline-ms': (o, v, flag) => (o.deadlineMs = msValue(flag, v(), 0)),
  '--session-ttl-ms': (o, v, flag) => (o.sessionTtlMs = msValue(flag, v(), 1)),
  '--verbose': (o) => (o.verbose = true),
  '--sandbox': (o, v) => (o.sandbox = sandboxPolicyValue(v())),
  '--sandbox-network': (o) => (o.sandboxNetwork = true),
  '--sandbox-network-allow': (o, v) => o.networkAllow.push(...listValue(v())),
  '--sandbox-network-deny': (o, v) => o.networkDeny.push(...listValue(v())),
  '-h': help,
  '--help': help,
};

export function parseRunArgs(args: string[]): RunArgs {
  const out: RunArgs = {
    bundled: false,
    tty: false,
    stdin: true,
    verbose: false,
    sandboxNetwork: false,
    networkAllow: [],
    networkDeny: [],
    sshOptions: [],
    argv: [],
  };
  out.argv = applyOptions(args, RUN_OPTIONS, out, true);
  checkRunArgs(out);
  if (out.url === undefined && out.ssh === undefined) out.bundled = true;
  return out;
}

/** The rules between options; the first one broken is the error. */
function checkRunArgs(out: RunArgs): void {
  if ([out.url !== undefined, out.bundled, out.ssh !== undefined].filter(Boolean).length > 1)
    throw new UsageError('use one of --url, --bundled and --ssh');
  if (out.sshOptions.length > 0 && out.ssh === undefined) throw new UsageError('--ssh-option needs --ssh');
  if (out.ssh !== undefined) {
    try {
      parseSshTarget(out.ssh);
    } catch (e) {
      throw new UsageError(errorMessage(e));
    }
  }
  if (out.argv.length === 0) throw new UsageError('no command given');
  if (out.sandboxNetwork && !out.sandbox) throw new UsageError('--sandbox-network needs --sandbox');
  const managed = out.networkAllow.length > 0 || out.networkDeny.length > 0;
  if (managed && !out.sandbox) throw new UsageError('--sandbox-network-allow needs --sandbox');
  if (managed && out.sandboxNetwork) throw new UsageError('use either --sandbox-network (everything) or --sandbox-network-allow (a list)');
  if (out.networkDeny.length > 0 && out.networkAllow.length === 0)
    throw new UsageError('--sandbox-network-deny needs --sandbox-network-allow');
}

/**
 * `args` back as `run` arguments (parseRunArgs of the result gives the same RunArgs): what a
 * printed "run it again …" line needs so that, pasted, it runs the same command on the same
 * executor, in the same directory, with the same stdin and lifetimes; only what it changes differs.
 */
export function runArgv(args: RunArgs): string[] {
  const out: string[] = [];
  if (args.url !== undefined) out.push('--url', args.url);
  if (args.ssh !== undefined) out.push('--ssh', args.ssh);
  for (const o of args.sshOptions) out.push('--ssh-option', o);
  if (args.tokenFile !== undefined) out.push('--token-file', args.tokenFile);
  if (args.tty) out.push('--tty');
  if (args.cwd !== undefined) out.push('--cwd', args.cwd);
  if (!args.stdin) out.push('--no-stdin');
  if (args.deadlineMs !== undefined) out.push('--deadline-ms', String(args.deadlineMs));
  if (args.sessionTtlMs !== undefined) out.push('--session-ttl-ms', String(args.sessionTtlMs));
  if (args.verbose) out.push('--verbose');
  if (args.sandbox !== undefined) out.push('--sandbox', args.sandbox);
  if (args.sandboxNetwork) out.push('--sandbox-network');
  if (args.networkAllow.length > 0) out.push('--sandbox-network-allow', args.networkAllow.join(','));
  if (args.networkDeny.length > 0) out.push('--sandbox-network-deny', args.networkDeny.join(','));
  out.push('--', ...args.argv);
  return out;
}
