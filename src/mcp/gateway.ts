import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type LoggingLevel,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestOrigin } from './clientFeatures';
import { errorMessage, makePrivateSubdir, sweepDeadDirs } from '../util';
import type { McpServer } from './mcpServer';
import type { McpServerManager } from './serverManager';

/** The first line a proxy sends: which server it speaks for. */
export interface GatewayHello {
  execBridgeMcpProxy: 1;
  server: string;
}

/** A tool call through the gateway may run this long (the server's progress resets it). */
const CALL_TIMEOUT_MS = 10 * 60_000;
/** A hello longer than this is not one of ours. */
const MAX_HELLO = 4096;

/**
 * Lets VS Code's own MCP client use the servers we run, without a second copy of any of them.
 * VS Code starts `node dist/cli.js mcp-proxy <socket> <name>` (our stdio definition); the proxy
 * pipes its stdio to this local socket, and here an MCP server answers for our running server:
 * lists from our client, calls forwarded to it (progress and cancellation pass through).
 *
 * Lifecycle is shared: a proxy connecting starts the server if it is not running; the last proxy
 * of a server going away (VS Code stopped it) stops it; our server stopping or crashing closes
 * its proxies, so VS Code shows it stopped. Executor reconnects happen below our client and leave
 * the sessions alone.
 *
 * The socket lives in a fresh 0700 folder (a named pipe with a random name on Windows): only this
 * user reaches it, and no secret is on any command line.
 */
/** `<private dir>/mcp-<pid>-XXXXXX/s`: the gateway socket of one extension host. */
const GATEWAY_DIR_PREFIX = 'mcp-';

export class McpGateway {
  private net: NetServer | undefined;
  private dir: string | undefined;
  private pathValue: string | undefined;
  private readonly sessions = new Map<string, Set<GatewaySession>>();
  private readonly subscription: { dispose(): void };
  private disposed = false;

  constructor(
    private readonly manager: McpServerManager,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.subscription = manager.onDidChangeServer(({ server, change }) => this.onServerChange(server, change));
  }

  /** The socket (or pipe) proxies connect to; set once `listen` resolved. */
  get socketPath(): string | undefined {
    return this.pathValue;
  }

  /** How many proxies are connected for `name` (all servers when omitted). */
  sessionCount(name?: string): number {
    if (name !== undefined) return this.sessions.get(name)?.size ?? 0;
    let n = 0;
    for (const s of this.sessions.values()) n += s.size;
    return n;
  }

  async listen(): Promise<string> {
    if (this.pathValue) return this.pathValue;
    let path: string;
    if (process.platform === 'win32') {
      path = `\\\\.\\pipe\\exec-bridge-mcp-${randomBytes(12).toString('hex')}`;
    } else {
      // In our private directory (0700, hidden from every sandbox): a sandboxed command with the
      // network on could otherwise connect and drive our MCP servers. A socket path has ~100 bytes.
      sweepDeadDirs(GATEWAY_DIR_PREFIX);
      this.dir = makePrivateSubdir(GATEWAY_DIR_PREFIX);
      path = join(this.dir, 's');
    }
    const net = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      net.once('error', reject);
      net.listen(path, () => {
        net.off('error', reject);
        resolve();
      });
    });
    this.net = net;
    this.pathValue = path;
    return path;
  }

  /** Closes every proxy session and the socket; servers keep running (the manager owns them). */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.subscription.dispose();
    for (const set of this.sessions.values()) for (const s of set) s.close('the extension is shutting down');
    this.sessions.clear();
    const net = this.net;
    if (net) await new Promise<void>((r) => net.close(() => r()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  private onServerChange(server: McpServer, change: string): void {
    const set = this.sessions.get(server.name);
    if (!set || set.size === 0) return;
    if (change === 'lists') {
      for (const s of set) s.listsChanged();
      return;
    }
    const kind = server.state.kind;
    if (kind !== 'ready' && kind !== 'starting') {
      for (const s of [...set]) s.close(`the server is ${kind}`);
    }
  }

  private accept(socket: Socket): void {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const nl = buffered.indexOf(10);
      if (nl < 0) {
        if (buffered.length > MAX_HELLO) socket.destroy();
        return;
      }
      socket.off('data', onData);
      socket.pause();
      const rest = buffered.subarray(nl + 1);
      if (rest.length > 0) socket.unshift(rest);
      let hello: Partial<GatewayHello>;
      try {
        hello = JSON.parse(buffered.subarray(0, nl).toString('utf8')) as Partial<GatewayHello>;
      } catch {
        socket.destroy();
        return;
      }
      void this.open(socket, hello);
    };
    socket.on('data', onData);
    socket.on('error', () => undefined);
  }

  private async open(socket: Socket, hello: Partial<GatewayHello>): Promise<void> {
    const server = hello.execBridgeMcpProxy === 1 && typeof hello.server === 'string' ? this.manager.get(hello.server) : undefined;
    if (!server) {
      socket.end(`${JSON.stringify({ execBridgeMcpProxyError: `no MCP server named "${String(hello.server)}" in Exec Bridge` })}\n`);
      return;
    }
    this.log(`${server.name}: VS Code's MCP client connected`);
    if (server.state.kind !== 'ready') {
      try {
        await server.start();
      } catch (e) {
        socket.end(`${JSON.stringify({ execBridgeMcpProxyError: errorMessage(e) })}\n`);
        return;
      }
    }
    if (server.state.kind !== 'ready' || socket.destroyed) {
      const why = `"${server.name}" did not start: ${server.describe()}`;
      socket.end(`${JSON.stringify({ execBridgeMcpProxyError: why })}\n`);
      return;
    }
    // The go-ahead: from here on the socket carries MCP.
    socket.write(`${JSON.stringify({ execBridgeMcpProxyReady: 1 })}\n`);
    const session = new GatewaySession(
      server,
      socket,
      (byProxy) => {
        const set = this.sessions.get(server.name);
        set?.delete(session);
        if (set?.size === 0) this.sessions.delete(server.name);
        // VS Code stopped it (its proxy went away): stop ours too, unless another proxy still uses it.
        if (byProxy && !this.disposed && (set?.size ?? 0) === 0 && server.isActive) {
          this.log(`${server.name}: stopped from VS Code's MCP list`);
          void server.stop("stopped from VS Code's MCP server list").catch(() => undefined);
        }
      },
      () => this.sessions.get(server.name) ?? [],
    );
    let set = this.sessions.get(server.name);
    if (!set) this.sessions.set(server.name, (set = new Set()));
    set.add(session);
    await session.connect();
  }
}

