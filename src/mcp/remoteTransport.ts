import {
  SdkHttpError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type FetchLike,
  type JSONRPCMessage,
  type OAuthClientProvider,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { Deferred, errorMessage } from '../util';
import { isSignInRequired } from './authSession';
import type { TransportExit } from './execProcessTransport';

/** A 401 where we do not sign in (an `Authorization` header is configured, or `"oauth": false`). */
export const OAUTH_MESSAGE =
  'the server refused the request (HTTP 401): the configured "headers" do not authorize it. Remove the Authorization header (and any "oauth": false) to sign in with OAuth instead';

/** How a remote server authenticates: the session's SDK OAuth provider and the fetch that records its challenges. */
export interface RemoteAuth {
  authProvider: OAuthClientProvider;
  fetch: FetchLike;
  /** Whether an OAuth error of a request was dealt with so that the request may go once more. */
  recover(e: unknown): Promise<boolean>;
}

/**
 * An `http` (Streamable HTTP; on a 4xx to the first request it falls back to the older HTTP+SSE
 * transport, as the spec's compatibility note says) or `sse` MCP server, connected from the
 * extension host over the v2 SDK's transports (`@modelcontextprotocol/client`), which carry
 * 2026-07-28 as well as the 2025 revisions. Same surface as ExecProcessTransport where the
 * manager looks (`exit`, `closed`, `close`), with no process: the server is not ours to run.
 */
export class RemoteMcpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly process = undefined;
  private inner: Transport | undefined;
  private answered = false;
  private recovered = false;
  private exitValue: TransportExit | undefined;
  private closeRequested = false;
  private startError: Error | undefined;
  private readonly closedDeferred = new Deferred<void>();
  /** Resolves once the connection is over, however it ended. */
  readonly closed = this.closedDeferred.promise;
  private version: string | undefined;
  /** Which transport carries the session (after a fallback: `sse`). */
  kind: 'http' | 'sse';

  constructor(
    private readonly url: URL,
    private readonly headers: Record<string, string>,
    type: 'http' | 'sse',
    private readonly log: (line: string) => void,
    private readonly auth?: RemoteAuth,
    /** Makes the requests when not the global fetch (the executor's, for `"connectFrom": "executor"`). */
    private readonly fetch?: FetchLike,
  ) {
    this.kind = type;
  }

  get exit(): TransportExit | undefined {
    return this.exitValue;
  }
  get protocolVersion(): string | undefined {
    return this.version;
  }
  get sessionId(): string | undefined {
    return this.inner?.sessionId;
  }
  /** Streamable HTTP opens one POST per request: on 2026-07-28 a cancel closes it (no notification). */
  get hasPerRequestStream(): boolean {
    return this.kind === 'http';
  }

  setProtocolVersion(version: string): void {
    this.version = version;
    this.inner?.setProtocolVersion?.(version);
  }

  async start(): Promise<void> {
    this.inner = this.make(this.kind);
    await this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const inner = this.inner;
    if (!inner) throw new Error('not started');
    if (isProbe(message)) return this.sendProbe(inner, message, options);
    try {
      await inner.send(message, options);
      this.answered = true;
    } catch (e) {
      if (await this.recover(e)) return this.send(message, options);
      if (!this.auth && is401(e)) throw this.failedToStart(new Error(OAUTH_MESSAGE));
      const status = statusOf(e);
      // A server from before Streamable HTTP answers its POST with 404/405 (or 400): try HTTP+SSE.
      // (Not on 401/403: that is about authorization, which the SDK's provider handles.)
      if (!this.answered && this.kind === 'http' && (status === 400 || status === 404 || status === 405)) {
        this.log(`Streamable HTTP refused (HTTP ${status}); trying the HTTP+SSE transport`);
        this.kind = 'sse';
        const old = inner;
        old.onclose = undefined;
        await old.close().catch(() => undefined);
        this.inner = this.make('sse');
        await this.inner.start();
        await this.inner.send(message, options);
        this.answered = true;
        return;
      }
      throw this.answered ? e : this.failedToStart(e instanceof Error ? e : new Error(errorMessage(e)));
    }
  }

  /**
   * The SDK's `server/discover` (2026-07-28 version negotiation): its error goes back as the SDK
   * threw it, since the SDK reads the era from it — a 4xx other than 401/403 means a 2025 server,
   * which gets `initialize` next (and, on Streamable HTTP's refusal, the HTTP+SSE fallback then).
   * A refusal of authorization ends the start: the reason the run ends with is ours.
   */
  private async sendProbe(inner: Transport, message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await inner.send(message, options);
      this.answered = true;
    } catch (e) {
      if (await this.recover(e)) return this.sendProbe(inner, message, options);
      const status = statusOf(e);
      if (!this.auth && is401(e)) this.failedToStart(new Error(OAUTH_MESSAGE));
      else if (status === undefined || status < 400 || status >= 500 || status === 401 || status === 403)
        this.failedToStart(e instanceof Error ? e : new Error(errorMessage(e)));
      throw e;
    }
  }

  /** Once per connection: the session may make an OAuth error good (a 2025-03-26 server's issuer). */
  private async recover(e: unknown): Promise<boolean> {
    if (!this.auth || this.recovered) return false;
    if (!(await this.auth.recover(e))) return false;
    this.recovered = true;
    return true;
  }

  /** The first request failed: the close that follows reports this as the end, not as a stop. */
  private failedToStart(e: Error): Error {
    if (!this.fetch && UNREACHABLE.test(e.message)) {
      // From the window: the server may be one only the executor reaches (docs/mcp.md).
      e = new Error(
        `${e.message}: this window could not reach ${this.url.origin}; if only the executor can, set "connectFrom": "executor"`,
        { cause: e },
      );
    }
    this.startError ??= e;
    return e;
  }

  async close(): Promise<void> {
    this.closeRequested = true;
    const inner = this.inner;
    if (!inner) {
      this.finish({ exitCode: undefined, requested: true });
      return;
    }
    // Streamable HTTP: end the session on the server too (DELETE), as a stop should.
    if (inner instanceof StreamableHTTPClientTransport && inner.sessionId) await inner.terminateSession().catch(() => undefined);
    await inner.close().catch(() => undefined);
    this.finish(
      this.startError ? { exitCode: undefined, requested: false, error: this.startError } : { exitCode: undefined, requested: true },
    );
  }

  private make(kind: 'http' | 'sse'): Transport {
    const requestInit: RequestInit = { headers: this.headers };
    // OAuth: the SDK's transports ask the provider for tokens, refresh them on a 401 and step up on
    // a 403 `insufficient_scope`; `fetch` lets the session see the server's challenges. (The SSE
    // GET carries the configured headers and the token too: the v2 transport adds them itself.)
    const fetch = this.auth?.fetch ?? this.fetch;
    const options = { requestInit, ...(this.auth ? { authProvider: this.auth.authProvider } : {}), ...(fetch ? { fetch } : {}) };
    const t: Transport = kind === 'http' ? new StreamableHTTPClientTransport(this.url, options) : new SSEClientTransport(this.url, options);
    if (this.version) t.setProtocolVersion?.(this.version);
    t.onmessage = (m) => this.onmessage?.(m);
    t.onerror = (e) => {
      // "Sign-in required" is said once, by the session, and again by whatever request it stopped.
      if (isSignInRequired(e)) return;
      if (!this.auth && is401(e)) this.onerror?.(new Error(OAUTH_MESSAGE));
      else this.onerror?.(e);
    };
    t.onclose = () => {
      if (this.inner !== t) return;
      if (this.startError) this.finish({ exitCode: undefined, requested: false, error: this.startError });
      else
        this.finish({
          exitCode: undefined,
          requested: this.closeRequested,
          ...(this.closeRequested ? {} : { error: new Error(`the connection to ${this.url.origin} closed`) }),
        });
    };
    return t;
  }

  private finish(exit: TransportExit): void {
    if (this.exitValue) return;
    this.exitValue = exit;
    this.closedDeferred.resolve();
    this.onclose?.();
  }
}

/** How this process's fetch says a host or port was out of reach (undici: "fetch failed", with the system's code). */
const UNREACHABLE = /fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/;

/** The HTTP status the SDK's transport was answered with (its errors carry it). */
function statusOf(e: unknown): number | undefined {
  return e instanceof SdkHttpError ? e.status : undefined;
}

function is401(e: unknown): boolean {
  const status = statusOf(e);
  if (status !== undefined) return status === 401;
  return /\b401\b|Unauthorized/i.test(errorMessage(e));
}

function isProbe(m: JSONRPCMessage): boolean {
  return 'method' in m && m.method === 'server/discover' && 'id' in m;
}
