import { z } from 'zod';

/**
 * The executors a user can pick, from the `execBridge.executors` setting plus the built-in
 * `bundled` one. Tokens never live here: a WebSocket executor names a SecretStorage entry
 * (`tokenSecret`, default: its name) that the "Set Executor Token…" command fills.
 */
export const BUNDLED_EXECUTOR = 'bundled';

export type ExecutorConfig =
  | { kind: 'bundled'; name: typeof BUNDLED_EXECUTOR; cwd?: string }
  | { kind: 'websocket'; name: string; url: string; tokenSecret: string; cwd?: string }
  | { kind: 'stdio'; name: string; command: string[]; cwd?: string }
  /** `ssh`: `[user@]host[:port]` (or a ~/.ssh/config Host); `sshOptions` go to ssh as `-o OPT`. */
  | { kind: 'ssh'; name: string; ssh: string; sshOptions: string[]; cwd?: string };

const Name = z
  .string()
  .trim()
  .min(1, 'name must not be empty')
  .max(64, 'name must be at most 64 characters')
  .regex(/^[\w.@ -]+$/, 'name may use letters, digits, space, and . _ - @');
const Cwd = z.string().startsWith('/', 'cwd must be an absolute path on the executor').optional();

const WebSocketEntry = z
  .object({
    name: Name,
    url: z.string().regex(/^wss?:\/\/[^\s]+$/, 'url must start with ws:// or wss://'),
    tokenSecret: z.string().trim().min(1).max(128).optional(),
    cwd: Cwd,
  })
  .strict();
const StdioEntry = z
  .object({
    name: Name,
    command: z.array(z.string()).min(1, 'command must not be empty'),
    cwd: Cwd,
  })
  .strict();

const SshEntry = z
  .object({
    name: Name,
    ssh: z
      .string()
      .trim()
      .regex(/^(?:[^@\s:/]+@)?(?:\[[0-9A-Fa-f:.]+\]|[^-@\s:/[\]][^@\s:/[\]]*)(?::\d{1,5})?$/, 'ssh must be [user@]host[:port]'),
    sshOptions: z
      .array(z.string().regex(/^[A-Za-z]+[ =]\S.*$/, 'each sshOptions entry is an ssh -o option such as "ProxyJump=bastion"'))
      .optional(),
    cwd: Cwd,
  })
  .strict();

export interface ExecutorConfigProblem {
  index: number;
  message: string;
}

export interface ParsedExecutors {
  /** `bundled` first, then the valid configured ones in setting order. */
  executors: ExecutorConfig[];
  /** One line per entry that was ignored, for the log and a warning. */
  problems: ExecutorConfigProblem[];
}

/**
 * Reads the raw setting value. Invalid entries are skipped (and reported) rather than failing the
 * whole list, so one typo does not take every executor away.
 */
export function parseExecutors(raw: unknown, bundledCwd?: string): ParsedExecutors {
  const executors: ExecutorConfig[] = [{ kind: 'bundled', name: BUNDLED_EXECUTOR, ...(bundledCwd ? { cwd: bundledCwd } : {}) }];
  const problems: ExecutorConfigProblem[] = [];
  const list = raw === undefined || raw === null ? [] : raw;
  if (!Array.isArray(list)) {
    return { executors, problems: [{ index: -1, message: 'execBridge.executors must be a list' }] };
  }
  const seen = new Set<string>([BUNDLED_EXECUTOR]);
  list.forEach((entry: unknown, index) => {
    const isObject = typeof entry === 'object' && entry !== null;
    const hasUrl = isObject && 'url' in entry;
    const hasCommand = isObject && 'command' in entry;
    const hasSsh = isObject && 'ssh' in entry;
    if (!isObject || [hasUrl, hasCommand, hasSsh].filter(Boolean).length !== 1) {
      problems.push({ index, message: `entry ${index + 1}: needs exactly one of "url", "command" or "ssh"` });
      return;
    }
    const parsed = hasUrl ? WebSocketEntry.safeParse(entry) : hasSsh ? SshEntry.safeParse(entry) : StdioEntry.safeParse(entry);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      const where = first && first.path.length > 0 ? `${first.path.join('.')}: ` : '';
      problems.push({ index, message: `entry ${index + 1}: ${where}${first?.message ?? 'invalid'}` });
      return;
    }
    const value = parsed.data;
    if (seen.has(value.name)) {
      problems.push({ index, message: `entry ${index + 1}: the name "${value.name}" is already used` });
      return;
    }
    seen.add(value.name);
    if ('ssh' in value) {
      executors.push({
        kind: 'ssh',
        name: value.name,
        ssh: value.ssh,
        sshOptions: value.sshOptions ?? [],
        ...(value.cwd ? { cwd: value.cwd } : {}),
      });
    } else if ('url' in value) {
      executors.push({
        kind: 'websocket',
        name: value.name,
        url: value.url,
        tokenSecret: value.tokenSecret ?? value.name,
        ...(value.cwd ? { cwd: value.cwd } : {}),
      });
    } else {
      executors.push({ kind: 'stdio', name: value.name, command: value.command, ...(value.cwd ? { cwd: value.cwd } : {}) });
    }
  });
  return { executors, problems };
}

/** A one-line description for pickers and tooltips (never a token). */
export function describeExecutor(config: ExecutorConfig): string {
  switch (config.kind) {
    case 'bundled':
      return 'exec-server on this machine (started by the extension)';
    case 'websocket':
      return redactUrl(config.url);
    case 'stdio':
      return config.command.join(' ');
    case 'ssh':
      return `ssh ${config.ssh}${config.sshOptions.length ? ` (${config.sshOptions.join(', ')})` : ''}`;
  }
}

/** Drops any `user:password@` part of a URL before it is shown or logged. */
export function redactUrl(url: string): string {
  return url.replace(/^(wss?:\/\/)[^@/]*@/, '$1');
}

/** What is wrong with the `defaultExecutor` setting, or undefined when it names a known executor (or is unset). */
export function defaultExecutorProblem(configured: string | undefined, known: readonly string[]): string | undefined {
  if (!configured || known.includes(configured)) return undefined;
  return `execBridge.defaultExecutor is "${configured}", which is not an executor (known: ${known.join(', ')}); using ${BUNDLED_EXECUTOR}`;
}

/** The default of execBridge.sessionTtlSeconds: a night away (10 h). */
export const DEFAULT_SESSION_TTL_SECONDS = 36_000;

/** execBridge.sessionTtlSeconds → ms: a positive number of seconds, else the default. */
export function sessionTtlMsFromSetting(seconds: unknown): number {
  const s = typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_SESSION_TTL_SECONDS;
  return Math.round(s * 1000);
}

/** The default of execBridge.outputSpoolMiB: the executor's own per-process cap. */
export const DEFAULT_OUTPUT_SPOOL_MIB = 64;

/**
 * execBridge.outputSpoolMiB → the client's `outputSpool` ask: how much output per process an
 * executor keeps for a reopened terminal (memory window included). The default asks for the
 * executor's own cap with a plain `true`, which every version of our server understands (an older
 * daemon kept after an update included); another size asks for that many bytes; 0 asks for no
 * spool (the newest 1 MiB only). Not a number: the default.
 */
export function outputSpoolFromSetting(mib: unknown): true | false | { processBytes: number } {
  if (typeof mib !== 'number' || !Number.isFinite(mib) || mib < 0 || mib === DEFAULT_OUTPUT_SPOOL_MIB) return true;
  if (mib === 0) return false;
  return { processBytes: Math.round(mib * 1024 * 1024) };
}
