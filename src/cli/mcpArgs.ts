import { resolve } from 'node:path';
import { parseSshTarget } from '../client';
import { AGENT_OUTPUT_LIMIT, BUNDLED_EXECUTOR, DEFAULT_SANDBOX, type ExecutorConfig, type SandboxSettings } from '../core';
import { errorMessage } from '../util';
import { applyOptions, help, listValue, sandboxPolicyValue, UsageError, type OptionTable } from './cliOptions';

export { MCP_USAGE } from './usage';

/* `exec-bridge mcp`'s command line: the usage text and the parser (the server is in mcp.ts). */

/** One executor from the command line, as the extension's settings describe it, plus its token file. */
export interface McpExecutor {
  config: ExecutorConfig;
  /** `--url`: the bearer token's file (else EXEC_BRIDGE_TOKEN). */
  tokenFile?: string;
}

export interface McpArgs {
  /** The first is the default. Never empty. */
  executors: McpExecutor[];
  sandbox: SandboxSettings;
  allowUnsandboxed: boolean;
  sessionTtlMs: number;
  maxOutputBytes: number;
  verbose: boolean;
}

export const DEFAULT_MCP_SESSION_TTL_MS = 60_000;
export const DEFAULT_MAX_OUTPUT_BYTES = AGENT_OUTPUT_LIMIT;
const MIN_OUTPUT_BYTES = 1024;
/** An answer the model can still take in (and far below the MCP SDK's own limits). */
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** An executor while its options are read: the name comes last (a default unless --name). */
type Draft = {
  [K in ExecutorConfig['kind']]: Omit<Extract<ExecutorConfig, { kind: K }>, 'name'> & { name?: string };
}[ExecutorConfig['kind']];

/** `--stdio`'s value: words split at whitespace (no quoting). */
function stdioCommand(text: string): string[] {
  const words = text.split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) throw new UsageError('--stdio needs a command');
  return words;
}

/** A default name: the URL's host[:port], the ssh host, the stdio command's program. */
function defaultName(config: Draft): string {
  switch (config.kind) {
    case 'bundled':
      return BUNDLED_EXECUTOR;
    case 'websocket':
      try {
        return new URL(config.url).host || config.url;
      } catch {
        return config.url;
      }
    case 'ssh':
      return config.ssh;
    case 'stdio':
      return config.command[0]!.split('/').pop()!;
  }
}

/** An executor while its options are read, with the options that belong to it. */
interface Entry {
  config: Draft;
  tokenFile?: string;
  sshOptions: string[];
}

/** The command line read so far: the executors in order, the options of the whole server. */
interface McpParse {
  readonly localCwd: string;
  readonly entries: Entry[];
  readonly out: Omit<McpArgs, 'executors'>;
  readonly networkAllow: string[];
}

/** The executor an option of one belongs to: the one before it. */
function last(p: McpParse, flag: string): Entry {
  const e = p.entries.at(-1);
  if (!e) throw new UsageError(`${flag} belongs to an executor: put it after --bundled, --url, --ssh or --stdio`);
  return e;
}

function atLeast(flag: string, v: string, min: number): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`${flag} must be an integer of at least ${min}, got ${v}`);
  return n;
}

/** `--ssh`'s value, checked as ssh will read it. */
function sshTarget(target: string): string {
  try {
    parseSshTarget(target);
  } catch (e) {
    throw new UsageError(errorMessage(e));
  }
  return target;
}

/** The options that start an executor: the ones after it, up to the next, belong to it. */
const EXECUTOR_OPTIONS: OptionTable<McpParse> = {
  '--bundled': (p) => {
    if (p.entries.some((e) => e.config.kind === 'bundled')) throw new UsageError('--bundled is given twice');
    p.entries.push({ config: { kind: 'bundled' }, sshOptions: [] });
  },
  '--url': (p, value) => {
    const url = value();
    if (!/^wss?:\/\/\S+$/.test(url)) throw new UsageError(`--url must start with ws:// or wss://, got ${url}`);
    p.entries.push({ config: { kind: 'websocket', url, tokenSecret: '' }, sshOptions: [] });
  },
  '--ssh': (p, value) => p.entries.push({ config: { kind: 'ssh', ssh: sshTarget(value()), sshOptions: [] }, sshOptions: [] }),
  '--stdio': (p, value) => p.entries.push({ config: { kind: 'stdio', command: stdioCommand(value()) }, sshOptions: [] }),
};

