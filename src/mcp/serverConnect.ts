import type { Client } from '@modelcontextprotocol/client';
import type { McpAuthSession } from './authSession';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { describeExitCode } from '../util';
import type { McpLaunch, McpServerDefinition } from './config';
import type { McpExecutor } from './executorHost';
import { createMcpSession, createRemoteSession, type SessionHooks } from './mcpSession';
import type { McpServerContext } from './serverContext';
import type { ListKind } from './serverLists';
import type { ServerLog } from './serverLog';
import { throwIfStopped, type Run } from './serverRun';
import type { McpServerState } from './serverState';

/** What connecting a run needs from its server. */
export interface ConnectHooks {
  ctx: McpServerContext;
  log: ServerLog;
  onListChanged(kind: ListKind): void;
  /** The transport closed (the process ended, or the remote server hung up). */
  onClosed(): void;
  /** `initialize` was answered: read the server's info, capabilities and instructions from `sdk`. */
  onInitialized(sdk: Client): void;
  /** Notifications for the gateway, the origin of a request the server serves. */
  session?: Omit<SessionHooks, 'closing'>;
  /** A remote server's sign-in (its transports authenticate through it). */
  auth?: McpAuthSession;
}

/**
 * Spawns the server on the executor (`on`), or without one connects to its URL (http/sse), then
 * runs the MCP handshake. The run holds the transport and the SDK client before `connect`.
 */
export async function connectRun(
  run: Run,
  def: McpServerDefinition,
  on: { executor: McpExecutor; launch: McpLaunch } | undefined,
  request: RequestOptions,
  t0: number,
  hooks: ConnectHooks,
): Promise<Client> {
  const { ctx, log } = hooks;
  let session: ReturnType<typeof createMcpSession> | Awaited<ReturnType<typeof createRemoteSession>>;
  let over = '';
  const sessionHooks: SessionHooks = { ...hooks.session, closing: () => run.stopping !== undefined };
  if (on) {
    session = createMcpSession({ def, runId: run.id, ...on, ctx, log, onListChanged: hooks.onListChanged, hooks: sessionHooks });
  } else {
    const remote = await createRemoteSession(def, ctx, log, hooks.onListChanged, sessionHooks, hooks.auth);
    throwIfStopped(run);
    over = ` over ${remote.transport.kind === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}`;
    session = remote;
  }
  const { transport, sdk, features } = session;
  run.transport = transport;
  run.subscriptions.add(features);
  void transport.closed.then(() => hooks.onClosed());
  run.sdk = sdk;
  await untilAborted(sdk.connect(transport, request), request.signal);
  hooks.onInitialized(sdk);
  const info = sdk.getServerVersion();
  const version = info ? `${info.name} ${info.version}` : 'unknown server';
  log.lifecycle(`initialized: ${version}${over}, protocol ${transport.protocolVersion ?? '?'}, in ${ctx.clock.now() - t0} ms`);
  return sdk;
}

/**
 * `p`, or the signal's reason as soon as it aborts. The SDK's `server/discover` probe runs on its
 * own timeout and does not follow the signal: a start that timed out or was stopped meanwhile
 * must not wait for it (the run's end closes the client and the transport, which ends the probe).
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Why a run's transport closed when nobody asked it to: the reason for its `crashed` state. */
export function describeClose(run: Run): string {
  const exit = run.transport?.exit;
  if (run.transport?.process === undefined && run.executor === undefined)
    return exit?.error?.message ?? 'the remote server closed the connection';
  if (exit?.error && exit.exitCode === undefined) return `lost the server process: ${exit.error.message}`;
  return `the server process exited on its own: ${describeExitCode(exit?.exitCode)}`;
}

export interface RunEnd {
  kind: 'stopped' | 'timedOut' | 'crashed';
  reason: string;
  exitCode?: number | undefined;
  waitingForExecutor?: boolean;
}

/** The final state a run ends in (a crashed one without its restart plan yet). */
export function endState(end: RunEnd, now: number, stderrTail: string[], timeoutMs: number): McpServerState {
  if (end.kind === 'stopped') return { kind: 'stopped', since: now, reason: end.reason, stderrTail };
  if (end.kind === 'timedOut') return { kind: 'timedOut', since: now, reason: end.reason, stderrTail, timeoutMs };
  const state: Extract<McpServerState, { kind: 'crashed' }> = { kind: 'crashed', since: now, reason: end.reason, stderrTail };
  if (end.exitCode !== undefined) state.exitCode = end.exitCode;
  return state;
}
