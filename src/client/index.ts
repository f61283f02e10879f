// Public API of the resilient exec client (docs/client.md).
export { ExecServerClient } from './execServerClient';
export { CODEX_DEADLINE_MS, DEFAULT_SESSION_TTL_MS } from './sessionLink';
export type { ProcessHandle } from './processHandle';
export * from './errors';
export { SessionExpiredError, type AttachedProcess } from './processAttach';
export type {
  CallOptions,
  ClientOptions,
  Connection,
  ConnectionState,
  Connector,
  Endpoint,
  ProcessCompletion,
  ProcessEvent,
  ProcessStatus,
  StartProcessOptions,
} from './types';
export { connectorFor, redact, stdioConnector, websocketConnector } from './connectors';
