import type { Client } from '@modelcontextprotocol/client';
import type { McpAuthSession } from './authSession';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { describeExitCode } from '../util';
import type { McpLaunch, McpServerDefinition } from './config';
import type { McpExecutor } from './executorHost';
import { createMcpSession, createRemoteSession, type SessionHooks } from './mcpSession';
import { RemoteMcpTransport } from './remoteTransport';
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
  on: { executor: McpExecutor; launch?: McpLaunch } | undefined,
  request: RequestOptions,
  t0: number,
  hooks: ConnectHooks,
): Promise<Client> {
  const { ctx, log } = hooks;
  const sessionHooks: SessionHooks = { ...hooks.session, closing: () => run.stopping !== undefined };
  if (!on?.launch) {
    // A remote server: from this process, or through the executor (`"connectFrom": "executor"`).
    const remote = await createRemoteSession(def, ctx, log, hooks.onListChanged, sessionHooks, hooks.auth, on?.executor);
    throwIfStopped(run);
    const over = ` over ${remote.transport.kind === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}`;
    return handshake(run, remote, request, t0, hooks, over);
  }
  const launch = on.launch;
  const stdio = (negotiation: Negotiation) =>
    createMcpSession({
      def,
      runId: run.id,
      executor: on.executor,
      launch,
      ctx,
      log,
      onListChanged: hooks.onListChanged,
      hooks: sessionHooks,
      negotiation,
    });
  const key = eraKey(def, { executor: on.executor, launch });
  const memo = ctx.legacyServers;
  const negotiation: Negotiation = memo?.has(key) ? 'legacy' : 'auto';
  const first = stdio(negotiation);
  try {
    const sdk = await handshake(run, first, request, t0, hooks, '', negotiation === 'auto');
    // A 2025 server: the next start of it skips the probe (one that never answers it costs 5 s).
    if (negotiation === 'auto' && first.transport.protocolVersion !== LATEST_ERA) memo?.add(key);
    return sdk;
  } catch (e) {
    if (negotiation === 'legacy' || !refusedTheProbe(first.transport)) throw e;
    if (run.stopping) {
      // Its close was left to this catch: it is the run's end after all.
      hooks.onClosed();
      throw e;
    }
    // Exited on `server/discover` without a word: a 2025 server that takes nothing before `initialize`.
    memo?.add(key);
    log.lifecycle(
      'the server exited before it said anything (a 2025 server may exit on server/discover): starting it once more with initialize only',
    );
    first.features.dispose();
    throwIfStopped(run);
    log.beginAttempt();
    return handshake(run, stdio('legacy'), request, t0, hooks, '');
  }
}

type Negotiation = 'auto' | 'legacy';
type Session = ReturnType<typeof createMcpSession> | Awaited<ReturnType<typeof createRemoteSession>>;

/** The revision a probe that was answered runs on. */
const LATEST_ERA = '2026-07-28';

/** The same server on the same executor: its launch, not its name alone (a changed command may be another era). */
function eraKey(def: McpServerDefinition, on: { executor: McpExecutor; launch: McpLaunch }): string {
  return JSON.stringify([def.name, on.executor.id, on.launch.argv, on.launch.cwd ?? null]);
}

/** The process ended before it sent a single message: what a server that exits on an unknown request does. */
function refusedTheProbe(t: Session['transport']): boolean {
  return 'messagesReceived' in t && t.messagesReceived === 0 && t.exit !== undefined && !t.exit.requested;
}

/**
 * The run holds the session's transport and SDK client, then the MCP handshake. With `probing`, a
 * close before the server said anything is left to the caller (it may start the server again with
 * the 2025 handshake) instead of counting as the run's end.
 */
async function handshake(
  run: Run,
  session: Session,
  request: RequestOptions,
  t0: number,
  hooks: ConnectHooks,
  over: string,
  probing = false,
): Promise<Client> {
  const { ctx, log } = hooks;
  const { transport, sdk, features } = session;
  run.transport = transport;
  run.subscriptions.add(features);
  let connected = false;
  void transport.closed.then(() => {
    if (run.transport !== transport) return;
    if (probing && !connected && refusedTheProbe(transport)) return;
    hooks.onClosed();
  });
  run.sdk = sdk;
  await untilAborted(sdk.connect(transport, request), request.signal);
  connected = true;
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
  if (run.transport instanceof RemoteMcpTransport) return exit?.error?.message ?? 'the remote server closed the connection';
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
