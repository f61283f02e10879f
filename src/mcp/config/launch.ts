import { errorMessage } from '../../util';
import { resolveOAuthSettings, type McpOAuthSettings } from './auth';
import { parseEnvFile } from './envFile';
import type { McpSandboxSettings } from './sandbox';
import { keyIn, McpConfigError, VARIABLE, type McpInputDefinition, type McpServerDefinition } from './types';

export interface VariableContext {
  /** `${workspaceFolder}`; defaults to the source's workspace folder. */
  workspaceFolder?: string;
  /** `${userHome}`: the executor's home directory (the server runs there). */
  userHome: string;
  /** `${pathSeparator}` (the executor's); default `/`. */
  pathSeparator?: string;
  /** `${env:NAME}`: the extension host's environment, as VS Code does. */
  env: Record<string, string | undefined>;
  /** Value of `${input:ID}`; undefined = the user cancelled. Called once per input per resolve. */
  resolveInput(input: McpInputDefinition): Promise<string | undefined>;
  /** Reads an `envFile` (on the executor, where the workspace lives). */
  readFile(path: string): Promise<string>;
}

/** What to start: argv, cwd and the environment overlay (on top of the executor's own env). */
export interface McpLaunch {
  argv: string[];
  cwd: string | undefined;
  env: Record<string, string>;
  /** Variables to remove from the inherited environment (`null` in `env`). */
  unsetEnv: string[];
  /** Run inside the executor's sandbox (`writable` resolved to absolute paths). */
  sandbox?: McpSandboxSettings;
}

export async function resolveLaunch(
  def: McpServerDefinition,
  inputs: readonly McpInputDefinition[],
  ctx: VariableContext,
): Promise<McpLaunch> {
  const fail = launchFailure(def);
  const workspaceFolder = ctx.workspaceFolder ?? def.source.workspaceFolder;
  const sub = variableSubstituter(inputs, ctx, workspaceFolder, fail);

  const argv = [await sub(def.command, 'command')];
  for (const [i, a] of def.args.entries()) argv.push(await sub(a, `args[${i}]`));
  const cwd = def.cwd !== undefined ? await sub(def.cwd, 'cwd') : workspaceFolder;
  if (cwd !== undefined && !isAbsolutePath(cwd))
    fail('cwd', `"cwd" must be an absolute path after variables are substituted, got "${cwd}"`);

  const env: Record<string, string> = {};
  const unsetEnv: string[] = [];
  if (def.envFile !== undefined) {
    const path = await sub(def.envFile, 'envFile');
    let text: string;
    try {
      text = await ctx.readFile(path);
    } catch (e) {
      return fail('envFile', `cannot read the envFile "${path}": ${errorMessage(e)}`);
    }
    const parsed = parseEnvFile(text);
    if (parsed.errors.length > 0) fail('envFile', `${path}: ${parsed.errors.join('; ')}`);
    Object.assign(env, parsed.values);
  }
  // `env` wins over `envFile`, as in VS Code.
  for (const [k, v] of Object.entries(def.env)) {
    if (v === null) {
      delete env[k];
      unsetEnv.push(k);
    } else env[k] = await sub(v, `env.${k}`);
  }
  const sb = def.sandbox?.settings;
  if (sb === undefined || sb === 'none') return { argv, cwd, env, unsetEnv };
  const writable: string[] = [];
  for (const [i, w] of sb.writable.entries()) {
    const key = `executorSandbox.writable[${i}]`;
    const path = await sub(w, key);
    if (!isAbsolutePath(path)) fail(key, `a writable path must be absolute after variables are substituted, got "${path}"`);
    writable.push(path);
  }
  return { argv, cwd, env, unsetEnv, sandbox: { ...sb, writable } };
}

/** A remote server's `url` and `headers` with their variables filled in. */
export async function resolveRemote(
  def: McpServerDefinition,
  inputs: readonly McpInputDefinition[],
  ctx: VariableContext,
): Promise<{ url: string; headers: Record<string, string>; oauth?: McpOAuthSettings }> {
  const fail = launchFailure(def);
  if (!def.remote) return fail('url', 'not a remote server');
  const sub = variableSubstituter(inputs, ctx, ctx.workspaceFolder ?? def.source.workspaceFolder, fail);
  const url = await sub(def.remote.url, 'url');
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    fail('url', `"url" must be an http:// or https:// URL after variables are substituted, got "${url}"`);
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(def.remote.headers)) headers[k] = await sub(v, `headers.${k}`);
  if (!def.remote.oauth) return { url, headers };
  return { url, headers, oauth: await resolveOAuthSettings(def.remote.oauth, sub) };
}

type Fail = (key: string, message: string) => never;

/** Throws the `McpConfigError` for one key of `def`. */
function launchFailure(def: McpServerDefinition): Fail {
  return (key, message) => {
    throw new McpConfigError({
      severity: 'error',
      file: def.source.file,
      server: def.name,
      key: keyIn(def.source, def.name, key),
      message,
    });
  };
}

/** `${…}` → values; each input is asked for once per launch. */
function variableSubstituter(
  inputs: readonly McpInputDefinition[],
  ctx: VariableContext,
  workspaceFolder: string | undefined,
  fail: Fail,
): (value: string, key: string) => Promise<string> {
  const inputValues = new Map<string, string>();
  return async (value, key) => {
    let out = '';
    let last = 0;
    for (const m of value.matchAll(VARIABLE)) {
      const [whole, name, arg = ''] = m;
      out += value.slice(last, m.index);
      last = m.index + whole.length;
      switch (name) {
        case 'workspaceFolder':
        case 'workspaceFolderBasename':
          if (workspaceFolder === undefined) fail(key, `${whole} is used but no workspace folder is open`);
          out += name === 'workspaceFolder' ? workspaceFolder : basename(workspaceFolder as string);
          break;
        case 'userHome':
          out += ctx.userHome;
          break;
        case 'pathSeparator':
          out += ctx.pathSeparator ?? '/';
          break;
        case 'env':
          out += ctx.env[arg] ?? '';
          break;
        case 'input': {
          let v = inputValues.get(arg);
          if (v === undefined) {
            const input = inputs.find((x) => x.id === arg);
            if (!input) fail(key, `\${input:${arg}} refers to an input that no "inputs" entry declares`);
            v = await ctx.resolveInput(input as McpInputDefinition);
            if (v === undefined) fail(key, `no value was given for input "${arg}", so the server cannot start`);
            inputValues.set(arg, v as string);
          }
          out += v;
          break;
        }
        default:
          fail(key, `unknown variable ${whole}`);
      }
    }
    return out + value.slice(last);
  };
}

function basename(p: string): string {
  const parts = p.split(/[\\/]+/).filter(Boolean);
  return parts[parts.length - 1] ?? p;
}

function isAbsolutePath(p: string): boolean {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith('\\\\');
}