/** RFC 5424 severities as MCP names them, least severe first. */
const LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * One proxy's MCP session: an SDK server over the socket, answering from our running server.
 * What only the server can answer is forwarded: calls, reads, prompts, completions, resource
 * subscriptions (counted per uri across sessions, released when the session ends) and the log
 * level; the server's `notifications/message` (at the session's level or above) and
 * `notifications/resources/updated` (for the uris the session subscribed to) come back. What the
 * server asks while serving one of this session's calls (elicitation, sampling) is asked of this
 * session's client, when it has that capability.
 */
class GatewaySession {
  private readonly sdk: Server;
  private closing = false;
  private readonly capabilities: ServerCapabilities;
  private readonly subscribedUris = new Set<string>();
  /** The level this session asked for (`logging/setLevel`); undefined: every message. */
  private level: LoggingLevel | undefined;
  private readonly notices: { dispose(): void };

  constructor(
    private readonly server: McpServer,
    private readonly socket: Socket,
    private readonly onClosed: (byProxy: boolean) => void,
    /** Every open session of the same server, this one included. */
    private readonly peers: () => Iterable<GatewaySession>,
  ) {
    const upstream = server.capabilities ?? {};
    const caps: ServerCapabilities = { tools: { listChanged: true } };
    if (upstream.resources) caps.resources = { listChanged: true, ...(upstream.resources.subscribe ? { subscribe: true } : {}) };
    if (upstream.logging) caps.logging = {};
    if (upstream.prompts) caps.prompts = { listChanged: true };
    // VS Code asks for completions of prompt arguments and resource-template variables.
    if (upstream.completions) caps.completions = {};
    this.capabilities = caps;
    const info = server.serverInfo;
    this.sdk = new Server(
      {
        name: info?.name ?? server.name,
        version: info?.version ?? '0.0.0',
        title: `${server.name} (Exec Bridge)`,
        // The server's own icons, site and description, for VS Code's list.
        ...(info?.icons ? { icons: info.icons } : {}),
        ...(info?.websiteUrl ? { websiteUrl: info.websiteUrl } : {}),
        ...(info?.description ? { description: info.description } : {}),
      },
      { capabilities: caps, ...(server.instructions ? { instructions: server.instructions } : {}) },
    );
    this.install();
    this.notices = server.onNotification((n) => {
      if (n.method === 'notifications/message') {
        if (this.level !== undefined && LEVELS.indexOf(n.params.level) < LEVELS.indexOf(this.level)) return;
        void this.sdk.notification(n).catch(() => undefined);
      } else if (this.subscribedUris.has(n.params.uri)) {
        void this.sdk.sendResourceUpdated(n.params).catch(() => undefined);
      }
    });
    socket.once('close', () => this.closed(!this.closing));
  }

  /** The level this session asked for, if any (the gateway sets the server to the most verbose of its sessions'). */
  get loggingLevel(): LoggingLevel | undefined {
    return this.level;
  }

