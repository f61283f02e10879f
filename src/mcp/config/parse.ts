import { readOAuthSettings } from './auth';
import { readSandboxValue } from './sandbox';
import { findNodeAtLocation, parseTree, printParseErrorCode, type Node as JsonNode, type ParseError } from 'jsonc-parser';
import {
  IGNORED_VSCODE_KEYS,
  KNOWN_VARIABLES,
  MAX_STARTUP_TIMEOUT_MS,
  MIN_STARTUP_TIMEOUT_MS,
  OUR_KEYS,
  STDIO_KEYS,
  VARIABLE,
  VSCODE_SANDBOX_KEYS,
  type LayerServer,
  type McpConfigLayer,
  type McpConfigSource,
  type McpDiagnostic,
  type ServerFields,
} from './types';

/** Parses one `.vscode/mcp.json` (JSON with comments and trailing commas, as VS Code accepts). */
export function parseMcpJson(text: string, source: McpConfigSource): McpConfigLayer {
  const layer: McpConfigLayer = { source, servers: [], inputs: [], diagnostics: [] };
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const at = (path: (string | number)[]): McpDiagnostic['range'] => {
    const node = root ? findNodeAtLocation(root, path) : undefined;
    // Point at the property name when there is one, so the squiggle is on the key.
    const target = node?.parent?.type === 'property' ? (node.parent.children?.[0] ?? node) : node;
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
    if (errors.length === 0)
      layer.diagnostics.push({ severity: 'error', file: source.file, message: 'the file is empty; expected an object with "servers"' });
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
      if (key !== 'servers' && key !== 'inputs')
        push({ severity: 'warning', key, message: `unknown top-level key "${key}" is ignored`, range: at([key]) });
    }
    readInputs(value['inputs'], layer, at);
  }
  const servers = value[serversKey];
  if (servers === undefined) {
    if (!settings)
      push({ severity: 'warning', key: serversKey, message: 'no "servers" object: this file defines no MCP servers', range: at([]) });
    return;
  }
  if (!isObject(servers)) {
    push({
      severity: 'error',
      key: settings ? undefined : serversKey,
      message: `expected an object mapping server names to definitions, got ${typeName(servers)}`,
      range: at([serversKey]),
    });
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
    layer.diagnostics.push({
      severity: 'error',
      file,
      key: 'inputs',
      message: `expected an array of inputs, got ${typeName(raw)}`,
      range: at(['inputs']),
    });
    return;
  }
  raw.forEach((item: unknown, i) => {
    const key = `inputs[${i}]`;
    const bad = (message: string, sub?: string) =>
      layer.diagnostics.push({
        severity: 'error',
        file,
        key: sub ? `${key}.${sub}` : key,
        message,
        range: at(sub ? ['inputs', i, sub] : ['inputs', i]),
      });
    if (!isObject(item)) return bad(`expected an object, got ${typeName(item)}`);
    const { id, type, description, password } = item;
    if (typeof id !== 'string' || id === '') return bad('"id" must be a non-empty string', 'id');
    if (type !== 'promptString' && type !== 'pickString')
      return bad(`"type" must be "promptString" or "pickString", got ${JSON.stringify(type)}`, 'type');
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
  const warn = (key: string, message: string) =>
    layer.diagnostics.push({ severity: 'warning', file, server: name, key: keyPrefix + key, message, range: at([key]) });

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
  if (type !== undefined && type !== 'stdio' && type !== 'http' && type !== 'sse') {
    error('type', `"type" must be "stdio", "http" or "sse", got ${JSON.stringify(type)}`);
  }
  if (type === 'http' || type === 'sse' || (type === undefined && raw['url'] !== undefined && raw['command'] === undefined)) {
    readRemoteFields(raw, server.fields, type === 'sse' ? 'sse' : 'http', error);
  } else if (raw['url'] !== undefined || raw['oauth'] !== undefined) {
    error(raw['url'] !== undefined ? 'url' : 'oauth', '"url" belongs to an "http" or "sse" server; a stdio server has a "command"');
  }
  for (const key of Object.keys(raw)) {
    if (VSCODE_SANDBOX_KEYS.has(key)) {
      warn(
        key,
        `"${key}" is VS Code's sandbox for a server VS Code runs itself; Exec Bridge runs it on the executor, sandboxed by "executorSandbox"`,
      );
    } else if (!STDIO_KEYS.has(key) && !OUR_KEYS.has(key) && !IGNORED_VSCODE_KEYS.has(key) && key !== 'url' && key !== 'headers') {
      warn(key, `unknown key "${key}" is ignored`);
    }
  }
  if (raw['executorSandbox'] !== undefined) {
    if (server.fields.transport !== undefined)
      error('executorSandbox', '"executorSandbox" is for stdio servers (they run on the executor); a remote server runs elsewhere');
    else {
      const sb = readSandboxValue(raw['executorSandbox'], 'executorSandbox', (key, message) => error(key, message, key.split('.')));
      if (sb !== undefined) server.fields.executorSandbox = sb;
    }
  }

  const connectFrom = raw['connectFrom'];
  if (connectFrom === 'window' || connectFrom === 'executor') server.fields.connectFrom = connectFrom;
  else if (connectFrom !== undefined) error('connectFrom', `"connectFrom" must be "window" or "executor", got ${describe(connectFrom)}`);

  readLaunchFields(raw, server.fields, error);
  readPolicyFields(raw, server.fields, error);
  return server;
}

/** Reports a problem with one key of a server (undefined = the server as a whole). */
type FieldError = (key: string | undefined, message: string, path?: (string | number)[]) => void;

/** What the process is: `command`, `args`, `env`, `envFile`, `cwd`, `executor`. */
/** `url` (http or https, variables allowed) and `headers` (names to strings) of a remote server. */
function readRemoteFields(raw: Record<string, unknown>, f: Partial<ServerFields>, transport: 'http' | 'sse', error: FieldError): void {
  f.transport = transport;
  if (raw['command'] !== undefined) error('command', `an "${transport}" server has a "url", not a "command"`);
  const url = raw['url'];
  if (typeof url !== 'string' || url.trim() === '') error('url', `"url" must be a non-empty string, got ${describe(url)}`);
  else if (!/^(https?:\/\/|\$\{)/i.test(url)) error('url', `"url" must start with http:// or https://, got "${url}"`);
  else if (checkVariables(url, 'url', ['url'], error)) f.url = url;
  if (raw['oauth'] !== undefined) {
    const oauth = readOAuthSettings(raw['oauth'], error, (v, key, path) => checkVariables(v, key, path, error));
    if (oauth) f.oauth = oauth;
  }
  const headers = raw['headers'];
  if (headers === undefined) return;
  if (!isObject(headers)) {
    error('headers', `"headers" must be an object of strings, got ${typeName(headers)}`);
    return;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== 'string') error(`headers.${k}`, `a header value must be a string, got ${describe(v)}`, ['headers', k]);
    else if (checkVariables(v, `headers.${k}`, ['headers', k], error)) out[k] = v;
  }
  f.headers = out;
}

function readLaunchFields(raw: Record<string, unknown>, f: Partial<ServerFields>, error: FieldError): void {
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

  if (raw['env'] !== undefined) readEnv(raw['env'], f, error);
}

/** `env`: names to strings (numbers and booleans are turned into strings), `null` to unset. */
function readEnv(env: unknown, f: Partial<ServerFields>, error: FieldError): void {
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

/** How we treat it: `startupTimeoutMs`, `autoStart`, `restart`, the tool filters. */
function readPolicyFields(raw: Record<string, unknown>, f: Partial<ServerFields>, error: FieldError): void {
  const timeout = raw['startupTimeoutMs'];
  if (timeout !== undefined) {
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < MIN_STARTUP_TIMEOUT_MS || timeout > MAX_STARTUP_TIMEOUT_MS) {
      error(
        'startupTimeoutMs',
        `"startupTimeoutMs" must be a whole number of milliseconds from ${MIN_STARTUP_TIMEOUT_MS} to ${MAX_STARTUP_TIMEOUT_MS}, got ${describe(timeout)}`,
      );
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
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
      error(key, `"${key}" must be an array of tool names, got ${describe(v)}`);
    else f[key] = v as string[];
  }
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
      error(
        key,
        `unknown variable ${whole}; supported: \${workspaceFolder}, \${workspaceFolderBasename}, \${userHome}, \${pathSeparator}, \${env:NAME}, \${input:ID}`,
        path,
      );
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
