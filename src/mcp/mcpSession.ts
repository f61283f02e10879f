import { randomBytes } from 'node:crypto';
import { Client, type ClientCapabilities as SdkClientCapabilities } from '@modelcontextprotocol/client';
import type { ClientCapabilities, LoggingMessageNotification, ResourceUpdatedNotification } from '@modelcontextprotocol/sdk/types.js';
import { inheritAllEnv, defaultExecutorDir } from '../client';
import { clientCapabilities, installClientFeatures, type RequestOrigin } from './clientFeatures';
import { resolveLaunch, resolveRemote, type McpLaunch, type McpServerDefinition } from './config';
import { ExecProcessTransport } from './execProcessTransport';
import { pathFromUri, type McpExecutor } from './executorHost';
import type { McpAuthSession, RemoteVia } from './authSession';
import { executorFetch } from './executorFetch';
import { RemoteMcpTransport } from './remoteTransport';
import { sandboxedStart } from './serverSandbox';
import type { McpServerContext } from './serverContext';
import type { ListKind } from './serverLists';
import type { ServerLog } from './serverLog';

export interface McpSessionOptions {
  def: McpServerDefinition;
  /** Makes the process id unique per run. */
  runId: number;
  executor: McpExecutor;
  launch: McpLaunch;
  ctx: McpServerContext;
  log: ServerLog;
  onListChanged(kind: ListKind): void;
  /** What else the session hears and asks about: notifications for the gateway, the origin of a request the server serves. */
  hooks?: SessionHooks;
  /** `auto` (default): probe with `server/discover` first; `legacy`: the 2025 `initialize` only (a server known to be of 2025). */
  negotiation?: 'auto' | 'legacy';
}

/** A server notification others may want (the gateway forwards them to VS Code's client). */
export type ServerNotice = LoggingMessageNotification | ResourceUpdatedNotification;

export interface SessionHooks {
  onNotification?(n: ServerNotice): void;
  /** Who made the request the server is serving now (it may ask that client instead of ours). */
  origin?(): RequestOrigin | undefined;
  /** Protocol errors are not worth a log line once the session is being closed (they are the close's own echo). */
  closing?(): boolean;
  /** A sandboxed server's managed network refused a destination (`host:port`) just now. */
  onBlocked?(b: { target: string; reason: string }): void;
}

/**
 * One run's MCP session, not yet connected: the server's process on the executor as an MCP
 * transport (spawned on `connect`), and the SDK client that speaks over it.
 */
export function createMcpSession(o: McpSessionOptions): { transport: ExecProcessTransport; sdk: Client; features: { dispose(): void } } {
  const { executor, launch, ctx, log } = o;
  const processId = `mcp-${o.def.name.replace(/[^\w.-]+/g, '_').slice(0, 40)}-${o.runId}-${randomBytes(3).toString('hex')}`;
  const cwd = launch.cwd ?? defaultExecutorDir(executor.client.environmentInfo) ?? '/';
  const { env: sandboxEnv, ...sandboxed } = launch.sandbox
    ? sandboxedStart(launch.sandbox, cwd, o.def.source.workspaceFolder)
    : { env: {} };
  const transport = new ExecProcessTransport({
    client: executor.client,
    launch: {
      processId,
      argv: launch.argv,
      cwd,
      // The server inherits the executor's environment, as a locally spawned one would inherit ours.
      env: { ...sandboxEnv, ...launch.env },
      envPolicy: inheritAllEnv(launch.unsetEnv),
      ...sandboxed,
    },
    ...(o.hooks?.onBlocked ? { onBlocked: o.hooks.onBlocked } : {}),
    log,
    trace: (dir, msg) => {
      if (ctx.trace()) log.append('trace', `${dir === 'send' ? '→' : '←'} ${truncate(JSON.stringify(msg), 4000)}`);
    },
    reapOrphans: ctx.reapOrphans && executor.client.environmentInfo?.platformOs !== 'windows',
    graceMs: ctx.timings.graceMs,
    closeConfirmMs: ctx.timings.closeConfirmMs,
    clock: ctx.clock,
  });

  const caps = clientCapabilities(ctx.client);
  const sdk = newSdkClient(ctx, caps, log, o.onListChanged, o.hooks, o.negotiation ?? 'auto');
  const features = installClientFeatures(sdk, ctx.client, caps, o.def.name, executor.id, (line) => log.lifecycle(line), o.hooks?.origin);
  return { transport, sdk, features };
}

/** The host id a remote (http/sse) server reports as its executor: it runs wherever its URL points. */
export const REMOTE_HOST = { id: 'extension host', label: 'remote (from this window)' };

/**
 * A remote server's session: the SDK client over Streamable HTTP (or HTTP+SSE), from the extension
 * host, or with `executor` (`"connectFrom": "executor"`) every request made by that executor.
 */
