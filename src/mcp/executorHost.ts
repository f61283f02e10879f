import type { ConnectionState, HttpStreamRequest, HttpStreamResponse } from '../client';
import type { EnvironmentInfo } from '../protocol';
import type { Event } from '../util';
import type { ProcessStarter } from './execProcessTransport';

/** What the MCP manager needs from an exec client (`ExecServerClient` satisfies it). */
export interface McpExecClient extends ProcessStarter {
  readonly state: ConnectionState;
  readonly onDidChangeState: Event<ConnectionState>;
  readonly environmentInfo: EnvironmentInfo | undefined;
  /** Used for `envFile` (the workspace lives on the executor). */
  readFile(path: string): Promise<Buffer>;
  /** `http/request` with the body streamed back: a remote server reached through the executor (./executorFetch.ts). */
  httpRequestStream(request: HttpStreamRequest): Promise<HttpStreamResponse>;
}

/** One executor the manager can run servers on. */
export interface McpExecutor {
  /** Stable id (`local`, `devbox`, …): compared to decide whether a server must move. */
  readonly id: string;
  /** Shown as the server's badge in the tree. */
  readonly label: string;
  readonly client: McpExecClient;
}

/**
 * The seam between the MCP manager and whoever owns connections (the extension): it hands out the
 * client for an executor and says when that answer may have changed.
 */
export interface McpExecutorHost {
  /**
   * The executor that runs a server configured with `executor` (undefined = the active one),
   * connecting if needed. Rejects with an Error whose message a user can act on when it is not
   * available.
   */
  acquire(executor: string | undefined): Promise<McpExecutor>;
  /** Which executor id `executor` maps to right now (undefined when none is active). */
  resolveId(executor: string | undefined): string | undefined;
  /** Fires when `resolveId` or `acquire` may answer differently: active executor switched, an executor (re)connected. */
  readonly onDidChange: Event<void>;
}

/** `file:///home/u` → `/home/u` (the executor's path syntax is kept, not the local one). */
export function pathFromUri(uri: string): string {
  const u = new URL(uri);
  const p = decodeURIComponent(u.pathname);
  // file:///C:/x → C:/x
  return /^\/[A-Za-z]:\//.test(p) ? p.slice(1) : p;
}
