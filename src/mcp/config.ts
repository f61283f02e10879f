/**
 * MCP server configuration (pure: no `vscode`, no file system — text and values come in, servers and
 * diagnostics come out).
 *
 * Sources, in order: each workspace folder's `.vscode/mcp.json` (VS Code's format, JSON with
 * comments), then the setting `execBridge.mcp.servers`. A settings entry with a `command` defines
 * (or replaces) a server; one without a `command` adjusts the server of the same name from
 * `mcp.json` (typically our own keys: `executor`, `autoStart`, …), so users never copy a definition
 * to change one key.
 *
 * Every problem becomes a diagnostic naming the file, the server and the key; a bad server is kept
 * as an entry with errors (the tree shows it) and never hides the others.
 */
import { createHash } from 'node:crypto';
import { findNodeAtLocation, parseTree, printParseErrorCode, type Node as JsonNode, type ParseError } from 'jsonc-parser';

export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
/** Bounds for `startupTimeoutMs`; below 100 ms not even `node` starts. */
export const MIN_STARTUP_TIMEOUT_MS = 100;
export const MAX_STARTUP_TIMEOUT_MS = 600_000;

export type RestartPolicy = 'never' | 'onCrash';

export interface McpConfigSource {
  kind: 'mcpJson' | 'settings';
  /** Absolute path of the `mcp.json`, or a label for settings (`settings: execBridge.mcp.servers`). */
  file: string;
  /** The workspace folder an `mcp.json` belongs to (its `${workspaceFolder}`). */
  workspaceFolder?: string;
}

export interface McpDiagnostic {
  severity: 'error' | 'warning';
  file: string;
  /** Server name, when the problem belongs to one server. */
  server?: string;
  /** JSON path inside the file, dotted (`servers.memory.args[1]`). */
  key?: string;
  message: string;
  /** Where in the file text, when the file was parsed from text (0-based line/character). */
  range?: { offset: number; length: number; line: number; character: number };
}

export interface McpInputDefinition {
  id: string;
  type: 'promptString' | 'pickString';
  description: string;
  /** promptString: hide what is typed. Values are kept in secret storage either way. */
  password: boolean;
  default?: string;
  /** pickString only. */
  options?: string[];
  source: McpConfigSource;
}

/** A valid server: everything needed to launch it, with `${…}` variables still unresolved. */
export interface McpServerDefinition {
  name: string;
  source: McpConfigSource;
  /** Set when settings adjusted an `mcp.json` server. */
  adjustedBy?: McpConfigSource;
  command: string;
  args: string[];
  /** `null` removes a variable from the environment the server inherits. */
  env: Record<string, string | null>;
  envFile?: string;
  cwd?: string;
  /** Executor id; undefined = the active executor. */
  executor?: string;
  startupTimeoutMs: number;
  autoStart: boolean;
  restart: RestartPolicy;
  /** Allow-list of tool names; undefined = all. */
  enabledTools?: string[];
  /** Deny-list, applied after `enabledTools`. */
  disabledTools: string[];
  /** Stable hash of everything that affects the running process: a change means "restart to apply". */
  fingerprint: string;
}

/** One server as the tree shows it: valid (`definition`) or not (`errors`). */
export interface McpServerEntry {
  name: string;
  source: McpConfigSource;
  definition?: McpServerDefinition;
  /** Errors that make the server unusable (warnings are only in `McpConfig.diagnostics`). */
  errors: McpDiagnostic[];
}

/** What one source contributed, before merging. */
export interface McpConfigLayer {
  source: McpConfigSource;
  servers: LayerServer[];
  inputs: McpInputDefinition[];
  diagnostics: McpDiagnostic[];
}

interface LayerServer {
  name: string;
  /** The validated keys this layer sets (a failed key is absent and has an error diagnostic). */
  fields: Partial<ServerFields>;
  /** Keys present in the raw object (valid or not). */
  present: Set<string>;
  errors: McpDiagnostic[];
}

