import { parseSshTarget } from '../client';
import type { SandboxPolicyName } from '../protocol';
import { errorMessage } from '../util';
import { applyOptions, help, listValue, sandboxPolicyValue, UsageError, type OptionTable } from './cliOptions';

export { HelpRequested, UsageError } from './cliOptions';

/* `exec-bridge run`'s command line: the usage text and the parser (the run itself is in run.ts). */

export const RUN_USAGE = `usage: exec-bridge run [--url URL | --bundled | --ssh [USER@]HOST[:PORT] [--ssh-option OPT]...]
                      [--token-file FILE] [--tty] [--cwd DIR]
                      [--sandbox read-only|workspace-write|full-access] [--sandbox-network]
                      [--sandbox-network-allow HOST[:PORT],...] [--sandbox-network-deny HOST[:PORT],...]
                      [--no-stdin] [--deadline-ms N] [--session-ttl-ms N] [--verbose] -- COMMAND [ARG]...

  Runs COMMAND on an executor through the resilient client: streams its stdout/stderr to ours,
  forwards our stdin, turns Ctrl-C into an interrupt, and exits with its exit code. A dropped
  connection is resumed (the command keeps running, no output is lost or repeated).

  --url          exec-server to use (ws:// or wss://); e.g. ours or \`codex exec-server\`.
  --bundled      start our own exec-server (loopback, random token) for this run (default without --url).
  --ssh          run on HOST over the system ssh (keys or agent; no prompts): installs this exec-server
                 under ~/.exec-bridge on HOST if that version is missing (HOST needs Node.js 20+),
                 then relays to HOST's per-user daemon; a drop resumes through a new ssh.
  --ssh-option   passed to ssh as -o OPT (repeatable), e.g. --ssh-option ProxyJump=bastion.
  --token-file   bearer token for --url (file content, trimmed; EXEC_BRIDGE_TOKEN works too).
  --tty          run in a pseudo-terminal (our terminal goes raw; the remote line discipline handles keys).
  --cwd          working directory on the executor (default: ours with --bundled, the executor's with --url).
  --sandbox      run inside the executor's sandbox (see the README's "Sandbox" section): read-only,
                 workspace-write (the working directory is the workspace) or full-access. If the
                 sandbox blocks the command, a "sandbox denied" line says so and how to re-run it.
  --sandbox-network  allow the network inside the sandbox (default: off).
  --sandbox-network-allow  managed network: only these destinations (host, *.host, IP; optional
                 :port), through the executor's proxy (HTTP_PROXY/HTTPS_PROXY/ALL_PROXY are set for
                 the command). Repeat it or separate with commas. --sandbox-network-deny wins over it.
  --no-stdin     give the command /dev/null as stdin. (The protocol cannot forward end-of-file, so a
                 command that reads stdin to its end waits forever unless it is interrupted.)
  --deadline-ms  how long to try resuming a lost connection before giving up (default 25000). 0: never
                 give up — retry (back-off up to 30 s between attempts) for as long as the executor
                 keeps the session (asked for 10 h unless --session-ttl-ms says otherwise; the
                 command keeps running there meanwhile), then fail with the executor's answer.
  --session-ttl-ms  how long the executor should keep the session and the command if the connection
                 drops (default: the executor's own, 30 s; with --deadline-ms 0: 10 h).
  --verbose      log connection details on stderr.

  Exit status: the command's; 127 if it was not found; 255 if the connection failed.`;

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