export async function createRemoteSession(
  def: McpServerDefinition,
  ctx: McpServerContext,
  log: ServerLog,
  onListChanged: (kind: ListKind) => void,
  hooks?: SessionHooks,
  auth?: McpAuthSession,
  executor?: McpExecutor,
): Promise<{ transport: RemoteMcpTransport; sdk: Client; features: { dispose(): void } }> {
  const remote = def.remote!;
  const { url, headers, oauth } = await resolveRemoteOf(def, ctx);
  const u = new URL(url);
  // Header names only: values may be tokens.
  const names = Object.keys(headers);
  const from = executor ? `; through executor "${executor.label}"` : '';
  log.lifecycle(`connecting to ${u.origin}${u.pathname} (${remote.type}${names.length ? `; headers ${names.join(', ')}` : ''}${from})`);
  const via = executor ? remoteVia(executor) : undefined;
  // OAuth unless the configuration authorizes the requests itself (or says "oauth": false).
  const ownAuthorization = names.some((n) => n.toLowerCase() === 'authorization');
  const useOAuth = auth && oauth?.enabled !== false && !ownAuthorization;
  if (useOAuth) await auth.bind(u, oauth, via);
  const transport = new RemoteMcpTransport(
    u,
    headers,
    remote.type,
    (line) => log.lifecycle(line),
    useOAuth ? { authProvider: auth.provider, fetch: auth.fetch, recover: (e) => auth.acceptLegacyIssuer(e) } : undefined,
    via?.fetch,
  );
  const caps = clientCapabilities(ctx.client);
  // The v2 SDK's transports carry every revision: `server/discover` first (a 2026-07-28 server
  // answers it), `initialize` for a 2025 one (docs/mcp.md, "Protocol versions").
  const sdk = newSdkClient(ctx, caps, log, onListChanged, hooks, 'auto', 'remote');
  const features = installClientFeatures(sdk, ctx.client, caps, def.name, REMOTE_HOST.id, (line) => log.lifecycle(line), hooks?.origin);
  return { transport, sdk, features };
}

/** How a remote server reached through `executor` makes its requests (and keys its sign-in). */
export function remoteVia(executor: McpExecutor): RemoteVia {
  return { fetch: executorFetch(executor.client, executor.label), executorId: executor.id };
}

/** A remote definition's URL, headers and `oauth` with their variables filled in (inputs asked for). */
export function resolveRemoteOf(def: McpServerDefinition, ctx: McpServerContext): ReturnType<typeof resolveRemote> {
  return resolveRemote(def, ctx.inputs(), {
    userHome: ctx.env['HOME'] ?? '/',
    env: ctx.env,
    resolveInput: (i) => ctx.resolveInput(i),
    readFile: () => Promise.reject(new Error('no files for a remote server')),
  });
}

/** The definition's launch with its variables filled in for `executor` (its home, its path separator, files read there). */
export function resolveLaunchOn(def: McpServerDefinition, executor: McpExecutor, ctx: McpServerContext): Promise<McpLaunch> {
  const info = executor.client.environmentInfo;
  const home = info?.userHomeDir ? pathFromUri(info.userHomeDir) : (ctx.env['HOME'] ?? '/');
  return resolveLaunch(def, ctx.inputs(), {
    userHome: home,
    pathSeparator: info?.platformOs === 'windows' ? '\\' : '/',
    env: ctx.env,
    resolveInput: (i) => ctx.resolveInput(i),
    readFile: async (p) => (await executor.client.readFile(p)).toString('utf8'),
  });
}

/**
 * The SDK client (the v2 package, which speaks 2026-07-28 and every 2025 revision) with our
 * capabilities, list_changed hooks and log handlers. `auto`: `connect` first asks
 * `server/discover`; a server that answers it runs on 2026-07-28, one that refuses it (or stays
 * silent) gets the 2025 `initialize` handshake. `legacy`: `initialize` only.
 */
function newSdkClient(
  ctx: McpServerContext,
  caps: ClientCapabilities,
  log: ServerLog,
  onListChanged: (kind: ListKind) => void,
  hooks: SessionHooks | undefined,
  negotiation: 'auto' | 'legacy',
  kind: 'stdio' | 'remote' = 'stdio',
): Client {
  const debounceMs = ctx.timings.listChangedDebounceMs;
  const sdk = new Client(ctx.clientInfo, {
    // The 1.x SDK's type of the same wire shape (what the gateway and the UI share).
    capabilities: caps as SdkClientCapabilities,
    // Over HTTP every server answers the probe at once (a 2025 one with a 4xx or a JSON-RPC error):
    // it waits as long as the start may.
    versionNegotiation:
      negotiation === 'legacy'
        ? { mode: 'legacy' }
        : kind === 'stdio'
          ? { mode: 'auto', probe: { timeoutMs: STDIO_PROBE_TIMEOUT_MS } }
          : { mode: 'auto' },
    listChanged: {
      tools: { autoRefresh: false, debounceMs, onChanged: () => onListChanged('tools') },
      resources: { autoRefresh: false, debounceMs, onChanged: () => onListChanged('resources') },
      prompts: { autoRefresh: false, debounceMs, onChanged: () => onListChanged('prompts') },
    },
  });
  sdk.setNotificationHandler('notifications/message', (n) => {
    const data = typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data);
    log.append('message', `[${n.params.level}${n.params.logger ? ` ${n.params.logger}` : ''}] ${data}`);
    hooks?.onNotification?.(n as LoggingMessageNotification);
  });
  sdk.setNotificationHandler('notifications/resources/updated', (n) => hooks?.onNotification?.(n as ResourceUpdatedNotification));
  sdk.onerror = (e) => {
    // A request abandoned while the server stops: the SDK's courtesy notice cannot reach a process
    // that is going away. Nothing failed that the user could act on.
    if (e.message.startsWith('Failed to send cancellation')) return;
    // Once a stop began, what fails is the stop's own echo (an aborted read, a request cut off),
    // not a problem of the server: a normal stop leaves no error lines (the stop has its own).
    if (hooks?.closing?.()) return;
    log.lifecycle(`protocol error: ${e.message}`);
  };
  return sdk;
}

/**
 * How long a stdio server may stay silent on `server/discover` before it counts as a 2025 server
 * (some never answer a request before `initialize`); the handshake then goes on within the start's
 * own bound.
 */
const STDIO_PROBE_TIMEOUT_MS = 5000;

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s;
}
