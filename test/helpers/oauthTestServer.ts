/**
 * A local OAuth authorization server and MCP resource server on 127.0.0.1, for the sign-in tests
 * (integration and real VS Code). Built from the SDK's server-side auth: `mcpAuthRouter` (metadata,
 * dynamic registration, authorize, token with PKCE, refresh) and `requireBearerAuth` in front of a
 * stateless Streamable HTTP MCP server at /mcp whose `whoami` tool answers the signed-in account.
 * The authorization page consents at once (it redirects with a code), so a "browser" that follows
 * redirects completes a sign-in. Everything it issues is recorded, for the tests that look for
 * secrets in logs. Its revocation endpoint (RFC 7009, the router's `/revoke`, advertised as
 * `revocation_endpoint`) records each request; `revocation` makes it fail or stay silent, or
 * leaves it out of the metadata.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError, ServerError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The few parts of express (the SDK's auth router needs it; it ships no types here) that we use. */
type Next = (err?: unknown) => void;
type Req = IncomingMessage & { body?: unknown };
type Res = ServerResponse & { status(code: number): Res; end(): Res };
type Handler = (req: Req, res: Res, next: Next) => void | Promise<void>;
interface ExpressApp {
  use(h: unknown): void;
  use(path: string, h: Handler): void;
  post(path: string, ...h: unknown[]): void;
  all(path: string, h: Handler): void;
  listen(port: number, host: string, cb: () => void): HttpServer;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const express = require('express') as { (): ExpressApp; json(): unknown };

export interface OAuthTestServer {
  /** The MCP endpoint (`…/mcp`). */
  url: string;
  /** Who signs in (the `email` claim of the access tokens). */
  account: string;
  /** Authorization requests (browser sign-ins), registrations, token refreshes so far. */
  counts(): { authorizations: number; registrations: number; refreshes: number; refused: number };
  /** Every secret handed out or received: codes, access and refresh tokens, client secrets. */
  secrets(): string[];
  /** Makes every access token issued so far invalid (as if expired): the next request gets a 401. */
  expireAccessTokens(): void;
  /** The revocation requests the endpoint got, in order (what kind of live token each named, if any). */
  revocations(): Revocation[];
  /** Whether `token` (access or refresh) is still honoured. */
  isLive(token: string): boolean;
  close(): Promise<void>;
}

export interface Revocation {
  client: string;
  hint: string | undefined;
  /** The live token it named: `refresh`/`access`, or `unknown` (already gone, or never issued). */
  named: 'refresh' | 'access' | 'unknown';
}

/** The revocation endpoint: `ok` (revokes), `fail` (answers HTTP 500), `hang` (never answers), `none` (not advertised). */
export type RevocationMode = 'ok' | 'fail' | 'hang' | 'none';

/** An unsigned JWT-shaped access token carrying the account, as many authorization servers issue. */
function accessToken(account: string): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ email: account, sub: randomUUID() })}.${randomBytes(16).toString('base64url')}`;
}

export async function startOAuthTestServer(
  options: { account?: string; tokenLifetimeS?: number; revocation?: RevocationMode } = {},
): Promise<OAuthTestServer> {
  const account = options.account ?? 'alice@example.test';
  const clients = new Map<string, OAuthClientInformationFull>();
  const codes = new Map<string, { client: string; params: AuthorizationParams }>();
  const tokens = new Map<string, AuthInfo>();
  const refreshTokens = new Map<string, { client: string; scopes: string[] }>();
  const secrets = new Set<string>();
  const counts = { authorizations: 0, registrations: 0, refreshes: 0, refused: 0 };
  const revocations: Revocation[] = [];
  const revocation = options.revocation ?? 'ok';

  const issue = (client: string, scopes: string[], resource: URL | undefined): OAuthTokens => {
    const access = accessToken(account);
    const refresh = randomBytes(24).toString('base64url');
    const lifetime = options.tokenLifetimeS ?? 3600;
    tokens.set(access, { token: access, clientId: client, scopes, expiresAt: Math.floor(Date.now() / 1000) + lifetime, resource });
    refreshTokens.set(refresh, { client, scopes });
    secrets.add(access).add(refresh);
    return { access_token: access, token_type: 'Bearer', expires_in: lifetime, refresh_token: refresh, scope: scopes.join(' ') };
  };

  const provider: OAuthServerProvider = {
    clientsStore: {
      getClient: (id) => clients.get(id),
      registerClient: (c) => {
        counts.registrations++;
        const full: OAuthClientInformationFull = { ...c, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) };
        if (full.client_secret) secrets.add(full.client_secret);
        clients.set(full.client_id, full);
        return full;
      },
    },
    authorize: (client, params, res) => {
      counts.authorizations++;
      const code = randomBytes(16).toString('base64url');
      secrets.add(code);
      codes.set(code, { client: client.client_id, params });
      const to = new URL(params.redirectUri);
      to.searchParams.set('code', code);
      if (params.state !== undefined) to.searchParams.set('state', params.state);
      res.redirect(to.href);
      return Promise.resolve();
    },
    challengeForAuthorizationCode: (_client, code) => {
      const c = codes.get(code);
      if (!c) return Promise.reject(new InvalidGrantError('unknown code'));
      return Promise.resolve(c.params.codeChallenge);
    },
    exchangeAuthorizationCode: (client, code) => {
      const c = codes.get(code);
      codes.delete(code);
      if (!c || c.client !== client.client_id) return Promise.reject(new InvalidGrantError('unknown code'));
      return Promise.resolve(issue(client.client_id, c.params.scopes ?? [], c.params.resource));
    },
    exchangeRefreshToken: (client, refresh, _scopes, resource) => {
      const r = refreshTokens.get(refresh);
      refreshTokens.delete(refresh);
      if (!r || r.client !== client.client_id) return Promise.reject(new InvalidGrantError('unknown refresh token'));
      counts.refreshes++;
      return Promise.resolve(issue(client.client_id, r.scopes, resource));
    },
    verifyAccessToken: (token) => {
      const info = tokens.get(token);
      if (!info) return Promise.reject(new InvalidTokenError('unknown or expired token'));
      return Promise.resolve(info);
    },
  };
  if (revocation !== 'none')
    // The router authenticated the client (client_id, and its secret when it has one) before this.
    provider.revokeToken = (client, { token, token_type_hint: hint }) => {
      const named = refreshTokens.has(token) ? 'refresh' : tokens.has(token) ? 'access' : 'unknown';
      revocations.push({ client: client.client_id, hint, named });
      if (revocation === 'hang') return new Promise<void>(() => undefined);
      if (revocation === 'fail') return Promise.reject(new ServerError('revocation is down'));
      refreshTokens.delete(token);
      tokens.delete(token);
      return Promise.resolve();
    };

  const app = express();
  let base = '';
  const http: HttpServer = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const mcpUrl = new URL(`${base}/mcp`);
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: mcpUrl,
      scopesSupported: ['mcp'],
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
      revocationOptions: { rateLimit: false },
    }),
  );
  const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  app.use('/mcp', (req, res, next) => {
    void bearer(req as never, res as never, (err?: unknown) => {
      if (err) return next(err);
      next();
    });
    res.on('finish', () => {
      if (res.statusCode === 401) counts.refused++;
    });
  });
  app.post('/mcp', express.json(), async (req: Req, res: Res) => {
    const mcp = new Server({ name: 'oauth-test', version: '1.0.0' }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'whoami', description: 'The signed-in account', inputSchema: { type: 'object' } }],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: account }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // (a fresh server and transport per request: the server keeps no session)
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', (_req, res) => void res.status(405).end());

  return {
    url: mcpUrl.href,
    account,
    counts: () => ({ ...counts }),
    secrets: () => [...secrets],
    expireAccessTokens: () => tokens.clear(),
    revocations: () => [...revocations],
    isLive: (token) => tokens.has(token) || refreshTokens.has(token),
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

/** The browser of the tests: follows the authorization page's redirects until the loopback redirect answers. */
export async function followRedirects(url: URL): Promise<void> {
  let at = url;
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(at, { redirect: 'manual' });
    await res.body?.cancel();
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      at = new URL(location, at);
      continue;
    }
    if (!res.ok) throw new Error(`the page answered HTTP ${res.status}`);
    return;
  }
  throw new Error('too many redirects');
}