  async connect(): Promise<void> {
    const transport = new StdioServerTransport(this.socket, this.socket);
    await this.sdk.connect(transport);
    this.socket.resume();
  }

  listsChanged(): void {
    void this.sdk.sendToolListChanged().catch(() => undefined);
    if (this.capabilities.resources) void this.sdk.sendResourceListChanged().catch(() => undefined);
    if (this.capabilities.prompts) void this.sdk.sendPromptListChanged().catch(() => undefined);
  }

  close(reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.server.log.lifecycle(`closing VS Code's session: ${reason}`);
    this.socket.end();
    // A proxy that does not hang up is cut off.
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  private closed(byProxy: boolean): void {
    this.closing = true;
    this.notices.dispose();
    // Our subscriptions go with the session (the server is told when no other session holds them).
    for (const uri of this.subscribedUris) void this.server.unsubscribeResource(uri).catch(() => undefined);
    this.subscribedUris.clear();
    void this.sdk.close().catch(() => undefined);
    this.onClosed(byProxy);
  }

  /** The server logs at the most verbose level any of its sessions asked for; each session filters to its own. */
  private async setServerLevel(signal: AbortSignal): Promise<void> {
    let lowest = LEVELS.length;
    for (const p of this.peers()) if (p.loggingLevel !== undefined) lowest = Math.min(lowest, LEVELS.indexOf(p.loggingLevel));
    const level = LEVELS[lowest];
    if (level !== undefined) await this.server.setLoggingLevel(level, { signal });
  }

  private originValue: RequestOrigin | undefined;

  /**
   * VS Code's client as the origin of a call: it answers what the server asks while serving it,
   * where it can. One object per session (its capabilities are fixed at initialize), so that calls
   * of one session in flight together count as one origin.
   */
  private origin(): RequestOrigin {
    if (this.originValue) return this.originValue;
    const caps = this.sdk.getClientCapabilities();
    return (this.originValue = {
      ...(caps?.elicitation
        ? {
            elicit: (params, signal) => this.sdk.elicitInput(params, { signal }),
            elicitUrl: caps.elicitation.url !== undefined,
          }
        : {}),
      ...(caps?.sampling ? { sample: (params, signal) => this.sdk.createMessage(params, { signal }) } : {}),
    });
  }

  private install(): void {
    const s = this.server;
    const sdk = this.sdk;
    sdk.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...s.tools] }));
    sdk.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const name = req.params.name;
      if (!s.tools.some((t) => t.name === name)) throw new McpError(ErrorCode.InvalidParams, `tool "${name}" is not enabled`);
      const token = req.params._meta?.progressToken;
      return s.callTool(name, req.params.arguments ?? {}, {
        signal: extra.signal,
        timeout: CALL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
        origin: this.origin(),
        ...(token !== undefined
          ? {
              onprogress: (p) => {
                void extra
                  .sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } })
                  .catch(() => undefined);
              },
            }
          : {}),
      });
    });
    if (this.capabilities.resources) {
      sdk.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [...s.resources] }));
      sdk.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [...s.resourceTemplates] }));
      sdk.setRequestHandler(ReadResourceRequestSchema, (req, extra) => s.readResource(req.params.uri, { signal: extra.signal }));
      if (this.capabilities.resources?.subscribe) {
        sdk.setRequestHandler(SubscribeRequestSchema, async (req, extra) => {
          const uri = req.params.uri;
          if (!this.subscribedUris.has(uri)) {
            // Listed before the server answers: an update it sends right after must not be missed.
            this.subscribedUris.add(uri);
            try {
              await s.subscribeResource(uri, { signal: extra.signal });
            } catch (e) {
              this.subscribedUris.delete(uri);
              throw e;
            }
          }
          return {};
        });
        sdk.setRequestHandler(UnsubscribeRequestSchema, async (req, extra) => {
          const uri = req.params.uri;
          if (this.subscribedUris.delete(uri)) await s.unsubscribeResource(uri, { signal: extra.signal });
          return {};
        });
      }
    }
    if (this.capabilities.logging) {
      sdk.setRequestHandler(SetLevelRequestSchema, async (req, extra) => {
        this.level = req.params.level;
        await this.setServerLevel(extra.signal);
        return {};
      });
    }
    if (this.capabilities.completions) {
      sdk.setRequestHandler(CompleteRequestSchema, (req, extra) => s.complete(req.params, { signal: extra.signal }));
    }
    if (this.capabilities.prompts) {
      sdk.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [...s.prompts] }));
      sdk.setRequestHandler(GetPromptRequestSchema, (req, extra) =>
        s.getPrompt(req.params.name, req.params.arguments ?? {}, { signal: extra.signal }),
      );
    }
  }
}
