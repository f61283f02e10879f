import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike, Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
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
}

/**
 * An `http` (Streamable HTTP; on a 4xx to the first request it falls back to the older HTTP+SSE
 * transport, as the spec's compatibility note says) or `sse` MCP server, connected from the
 * extension host. Same surface as ExecProcessTransport where the manager looks (`exit`, `closed`,
 * `close`), with no process: the server is not ours to run.
 */
export class RemoteMcpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly process = undefined;
  private inner: Transport | undefined;
  private answered = false;
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
    try {
      await inner.send(message, options);
      this.answered = true;
    } catch (e) {
      if (!this.auth && is401(e)) throw this.failedToStart(new Error(OAUTH_MESSAGE));
      const status = e instanceof StreamableHTTPError ? e.code : undefined;
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

  /** The first request failed: the close that follows reports this as the end, not as a stop. */
  private failedToStart(e: Error): Error {
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
    // a 403 `insufficient_scope`; `fetch` lets the session see the server's challenges.
    const auth = this.auth ? { authProvider: this.auth.authProvider, fetch: this.auth.fetch } : {};
    const base = this.auth?.fetch ?? fetch;
    const t: Transport =
      kind === 'http'
        ? new StreamableHTTPClientTransport(this.url, { requestInit, ...auth })
        : new SSEClientTransport(this.url, {
            requestInit,
            ...auth,
            // The SSE GET carries the headers too (the SDK's EventSource only sends them through fetch).
            eventSourceInit: {
              fetch: (u, init) => base(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...this.headers } }),
            },
          });
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

function is401(e: unknown): boolean {
  if (e instanceof StreamableHTTPError) return e.code === 401;
  const m = errorMessage(e);
  return /\b401\b|Unauthorized/i.test(m);
}
