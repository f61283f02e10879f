// The API of src/client, the resilient exec client (docs/client.md): what the other layers use
// (docs/architecture.md, "Layers"). Files of src/client import each other directly, never this index.

// The client, its options and its connection state.
export { ExecServerClient } from './execServerClient';
export { DEFAULT_SESSION_TTL_MS } from './sessionLink';
export type {
  ClientOptions,
  Connection,
  ConnectionState,
  Connector,
  Endpoint,
  ProcessCompletion,
  ProcessEvent,
  StartProcessOptions,
} from './types';
export { redact, stdioConnector, websocketConnector } from './connectors';

// A process on the executor, a resumed session's, and the environment it is given.
export type { ProcessHandle } from './processHandle';
export { SessionExpiredError } from './processAttach';
export { inheritAllEnv } from './envPolicy';
export { defaultExecutorDir, executorPath } from './executorPaths';

// HTTP requests made by the executor, their bodies streamed back.
export { type HttpStreamRequest, type HttpStreamResponse, MAX_UNREAD_HTTP_BYTES } from './httpStream';

// File watches that outlive a resume.
export { type ClientWatch, FsWatchClient, type FsWatchEvent, type WatchRequest } from './fsWatch';

// The errors of docs/client.md ("Errors"): every failure is an ExecClientError with a kind.
export {
  AbortedError,
  AnswerTooLargeError,
  type ClientErrorKind,
  ConnectFailedError,
  DisconnectedError,
  type DisconnectReason,
  ExecClientError,
  isExecClientError,
  NotStartedError,
  OutcomeUnknownError,
  OutputLostError,
  RemoteError,
  UnsupportedError,
  WriteRejectedError,
  type WriteRejection,
} from './errors';

// SSH executors: the connector, the target's words, ssh's prompts, host keys, the hosts of ssh_config.
export { type RemoteInfo, sshConnector, type SshConnector, type SshProgress } from './sshConnector';
export { parseSshTarget } from './sshTarget';
export { ASKPASS_SECRET_ENV, ASKPASS_SOCKET_ENV, type AskpassHello, type AskpassReply, type AskpassRequest } from './sshAskpass';
export { isUnknownHostKey, scanHostKeys, trustHostKeys } from './sshHostKeys';
export { sshConfigHostsOf } from './sshConfigFiles';

// The per-user daemon: its paths and state, finding or starting it (no server code).
export {
  bundleKey,
  CLI_VERSION,
  DAEMON_IDLE_MS,
  type DaemonInfo,
  daemonPaths,
  type DaemonState,
  ensureDaemon,
  EXECUTOR_FILES,
  liveDaemon,
  otherLiveDaemons,
  readDaemonState,
} from './daemonStart';
