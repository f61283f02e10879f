import { posix } from 'node:path';
import { SandboxPolicyName } from '../protocol';
import { shellLine } from '../util';
import { localToExecutor, type PathMapping } from './pathMapping';

/** The task type in tasks.json (`contributes.taskDefinitions`). */
export const EXEC_TASK_TYPE = 'execBridge';

/** A tasks.json entry of type `execBridge`, checked. */
export interface ExecTaskDefinition {
  type: typeof EXEC_TASK_TYPE;
  /** A command line for the executor's shell (`sh -c`). With `args`, they are appended, quoted. */
  command?: string;
  /** Without `command`: the argv itself (no shell). */
  args?: string[];
  /** Executor name; default: the active one. */
  executor?: string;
  /** Working directory on the executor; default: the mapped workspace folder, else the executor's default. */
  cwd?: string;
  /** Overlaid on the executor's environment. */
  env?: Record<string, string>;
  /** A sandbox policy, or `none`; default: the `execBridge.sandbox` setting. */
  sandbox?: SandboxPolicyName | 'none';
  /** Where the local workspace folder is on the executor (remote executors; the bundled one is the same path). */
  executorRoot?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const isStringRecord = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/** Checks a task definition as VS Code hands it over; the error says what to fix in tasks.json. */
export function parseTaskDefinition(raw: unknown): Parsed<ExecTaskDefinition> {
  if (typeof raw !== 'object' || raw === null) return { ok: false, error: 'the task definition is not an object' };
  const d = raw as Record<string, unknown>;
  if (d['type'] !== EXEC_TASK_TYPE) return { ok: false, error: `the task type is not "${EXEC_TASK_TYPE}"` };
  const { command, args, executor, cwd, env, sandbox, executorRoot } = d;
  if (command !== undefined && (typeof command !== 'string' || !command.trim()))
    return { ok: false, error: '"command" must be a non-empty string' };
  if (args !== undefined && !(Array.isArray(args) && args.every((a) => typeof a === 'string')))
    return { ok: false, error: '"args" must be an array of strings' };
  if (command === undefined && (args === undefined || args.length === 0))
    return { ok: false, error: 'give "command" (a command line) or "args" (an argv)' };
  for (const [name, v] of [
    ['executor', executor],
    ['cwd', cwd],
    ['executorRoot', executorRoot],
  ] as const) {
    if (v !== undefined && (typeof v !== 'string' || !v)) return { ok: false, error: `"${name}" must be a non-empty string` };
  }
  if (typeof cwd === 'string' && !cwd.startsWith('/') && !cwd.startsWith('${'))
    return { ok: false, error: '"cwd" must be an absolute path on the executor' };
  if (typeof executorRoot === 'string' && !executorRoot.startsWith('/'))
    return { ok: false, error: '"executorRoot" must be an absolute path on the executor' };
  if (env !== undefined && !isStringRecord(env)) return { ok: false, error: '"env" must map names to strings' };
  if (sandbox !== undefined && sandbox !== 'none' && !SandboxPolicyName.safeParse(sandbox).success) {
    return { ok: false, error: `"sandbox" must be one of ${[...SandboxPolicyName.options, 'none'].join(', ')}` };
  }
  return {
    ok: true,
    value: {
      type: EXEC_TASK_TYPE,
      ...(command !== undefined ? { command: command as string } : {}),
      ...(args !== undefined ? { args: [...(args as string[])] } : {}),
      ...(executor !== undefined ? { executor: executor as string } : {}),
      ...(cwd !== undefined ? { cwd: cwd as string } : {}),
      ...(env !== undefined ? { env: { ...(env as Record<string, string>) } } : {}),
      ...(sandbox !== undefined ? { sandbox: sandbox as SandboxPolicyName | 'none' } : {}),
      ...(executorRoot !== undefined ? { executorRoot: executorRoot as string } : {}),
    },
  };
}

/** What `${…}` variables stand for; VS Code resolves most before we see the definition, we do the rest. */
export interface VariableContext {
  /** The task's workspace folder (local path), when it has one. */
  workspaceFolder?: string;
  /** The active editor's file (local path). */
  file?: string;
  userHome?: string;
  /** The extension host's environment, for `${env:NAME}`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the workspace folder is on the executor (`${executorRoot}`). */
  executorRoot?: string;
}

/** Replaces `${name}` variables; an unknown or unavailable one is an error (never passed to the executor as text). */
export function resolveVariables(value: string, ctx: VariableContext): Parsed<string> {
  let error: string | undefined;
  const out = value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    const v = variable(name, ctx);
    if (v === undefined) error ??= `cannot resolve ${whole} here`;
    return v ?? whole;
  });
  return error ? { ok: false, error } : { ok: true, value: out };
}

