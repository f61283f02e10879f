/** The MCP configuration's shapes, limits and diagnostics (see index.ts for the sources and rules). */
import type { McpOAuthSettings } from './auth';
import type { McpSandboxChoice, McpSandboxSettings } from './sandbox';

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
  /** A remote server (`type: "http"` or `"sse"`, `url`): the extension connects to it itself; `command` is empty. */
  remote?: McpRemoteDefinition;
  /** The executor's sandbox for a stdio server: its own `executorSandbox`, else the workspace default; absent = none. */
  sandbox?: McpSandboxChoice;
  /** Stable hash of everything that affects the running process: a change means "restart to apply". */
  fingerprint: string;
}

/** `http` = Streamable HTTP, falling back to the older HTTP+SSE transport; `sse` = that one only. */
export interface McpRemoteDefinition {
  type: 'http' | 'sse';
  /** May hold `${input:…}`/`${env:…}` until resolved. */
  url: string;
  headers: Record<string, string>;
  /** The `oauth` key (sign-in settings); absent = the standard flow on a 401. */
  oauth?: McpOAuthSettings;
  /**
   * Where its requests are made (`connectFrom`): `window` (default), the extension host; `executor`,
   * the server's executor (`executor`, else the active one), every request through `http/request`.
   */
  connectFrom: McpConnectFrom;
}

/** Where a remote server's requests are made: from the VS Code window (its extension host) or from the executor. */
export type McpConnectFrom = 'window' | 'executor';

/** Whether a start needs an executor: a stdio server runs there, a remote one may be reached through it. */
export function needsExecutor(def: Pick<McpServerDefinition, 'remote'>): boolean {
  return !def.remote || def.remote.connectFrom === 'executor';
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

export interface LayerServer {
  name: string;
  /** The validated keys this layer sets (a failed key is absent and has an error diagnostic). */
  fields: Partial<ServerFields>;
  /** Keys present in the raw object (valid or not). */
  present: Set<string>;
  errors: McpDiagnostic[];
}

export interface ServerFields {
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
  transport: 'http' | 'sse';
  url: string;
  connectFrom: McpConnectFrom;
  headers: Record<string, string>;
  oauth: McpOAuthSettings;
  executorSandbox: McpSandboxSettings | 'none';
}

export interface McpConfig {
  /** Every server, valid or not, in source order. */
  entries: McpServerEntry[];
  inputs: McpInputDefinition[];
  /** Errors and warnings of all sources (including the servers' errors). */
  diagnostics: McpDiagnostic[];
}

/** Keys of VS Code's format that we accept but do not use (no warning for them). */
export const IGNORED_VSCODE_KEYS = new Set(['dev', 'gallery', 'version']);
/** VS Code's sandbox for a server it spawns itself (on the window's machine); ours is `executorSandbox`. */
export const VSCODE_SANDBOX_KEYS = new Set(['sandboxEnabled', 'sandbox']);
export const OUR_KEYS = new Set([
  'executor',
  'startupTimeoutMs',
  'autoStart',
  'restart',
  'enabledTools',
  'disabledTools',
  'oauth',
  'executorSandbox',
  'connectFrom',
]);
export const STDIO_KEYS = new Set(['type', 'command', 'args', 'env', 'envFile', 'cwd']);

/** `${name}` or `${name:arg}`; names are letters only. */
export const VARIABLE = /\$\{([A-Za-z]+)(?::([^}]*))?\}/g;
export const KNOWN_VARIABLES = new Set(['workspaceFolder', 'workspaceFolderBasename', 'userHome', 'pathSeparator', 'env', 'input']);

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

/** The dotted key of a server field as the user wrote it (settings entries have no `servers.` prefix). */
export function keyIn(source: McpConfigSource, server: string, key: string): string {
  return source.kind === 'mcpJson' ? `servers.${server}.${key}` : key;
}
