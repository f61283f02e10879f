import type { z } from 'zod';
import { Empty } from './common';
import { EnvironmentInfo, EnvironmentInfoParams, EnvironmentStatusParams, EnvironmentStatusResult } from './environment';
import * as fs from './fs';
import { FsChangedNotification, FsUnwatchParams, FsWatchParams, FsWatchResult } from './fsWatch';
import { HttpBodyDeltaNotification, HttpCancelParams, HttpCancelResult, HttpRequestParams, HttpRequestResult } from './http';
import * as p from './process';
import { InitializeParams, InitializeResult, SessionsParams, SessionsResult } from './session';
import { TerminalModesParams, TerminalModesResult } from './terminalModes';

/**
 * The one method table (docs/style.md §1): it drives the client's typed `call()` and the server's
 * router. Keys are the wire method names.
 */
export const requests = {
  initialize: { params: InitializeParams, result: InitializeResult },
  'process/start': { params: p.ProcessStartParams, result: p.ProcessStartResult },
  'process/read': { params: p.ProcessReadParams, result: p.ProcessReadResult },
  'process/write': { params: p.ProcessWriteParams, result: p.ProcessWriteResult },
  'process/signal': { params: p.ProcessSignalParams, result: p.ProcessSignalResult },
  'process/terminate': { params: p.ProcessTerminateParams, result: p.ProcessTerminateResult },
  /** Ours; announced by capability `processResize`. */
  'process/resize': { params: p.ProcessResizeParams, result: p.ProcessResizeResult },
  /** Ours; announced by capability `execBridgeProcessPause`. */
  'process/pause': { params: p.ProcessFlowParams, result: p.ProcessFlowResult },
  'process/resume': { params: p.ProcessFlowParams, result: p.ProcessFlowResult },
  'process/ack': { params: p.ProcessAckParams, result: p.ProcessAckResult },
  /** Ours; announced by capability `execBridgeTerminalModes`, see ./terminalModes.ts. */
  'execBridge/terminalModes': { params: TerminalModesParams, result: TerminalModesResult },
  'fs/readFile': { params: fs.FsReadFileParams, result: fs.FsReadFileResult },
  'fs/writeFile': { params: fs.FsWriteFileParams, result: Empty },
  'fs/createDirectory': { params: fs.FsCreateDirectoryParams, result: Empty },
  'fs/getMetadata': { params: fs.FsGetMetadataParams, result: fs.FsGetMetadataResult },
  'fs/readDirectory': { params: fs.FsReadDirectoryParams, result: fs.FsReadDirectoryResult },
  'fs/canonicalize': { params: fs.FsCanonicalizeParams, result: fs.FsCanonicalizeResult },
  'fs/copy': { params: fs.FsCopyParams, result: Empty },
  'fs/remove': { params: fs.FsRemoveParams, result: Empty },
  'fs/open': { params: fs.FsOpenParams, result: fs.FsOpenResult },
  'fs/readBlock': { params: fs.FsReadBlockParams, result: fs.FsReadBlockResult },
  'fs/writeBlock': { params: fs.FsWriteBlockParams, result: Empty },
  'fs/close': { params: fs.FsCloseParams, result: Empty },
  'fs/walk': { params: fs.FsWalkParams, result: fs.FsWalkResult },
  /** Ours; negotiated in `initialize` (`execBridgeFsWatch`), see ./fsWatch.ts. */
  'execBridge/fsWatch': { params: FsWatchParams, result: FsWatchResult },
  'execBridge/fsUnwatch': { params: FsUnwatchParams, result: Empty },
  'environment/info': { params: EnvironmentInfoParams, result: EnvironmentInfo },
  'environment/status': { params: EnvironmentStatusParams, result: EnvironmentStatusResult },
  'http/request': { params: HttpRequestParams, result: HttpRequestResult },
  /** Ours; announced by capability `execBridgeHttpCancel`: ends a streamed `http/request` (./http.ts). */
  'execBridge/httpCancel': { params: HttpCancelParams, result: HttpCancelResult },
  /** Ours: the server's sessions, their TTLs and when detached ones end (`exec-bridge daemon status`). */
  'execBridge/sessions': { params: SessionsParams, result: SessionsResult },
} as const;

export type RequestMethod = keyof typeof requests;
/** What a caller passes (defaults may be omitted). */
export type ParamsOf<M extends RequestMethod> = z.input<(typeof requests)[M]['params']>;
/** What a handler receives after parsing (defaults applied). */
export type ParsedParamsOf<M extends RequestMethod> = z.output<(typeof requests)[M]['params']>;
export type ResultOf<M extends RequestMethod> = z.output<(typeof requests)[M]['result']>;

/** Server → client notifications. */
export const serverNotifications = {
  'process/output': p.ProcessOutputNotification,
  'process/exited': p.ProcessExitedNotification,
  'process/closed': p.ProcessClosedNotification,
  'http/request/bodyDelta': HttpBodyDeltaNotification,
  'execBridge/fsChanged': FsChangedNotification,
  'execBridge/sandboxBlocked': p.SandboxBlockedNotification,
} as const;
export type ServerNotificationMethod = keyof typeof serverNotifications;