function variable(name: string, ctx: VariableContext): string | undefined {
  if (name.startsWith('env:')) return ctx.env[name.slice(4)] ?? '';
  const folder = ctx.workspaceFolder;
  const file = ctx.file;
  switch (name) {
    case 'workspaceFolder':
    case 'workspaceRoot':
      return folder;
    case 'workspaceFolderBasename':
      return folder === undefined ? undefined : posix.basename(folder);
    case 'executorRoot':
      return ctx.executorRoot;
    case 'userHome':
      return ctx.userHome;
    case 'pathSeparator':
    case '/':
      return '/';
    case 'file':
      return file;
    case 'fileBasename':
      return file === undefined ? undefined : posix.basename(file);
    case 'fileBasenameNoExtension':
      return file === undefined ? undefined : posix.basename(file, posix.extname(file));
    case 'fileExtname':
      return file === undefined ? undefined : posix.extname(file);
    case 'fileDirname':
      return file === undefined ? undefined : posix.dirname(file);
    case 'relativeFile':
      return file === undefined || folder === undefined ? undefined : posix.relative(folder, file);
    default:
      return undefined;
  }
}

/** Everything needed to start the task on the executor. */
export interface ResolvedTask {
  executor: string | undefined;
  argv: string[];
  /** Shown in the terminal and the approval popup. */
  commandLine: string;
  cwd: string;
  env: Record<string, string>;
  /** Undefined: the settings decide. */
  sandbox: SandboxPolicyName | 'none' | undefined;
  mapping: PathMapping | undefined;
}

export interface ResolveContext extends VariableContext {
  /** The executor's shell, for `command`. */
  shell: string;
  /** The executor's default working directory. */
  defaultCwd: string;
  /** Whether the executor is this machine (the bundled one): local paths are executor paths. */
  local: boolean;
  /** The executor's configured folder, the default `executorRoot` of a remote executor. */
  executorCwd?: string;
}

/** Local paths inside the mapped folder, written in a string, become the executor's. */
function mapInText(text: string, m: PathMapping | undefined): string {
  if (!m) return text;
  const local = m.local.replace(/\/+$/, '');
  if (!local || local === m.executor.replace(/\/+$/, '')) return text;
  const escaped = local.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`${escaped}(?=/|$|[^\\w.-])`, 'g'), (hit, offset: number) => {
    const mapped = localToExecutor(text.slice(offset, offset + hit.length), m);
    return mapped ?? hit;
  });
}

/**
 * Resolves variables in every field, maps local workspace paths to the executor's, and builds
 * the argv: `command` runs with the executor's shell, `args` alone is the argv.
 */
export function resolveTask(def: ExecTaskDefinition, ctx: ResolveContext): Parsed<ResolvedTask> {
  const root = def.executorRoot ?? (ctx.local ? ctx.workspaceFolder : ctx.executorCwd);
  const mapping = ctx.workspaceFolder !== undefined && root !== undefined ? { local: ctx.workspaceFolder, executor: root } : undefined;
  const vars: VariableContext = { ...ctx, ...(root !== undefined ? { executorRoot: root } : {}) };
  const errors: string[] = [];
  const r = (v: string): string => {
    const x = resolveVariables(v, vars);
    if (!x.ok) {
      errors.push(x.error);
      return v;
    }
    return mapInText(x.value, mapping);
  };
  const command = def.command !== undefined ? r(def.command) : undefined;
  const args = (def.args ?? []).map(r);
  const cwdRaw = def.cwd !== undefined ? r(def.cwd) : (mapping?.executor ?? ctx.defaultCwd);
  const env = Object.fromEntries(Object.entries(def.env ?? {}).map(([k, v]) => [k, r(v)]));
  if (errors.length > 0) return { ok: false, error: errors[0]! };
  if (!cwdRaw.startsWith('/')) return { ok: false, error: `"cwd" resolved to ${cwdRaw}, not an absolute path` };
  const commandLine = command !== undefined ? [command, ...(args.length > 0 ? [shellLine(args)] : [])].join(' ') : shellLine(args);
  const argv = command !== undefined ? [ctx.shell, '-c', commandLine] : args;
  return {
    ok: true,
    value: { executor: def.executor, argv, commandLine, cwd: posix.normalize(cwdRaw), env, sandbox: def.sandbox, mapping },
  };
}
