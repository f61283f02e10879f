// The API of src/protocol: the wire shapes (zod schemas and their types) the other layers use
// (docs/architecture.md, "Layers"). Files of src/protocol import each other directly, never this index.

// The method table: every request's params and result, and the server's notifications.
export { type ParamsOf, type ParsedParamsOf, type RequestMethod, requests, type ResultOf, serverNotifications } from './methods';
export { ErrorCode, type OutputStream } from './common';
export { describeZodError } from './describeError';

// The session: initialize (with our extensions' fields), its summary, a take-over.
export { InitializeParams, InitializeResult, OutputSpoolAsk, SESSION_TAKEN_OVER, SESSION_TTL_FIELD, type SessionSummary } from './session';
export { type EnvironmentInfo, type EnvironmentStatusResult } from './environment';

// Processes: start, read, write, their notifications and a sandbox's block.
export {
  type EnvPolicy,
  ProcessClosedNotification,
  ProcessExitedNotification,
  ProcessReadResult,
  ProcessStartParams,
  type ProcessStartRequest,
  type ProcessStartResult,
  type PtySize,
  SANDBOX_BLOCKED,
  SandboxBlockedNotification,
  type SandboxType,
  type WriteStatus,
} from './process';

// A tty process's terminal modes at an output position (a reopened terminal's replay start).
export { TerminalModeState, TerminalModesResult } from './terminalModes';

// Binary output frames and file results (docs/protocol-extensions.md).
export {
  BINARY_OUTPUT_FIELD,
  BINARY_RESULT_HEADROOM,
  BINARY_RESULT_KIND,
  BinaryResult,
  decodeBinaryOutput,
  decodeBinaryResult,
  encodeBinaryOutput,
  encodeBinaryResult,
  isBinaryFrameKind,
} from './binaryOutput';

// The file system, its watches, and http requests made by the executor.
export { type FsDirectoryEntry, type FsMetadata, type FsWalkEntry, type FsWalkOptions, type FsWalkResult } from './fs';
export {
  FS_CHANGED,
  FS_WATCH_FIELD,
  type FsChange,
  FsChangedNotification,
  type FsChangeType,
  type FsWatchLimits,
  type FsWatchParams,
  type FsWatchResult,
} from './fsWatch';
export { HTTP_CANCEL, HttpBodyDeltaNotification, type HttpRequestResult } from './http';

// The sandbox a process asks for, with the managed network's lists.
export {
  type FileSystemSandboxEntry,
  type FileSystemSpecialPath,
  isManagedNetworkLists,
  ManagedNetworkField,
  type ManagedNetworkLists,
  type ManagedNetworkSandboxContext,
  SandboxContext,
  type SandboxContextInput,
  sandboxForPolicy,
  SandboxPolicyName,
} from './sandbox';
