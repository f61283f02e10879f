// The API of src/mcp, MCP servers on executors (docs/mcp.md), as src/vscode uses it (docs/architecture.md,
// "Layers"). Files of src/mcp import each other directly, never this index.

// The servers: their manager, one server, its log, and the executors they run on.
export { McpServerManager } from './serverManager';
export type { McpServer } from './mcpServer';
export type { LogEntry } from './serverLog';
export type { McpExecutor, McpExecutorHost } from './executorHost';

// Configuration: mcp.json and the settings, merged, with their diagnostics and sandbox values.
export {
  type McpConfig,
  type McpConfigLayer,
  type McpDiagnostic,
  type McpInputDefinition,
  type McpSandboxSettings,
  mergeMcpConfig,
  parseMcpJson,
  parseSettingsServers,
  readSandboxValue,
  sandboxJson,
  sandboxSummary,
} from './config';

// What the tree of servers shows, and a tool's arguments as the user types them.
export { McpTreeModel, type McpTreeNode } from './treeModel';
export { exampleArguments, parseToolArguments } from './toolArguments';

// A sandboxed server's block, and what allowing it writes.
export { allowEntryFor, dirToAllow, type SandboxBlock } from './serverSandbox';

// What a server asks of the client: sign-in, elicitation, sampling, roots, progress.
export { isSignInRequired, type McpAuthHooks } from './authSession';
export type { McpAuthStore } from './authStore';
export {
  checkElicitPicks,
  type ElicitChoice,
  elicitChoices,
  type ElicitField,
  elicitFields,
  parseElicitValue,
  pickModel,
  progressStep,
  requiredUrlElicitations,
  rootsFor,
  samplingTurns,
} from './clientFeatures';

// Our servers in VS Code's own MCP list, through the gateway.
export { McpGateway } from './gateway';
export { buildProxyDefinitions, definitionsKey, type ProxyDefinition } from './vscodeDefinitions';
