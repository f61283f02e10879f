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
 * Here: `parse.ts` (one source → a layer), `merge.ts` (layers → entries, fingerprints),
 * `launch.ts` (a definition → argv, cwd, env; `envFile.ts` reads dotenv files), `types.ts`.
 *
 * Every problem becomes a diagnostic naming the file, the server and the key; a bad server is kept
 * as an entry with errors (the tree shows it) and never hides the others.
 */
export { resolveLaunch, resolveRemote, type McpLaunch, type VariableContext } from './launch';
export { parseEnvFile } from './envFile';
export { isToolEnabled, mergeMcpConfig } from './merge';
export { parseMcpJson, parseSettingsServers } from './parse';
export {
  readSandboxValue,
  sandboxJson,
  sandboxSummary,
  withAllowedHost,
  type McpSandboxChoice,
  type McpSandboxPolicy,
  type McpSandboxSettings,
} from './sandbox';
export {
  DEFAULT_STARTUP_TIMEOUT_MS,
  formatDiagnostic,
  MAX_STARTUP_TIMEOUT_MS,
  McpConfigError,
  MIN_STARTUP_TIMEOUT_MS,
  needsExecutor,
  type McpConfig,
  type McpConnectFrom,
  type McpConfigLayer,
  type McpConfigSource,
  type McpDiagnostic,
  type McpInputDefinition,
  type McpServerDefinition,
  type McpServerEntry,
  type RestartPolicy,
} from './types';