/** The options of the executor before them. */
const PER_EXECUTOR_OPTIONS: OptionTable<McpParse> = {
  '--name': (p, value, flag) => {
    const e = last(p, flag);
    if (e.config.kind === 'bundled') throw new UsageError(`the bundled executor is always named ${BUNDLED_EXECUTOR}`);
    const name = value().trim();
    if (!/^[\w.@:-]{1,64}$/.test(name)) throw new UsageError(`--name may use letters, digits and . _ - @ : (at most 64), got ${name}`);
    e.config.name = name;
  },
  '--cwd': (p, value, flag) => {
    const e = last(p, flag);
    const dir = value();
    // The bundled executor is this machine: a relative path is ours. Elsewhere only the executor knows.
    if (e.config.kind === 'bundled') e.config.cwd = resolve(p.localCwd, dir);
    else if (dir.startsWith('/')) e.config.cwd = dir;
    else throw new UsageError(`--cwd of a remote executor must be an absolute path on it, got ${dir}`);
  },
  '--token-file': (p, value, flag) => {
    const e = last(p, flag);
    if (e.config.kind !== 'websocket') throw new UsageError('--token-file belongs to --url');
    e.tokenFile = value();
  },
  '--ssh-option': (p, value, flag) => {
    const e = last(p, flag);
    if (e.config.kind !== 'ssh') throw new UsageError('--ssh-option belongs to --ssh');
    e.sshOptions.push(value());
  },
};

/** The options of the whole server: its sandbox, its limits. */
const SERVER_OPTIONS: OptionTable<McpParse> = {
  '--sandbox': (p, value) => (p.out.sandbox.policy = sandboxPolicyValue(value())),
  '--sandbox-network': (p) => (p.out.sandbox.network = true),
  '--sandbox-network-allow': (p, value) => p.networkAllow.push(...listValue(value())),
  '--allow-unsandboxed': (p) => (p.out.allowUnsandboxed = true),
  '--session-ttl-ms': (p, value, flag) => (p.out.sessionTtlMs = atLeast(flag, value(), 1)),
  '--max-output-bytes': (p, value, flag) => {
    const n = atLeast(flag, value(), MIN_OUTPUT_BYTES);
    if (n > MAX_OUTPUT_BYTES) throw new UsageError(`--max-output-bytes may be at most ${MAX_OUTPUT_BYTES} (1 MiB), got ${n}`);
    p.out.maxOutputBytes = n;
  },
  '--verbose': (p) => (p.out.verbose = true),
  '-h': help,
  '--help': help,
};

const MCP_OPTIONS: OptionTable<McpParse> = { ...EXECUTOR_OPTIONS, ...PER_EXECUTOR_OPTIONS, ...SERVER_OPTIONS };

export function parseMcpArgs(args: string[], localCwd = process.cwd()): McpArgs {
  const p: McpParse = {
    localCwd,
    entries: [],
    out: {
      sandbox: { ...DEFAULT_SANDBOX },
      allowUnsandboxed: false,
      sessionTtlMs: DEFAULT_MCP_SESSION_TTL_MS,
      maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
      verbose: false,
    },
    networkAllow: [],
  };
  applyOptions(args, MCP_OPTIONS, p, false);
  if (p.networkAllow.length > 0) {
    if (p.out.sandbox.network) throw new UsageError('use either --sandbox-network (everything) or --sandbox-network-allow (a list)');
    p.out.sandbox.networkAllow = [...new Set(p.networkAllow)];
  }
  if (p.entries.length === 0) p.entries.push({ config: { kind: 'bundled' }, sshOptions: [] });
  return { ...p.out, executors: finishExecutors(p.entries, localCwd) };
}

/** Names every executor (a default unless --name, made unique) and fills in what its options left open. */
function finishExecutors(entries: readonly Entry[], localCwd: string): McpExecutor[] {
  const executors: McpExecutor[] = [];
  const names = new Set<string>();
  for (const e of entries) {
    let name = e.config.name;
    if (name !== undefined && names.has(name)) throw new UsageError(`two executors are named ${name}: give one another --name`);
    if (name === undefined) {
      const base = defaultName(e.config);
      name = base;
      for (let n = 2; names.has(name); n++) name = `${base}-${n}`;
    }
    names.add(name);
    if (e.config.kind === 'bundled' && e.config.cwd === undefined) e.config.cwd = localCwd;
    if (e.config.kind === 'ssh') e.config.sshOptions = e.sshOptions;
    if (e.config.kind === 'websocket') e.config.tokenSecret = name;
    executors.push({ config: { ...e.config, name } as ExecutorConfig, ...(e.tokenFile !== undefined ? { tokenFile: e.tokenFile } : {}) });
  }
  return executors;
}