interface ServerFields {
  command: string;
  args: string[];
  env: Record<string, string | null>;
  envFile: string;
  cwd: string;
  executor: string;
  startupTimeoutMs: number;
  autoStart: boolean;
  restart: RestartPolicy;
  enabledTools: string[];
  disabledTools: string[];
}

export interface McpConfig {
  /** Every server, valid or not, in source order. */
  entries: McpServerEntry[];
  inputs: McpInputDefinition[];
  /** Errors and warnings of all sources (including the servers' errors). */
  diagnostics: McpDiagnostic[];
}

/** Keys of VS Code's format that we accept but do not use (no warning for them). */
const IGNORED_VSCODE_KEYS = new Set(['dev', 'gallery', 'version']);
const OUR_KEYS = new Set(['executor', 'startupTimeoutMs', 'autoStart', 'restart', 'enabledTools', 'disabledTools']);
const STDIO_KEYS = new Set(['type', 'command', 'args', 'env', 'envFile', 'cwd']);

/** `${name}` or `${name:arg}`; names are letters only. */
const VARIABLE = /\$\{([A-Za-z]+)(?::([^}]*))?\}/g;
const KNOWN_VARIABLES = new Set(['workspaceFolder', 'workspaceFolderBasename', 'userHome', 'pathSeparator', 'env', 'input']);

/** `file: server "x", key "y": message` — one readable line for logs, notifications and hovers. */
export function formatDiagnostic(d: McpDiagnostic): string {
  const where = d.range ? `${d.file}:${d.range.line + 1}:${d.range.character + 1}` : d.file;
  const parts = [where];
  if (d.server !== undefined) parts.push(`server "${d.server}"`);
  if (d.key !== undefined) parts.push(`key "${d.key}"`);
  return `${parts.join(', ')}: ${d.message}`;
}

/** Thrown by `resolveLaunch`; carries the diagnostic so the UI can point at the key. */
export class McpConfigError extends Error {
  constructor(readonly diagnostic: McpDiagnostic) {
    super(formatDiagnostic(diagnostic));
    this.name = 'McpConfigError';
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing one source

/** Parses one `.vscode/mcp.json` (JSON with comments and trailing commas, as VS Code accepts). */
export function parseMcpJson(text: string, source: McpConfigSource): McpConfigLayer {
  const layer: McpConfigLayer = { source, servers: [], inputs: [], diagnostics: [] };
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const at = (path: (string | number)[]): McpDiagnostic['range'] => {
    const node = root ? findNodeAtLocation(root, path) : undefined;
    // Point at the property name when there is one, so the squiggle is on the key.
    const target = node?.parent?.type === 'property' ? node.parent.children?.[0] ?? node : node;
    return target ? rangeOf(text, target.offset, target.length) : undefined;
  };
  for (const e of errors) {
    layer.diagnostics.push({
      severity: 'error',
      file: source.file,
      message: `invalid JSON: ${describeParseError(printParseErrorCode(e.error))}`,
      range: rangeOf(text, e.offset, e.length),
    });
  }
  if (!root) {
    if (errors.length === 0) layer.diagnostics.push({ severity: 'error', file: source.file, message: 'the file is empty; expected an object with "servers"' });
    return layer;
  }
  const value = nodeValue(root);
  readLayer(value, layer, at, 'servers');
  return layer;
}

/**
 * Parses the value of the setting `execBridge.mcp.servers` (an object of servers, same keys as
 * `mcp.json`'s `servers`). Settings carry no text positions, so diagnostics have no range.
 */
export function parseSettingsServers(value: unknown, source: McpConfigSource): McpConfigLayer {
  const layer: McpConfigLayer = { source, servers: [], inputs: [], diagnostics: [] };
  if (value === undefined || value === null) return layer;
  readLayer({ servers: value }, layer, () => undefined, 'servers', true);
  return layer;
}

function readLayer(
  value: unknown,
  layer: McpConfigLayer,
  at: (path: (string | number)[]) => McpDiagnostic['range'],
  serversKey: string,
  settings = false,
): void {
  const file = layer.source.file;
  const push = (d: Omit<McpDiagnostic, 'file'>) => layer.diagnostics.push({ file, ...d });
  if (!isObject(value)) {
    push({ severity: 'error', message: 'expected a JSON object with "servers"', range: at([]) });
    return;
  }
  if (!settings) {
    for (const key of Object.keys(value)) {
      if (key !== 'servers' && key !== 'inputs') push({ severity: 'warning', key, message: `unknown top-level key "${key}" is ignored`, range: at([key]) });
    }
    readInputs(value['inputs'], layer, at);
  }
  const servers = value[serversKey];
  if (servers === undefined) {
    if (!settings) push({ severity: 'warning', key: serversKey, message: 'no "servers" object: this file defines no MCP servers', range: at([]) });
    return;
  }
  if (!isObject(servers)) {
    push({ severity: 'error', key: settings ? undefined : serversKey, message: `expected an object mapping server names to definitions, got ${typeName(servers)}`, range: at([serversKey]) });
    return;
  }
  for (const [name, raw] of Object.entries(servers)) {
    layer.servers.push(readServer(name, raw, layer, (path) => at([serversKey, name, ...path]), settings ? '' : `${serversKey}.${name}.`));
  }
}

function readInputs(raw: unknown, layer: McpConfigLayer, at: (path: (string | number)[]) => McpDiagnostic['range']): void {
  if (raw === undefined) return;
  const file = layer.source.file;
  if (!Array.isArray(raw)) {
    layer.diagnostics.push({ severity: 'error', file, key: 'inputs', message: `expected an array of inputs, got ${typeName(raw)}`, range: at(['inputs']) });
    return;
  }
  raw.forEach((item: unknown, i) => {
    const key = `inputs[${i}]`;
    const bad = (message: string, sub?: string) =>
      layer.diagnostics.push({ severity: 'error', file, key: sub ? `${key}.${sub}` : key, message, range: at(sub ? ['inputs', i, sub] : ['inputs', i]) });
    if (!isObject(item)) return bad(`expected an object, got ${typeName(item)}`);
    const { id, type, description, password } = item;
    if (typeof id !== 'string' || id === '') return bad('"id" must be a non-empty string', 'id');
    if (type !== 'promptString' && type !== 'pickString') return bad(`"type" must be "promptString" or "pickString", got ${JSON.stringify(type)}`, 'type');
    if (description !== undefined && typeof description !== 'string') return bad('"description" must be a string', 'description');
    if (password !== undefined && typeof password !== 'boolean') return bad('"password" must be true or false', 'password');
    const def = item['default'];
    if (def !== undefined && typeof def !== 'string') return bad('"default" must be a string', 'default');
    let options: string[] | undefined;
    if (type === 'pickString') {
      const opts = item['options'];
      if (!Array.isArray(opts) || opts.length === 0 || !opts.every((o) => typeof o === 'string')) {
        return bad('"options" must be a non-empty array of strings for a pickString input', 'options');
      }
      options = opts as string[];
    }
    if (layer.inputs.some((x) => x.id === id)) return bad(`duplicate input id "${id}"; the first one is used`, 'id');
    layer.inputs.push({
      id,
      type,
      description: description ?? id,
      password: password ?? false,
      ...(def !== undefined ? { default: def } : {}),
      ...(options ? { options } : {}),
      source: layer.source,
    });
    return undefined;
  });
}

function readServer(
  name: string,
  raw: unknown,
  layer: McpConfigLayer,
  at: (path: (string | number)[]) => McpDiagnostic['range'],
  keyPrefix: string,
): LayerServer {
  const file = layer.source.file;
  const server: LayerServer = { name, fields: {}, present: new Set(), errors: [] };
  const error = (key: string | undefined, message: string, path: (string | number)[] = key ? [key] : []) => {
    const d: McpDiagnostic = { severity: 'error', file, server: name, message, range: at(path) };
    if (key !== undefined) d.key = keyPrefix + key;
    else if (keyPrefix) d.key = keyPrefix.slice(0, -1);
    server.errors.push(d);
    layer.diagnostics.push(d);
  };
  const warn = (key: string, message: string) => layer.diagnostics.push({ severity: 'warning', file, server: name, key: keyPrefix + key, message, range: at([key]) });

  if (name.trim() === '') {
    error(undefined, 'a server name must not be empty');
    return server;
  }
  if (!isObject(raw)) {
    error(undefined, `expected an object with "command", got ${typeName(raw)}`);
    return server;
  }
  for (const key of Object.keys(raw)) server.present.add(key);

  const type = raw['type'];
  if (type !== undefined && type !== 'stdio') {
    if (type === 'http' || type === 'sse') error('type', `only stdio servers are supported (this one is "${type}"); use VS Code's built-in MCP support for it`);
    else error('type', `"type" must be "stdio", got ${JSON.stringify(type)}`);
  }
  if (raw['url'] !== undefined && raw['command'] === undefined) {
    error('url', 'remote (url) servers are not supported; Exec Bridge runs stdio servers with a "command"');
  }
  for (const key of Object.keys(raw)) {
    if (!STDIO_KEYS.has(key) && !OUR_KEYS.has(key) && !IGNORED_VSCODE_KEYS.has(key) && key !== 'url' && key !== 'headers') {
      warn(key, `unknown key "${key}" is ignored`);
    }
  }

  const f = server.fields;
  const str = (key: keyof ServerFields, allowEmpty = false): void => {
    const v = raw[key];
    if (v === undefined) return;
    if (typeof v !== 'string' || (!allowEmpty && v.trim() === '')) error(key, `"${key}" must be a non-empty string, got ${describe(v)}`);
    else if (checkVariables(v, key, [key], error)) (f as Record<string, unknown>)[key] = v;
  };
  str('command');
  str('envFile');
  str('cwd');
  str('executor');

  const args = raw['args'];
  if (args !== undefined) {
    if (!Array.isArray(args)) error('args', `"args" must be an array of strings, got ${typeName(args)}`);
    else {
      let ok = true;
      args.forEach((a: unknown, i) => {
        if (typeof a !== 'string') {
          error(`args[${i}]`, `each argument must be a string, got ${describe(a)}`, ['args', i]);
          ok = false;
        } else if (!checkVariables(a, `args[${i}]`, ['args', i], error)) ok = false;
      });
      if (ok) f.args = args as string[];
    }
  }

  const env = raw['env'];
  if (env !== undefined) {
    if (!isObject(env)) error('env', `"env" must be an object of variable names to strings, got ${typeName(env)}`);
    else {
      const out: Record<string, string | null> = {};
      let ok = true;
      for (const [k, v] of Object.entries(env)) {
        const path = ['env', k];
        if (k === '' || k.includes('=')) {
          error(`env.${k}`, 'an environment variable name must be non-empty and must not contain "="', path);
          ok = false;
        } else if (v === null) out[k] = null;
        else if (typeof v === 'string') {
          if (checkVariables(v, `env.${k}`, path, error)) out[k] = v;
          else ok = false;
        } else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
        else {
          error(`env.${k}`, `must be a string (or null to remove the variable), got ${describe(v)}`, path);
          ok = false;
        }
      }
      if (ok) f.env = out;
    }
  }

  const timeout = raw['startupTimeoutMs'];
  if (timeout !== undefined) {
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < MIN_STARTUP_TIMEOUT_MS || timeout > MAX_STARTUP_TIMEOUT_MS) {
      error('startupTimeoutMs', `"startupTimeoutMs" must be a whole number of milliseconds from ${MIN_STARTUP_TIMEOUT_MS} to ${MAX_STARTUP_TIMEOUT_MS}, got ${describe(timeout)}`);
    } else f.startupTimeoutMs = timeout;
  }
  const autoStart = raw['autoStart'];
  if (autoStart !== undefined) {
    if (typeof autoStart !== 'boolean') error('autoStart', `"autoStart" must be true or false, got ${describe(autoStart)}`);
    else f.autoStart = autoStart;
  }
  const restart = raw['restart'];
  if (restart !== undefined) {
    if (restart !== 'never' && restart !== 'onCrash') error('restart', `"restart" must be "never" or "onCrash", got ${describe(restart)}`);
    else f.restart = restart;
  }
  for (const key of ['enabledTools', 'disabledTools'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) error(key, `"${key}" must be an array of tool names, got ${describe(v)}`);
    else f[key] = v as string[];
  }
  return server;
}

/** Checks `${…}` references: known variable names, `env:`/`input:` arguments, declared inputs. */
function checkVariables(
  value: string,
  key: string,
  path: (string | number)[],
  error: (key: string, message: string, path: (string | number)[]) => void,
): boolean {
  let ok = true;
  for (const m of value.matchAll(VARIABLE)) {
    const [whole, name = '', arg] = m;
    if (!KNOWN_VARIABLES.has(name)) {
      error(key, `unknown variable ${whole}; supported: \${workspaceFolder}, \${workspaceFolderBasename}, \${userHome}, \${pathSeparator}, \${env:NAME}, \${input:ID}`, path);
      ok = false;
    } else if ((name === 'env' || name === 'input') && !arg) {
      error(key, `${whole} needs a name: \${${name}:NAME}`, path);
      ok = false;
    } else if (name !== 'env' && name !== 'input' && arg !== undefined) {
      error(key, `${whole}: \${${name}} takes no argument`, path);
      ok = false;
    }
  }
  // Inputs are checked against all sources at merge time (a settings server may use an mcp.json input).
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Merging sources

/**
 * Merges sources in order into one configuration. `mcp.json` servers come first; a later
 * `mcp.json` with a name already taken is reported and skipped; settings entries replace (with a
 * `command`) or adjust (without) the server of the same name.
 */
export function mergeMcpConfig(layers: McpConfigLayer[]): McpConfig {
  const diagnostics: McpDiagnostic[] = layers.flatMap((l) => l.diagnostics);
  const inputs: McpInputDefinition[] = [];
  for (const l of layers) {
    for (const input of l.inputs) {
      if (inputs.some((x) => x.id === input.id)) {
        diagnostics.push({ severity: 'warning', file: l.source.file, key: 'inputs', message: `input "${input.id}" is also declared in ${inputs.find((x) => x.id === input.id)?.source.file}; that one is used` });
      } else inputs.push(input);
    }
  }

  interface Slot {
    name: string;
    source: McpConfigSource;
    adjustedBy?: McpConfigSource;
    fields: Partial<ServerFields>;
    errors: McpDiagnostic[];
  }
  const slots = new Map<string, Slot>();
  for (const l of layers) {
    for (const s of l.servers) {
      const existing = slots.get(s.name);
      if (l.source.kind === 'mcpJson') {
        if (existing) {
          diagnostics.push({ severity: 'warning', file: l.source.file, server: s.name, message: `server "${s.name}" is already defined in ${existing.source.file}; this definition is ignored` });
          continue;
        }
        slots.set(s.name, { name: s.name, source: l.source, fields: { ...s.fields }, errors: [...s.errors] });
      } else if (s.present.has('command') || !existing) {
        if (!s.present.has('command') && s.errors.length === 0) {
          const d: McpDiagnostic = {
            severity: 'error',
            file: l.source.file,
            server: s.name,
            key: 'command',
            message: `no "command", and no server named "${s.name}" in .vscode/mcp.json to adjust; add a "command" or fix the name`,
          };
          s.errors.push(d);
          diagnostics.push(d);
        }
        slots.set(s.name, { name: s.name, source: l.source, fields: { ...s.fields }, errors: [...s.errors] });
      } else {
        existing.adjustedBy = l.source;
        Object.assign(existing.fields, s.fields);
        existing.errors.push(...s.errors);
      }
    }
  }

  const entries: McpServerEntry[] = [];
  for (const slot of slots.values()) {
    const f = slot.fields;
    if (f.command === undefined && slot.errors.length === 0) {
      const d: McpDiagnostic = { severity: 'error', file: slot.source.file, server: slot.name, key: keyIn(slot.source, slot.name, 'command'), message: '"command" is required for a stdio server' };
      slot.errors.push(d);
      diagnostics.push(d);
    }
    for (const [key, value] of allVariableStrings(f)) {
      for (const m of value.matchAll(VARIABLE)) {
        if (m[1] === 'input' && m[2] && !inputs.some((x) => x.id === m[2])) {
          const d: McpDiagnostic = {
            severity: 'error',
            file: slot.source.file,
            server: slot.name,
            key: keyIn(slot.source, slot.name, key),
            message: `\${input:${m[2]}} refers to an input that no "inputs" entry declares`,
          };
          slot.errors.push(d);
          diagnostics.push(d);
        }
      }
    }
    const entry: McpServerEntry = { name: slot.name, source: slot.source, errors: slot.errors };
    if (slot.errors.length === 0 && f.command !== undefined) {
      const def: Omit<McpServerDefinition, 'fingerprint'> = {
        name: slot.name,
        source: slot.source,
        ...(slot.adjustedBy ? { adjustedBy: slot.adjustedBy } : {}),
        command: f.command,
        args: f.args ?? [],
        env: f.env ?? {},
        ...(f.envFile !== undefined ? { envFile: f.envFile } : {}),
        ...(f.cwd !== undefined ? { cwd: f.cwd } : {}),
        ...(f.executor !== undefined ? { executor: f.executor } : {}),
        startupTimeoutMs: f.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
        autoStart: f.autoStart ?? false,
        restart: f.restart ?? 'never',
        ...(f.enabledTools !== undefined ? { enabledTools: f.enabledTools } : {}),
        disabledTools: f.disabledTools ?? [],
      };
      entry.definition = { ...def, fingerprint: fingerprintOf(def) };
    }
    entries.push(entry);
  }
  return { entries, inputs, diagnostics };
}

function keyIn(source: McpConfigSource, server: string, key: string): string {
  return source.kind === 'mcpJson' ? `servers.${server}.${key}` : key;
}

function* allVariableStrings(f: Partial<ServerFields>): Generator<[string, string]> {
  if (f.command !== undefined) yield ['command', f.command];
  for (const [i, a] of (f.args ?? []).entries()) yield [`args[${i}]`, a];
  for (const [k, v] of Object.entries(f.env ?? {})) if (v !== null) yield [`env.${k}`, v];
  if (f.envFile !== undefined) yield ['envFile', f.envFile];
  if (f.cwd !== undefined) yield ['cwd', f.cwd];
}

/**
 * Hash of what the running process depends on. Tool filters and restart/autoStart policy are left
 * out: they apply without a restart.
 */
function fingerprintOf(def: Omit<McpServerDefinition, 'fingerprint'>): string {
  const material = {
    command: def.command,
    args: def.args,
    env: Object.entries(def.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    envFile: def.envFile ?? null,
    cwd: def.cwd ?? null,
    executor: def.executor ?? null,
    workspaceFolder: def.source.workspaceFolder ?? null,
  };
  return createHash('sha256').update(JSON.stringify(material)).digest('hex').slice(0, 16);
}

/** Applies `enabledTools` then `disabledTools` (deny after allow, as Codex does). */
export function isToolEnabled(def: Pick<McpServerDefinition, 'enabledTools' | 'disabledTools'>, tool: string): boolean {
  if (def.enabledTools && !def.enabledTools.includes(tool)) return false;
  return !def.disabledTools.includes(tool);
}

// ---------------------------------------------------------------------------------------------
// Resolving a definition into a launch

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
}

export async function resolveLaunch(def: McpServerDefinition, inputs: readonly McpInputDefinition[], ctx: VariableContext): Promise<McpLaunch> {
  const inputValues = new Map<string, string>();
  const fail = (key: string, message: string): never => {
    throw new McpConfigError({ severity: 'error', file: def.source.file, server: def.name, key: keyIn(def.source, def.name, key), message });
  };
  const workspaceFolder = ctx.workspaceFolder ?? def.source.workspaceFolder;
  const sub = async (value: string, key: string): Promise<string> => {
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

  const argv = [await sub(def.command, 'command')];
  for (const [i, a] of def.args.entries()) argv.push(await sub(a, `args[${i}]`));
  const cwd = def.cwd !== undefined ? await sub(def.cwd, 'cwd') : workspaceFolder;
  if (cwd !== undefined && !isAbsolutePath(cwd)) fail('cwd', `"cwd" must be an absolute path after variables are substituted, got "${cwd}"`);

  const env: Record<string, string> = {};
  const unsetEnv: string[] = [];
  if (def.envFile !== undefined) {
    const path = await sub(def.envFile, 'envFile');
    let text: string;
    try {
      text = await ctx.readFile(path);
    } catch (e) {
      return fail('envFile', `cannot read the envFile "${path}": ${e instanceof Error ? e.message : String(e)}`);
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
  return { argv, cwd, env, unsetEnv };
}

/**
 * Parses a dotenv file: `KEY=value`, optional `export `, `#` comments, single quotes (literal),
 * double quotes (with `\n`, `\t`, `\"`, `\\` escapes and multi-line values).
 */
export function parseEnvFile(text: string): { values: Record<string, string>; errors: string[] } {
  const values: Record<string, string> = {};
  const errors: string[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('export ')) line = line.slice(7).trimStart();
    const eq = line.indexOf('=');
    const key = eq < 0 ? '' : line.slice(0, eq).trim();
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) {
      errors.push(`line ${lineNo}: expected KEY=value`);
      continue;
    }
    let rest = line.slice(eq + 1).trimStart();
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      // A quoted value may span lines until the closing quote.
      let body = rest.slice(1);
      let close = findClosingQuote(body, quote);
      while (close < 0 && i + 1 < lines.length) {
        i++;
        body += '\n' + (lines[i] ?? '');
        close = findClosingQuote(body, quote);
      }
      if (close < 0) {
        errors.push(`line ${lineNo}: unterminated ${quote === '"' ? 'double' : 'single'}-quoted value for ${key}`);
        continue;
      }
      const raw = body.slice(0, close);
      values[key] = quote === "'" ? raw : raw.replace(/\\([nrt"\\])/g, (_, c: string) => ({ n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' })[c] ?? c);
    } else {
      const hash = rest.search(/\s#/);
      if (hash >= 0) rest = rest.slice(0, hash);
      values[key] = rest.trim();
    }
  }
  return { values, errors };
}

function findClosingQuote(s: string, quote: string): number {
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && quote === '"') i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function nodeValue(node: JsonNode): unknown {
  switch (node.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const prop of node.children ?? []) {
        const [k, v] = prop.children ?? [];
        if (k && typeof k.value === 'string') out[k.value] = v ? nodeValue(v) : undefined;
      }
      return out;
    }
    case 'array':
      return (node.children ?? []).map(nodeValue);
    default:
      return node.value;
  }
}

function rangeOf(text: string, offset: number, length: number): NonNullable<McpDiagnostic['range']> {
  let line = 0;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { offset, length, line, character: offset - lineStart };
}

function describeParseError(code: string): string {
  // jsonc-parser's codes are CamelCase; make them read like a sentence.
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function describe(v: unknown): string {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) return JSON.stringify(v);
  return typeName(v);
}

function basename(p: string): string {
  const parts = p.split(/[\\/]+/).filter(Boolean);
  return parts[parts.length - 1] ?? p;
}

function isAbsolutePath(p: string): boolean {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith('\\\\');
}
