import { randomBytes } from 'node:crypto';
import {
  auth,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  IssuerMismatchError,
  type FetchLike,
  type OAuthClientInformationMixed,
  type OAuthDiscoveryState,
  type OAuthTokens,
} from '@modelcontextprotocol/client';
import { Emitter, errorMessage, type Event } from '../util';
import { McpOAuthProvider } from './authProvider';
import { LoopbackRedirect } from './authRedirect';
import { revokeTokens } from './authRevoke';
import type { McpAuthStore } from './authStore';
import type { McpOAuthSettings } from './config/auth';

/** What signing in needs from the host (VS Code: SecretStorage, env.openExternal, env.asExternalUri). */
export interface McpAuthHooks {
  store: McpAuthStore;
  /** Shows the authorization server's page to the user (a browser). Rejects when it could not. */
  openBrowser(server: string, url: URL): Promise<void>;
  /** The loopback redirect URL as the browser reaches it (remote windows forward the port). Default: as is. */
  externalRedirect?(url: URL): Promise<URL>;
  /** How long the browser step may take. Default 5 minutes. */
  signInTimeoutMs?: number;
  /** How long Sign Out waits for the authorization server to revoke the tokens. Default 10 s. */
  revokeTimeoutMs?: number;
}

/** Where a server's sign-in stands, for the tree and the commands. No secret in here. */
export type McpAuthStatus =
  | { kind: 'none' }
  | { kind: 'signInRequired'; reason: string; authServer?: string; scope?: string }
  | { kind: 'signingIn'; authServer?: string }
  | { kind: 'signedIn'; account: string | undefined; authServer: string | undefined; scope?: string; expiresAt?: number };

/** A request needs a browser sign-in that was not asked for (a start, a call): "Sign in…" does it. */
export class SignInRequiredError extends Error {
  constructor(
    message: string,
    readonly scope?: string,
  ) {
    super(message);
    this.name = 'SignInRequiredError';
  }
}

export function isSignInRequired(e: unknown): e is SignInRequiredError {
  return e instanceof SignInRequiredError;
}

/** One server's stored sign-in (a SecretStorage entry): all of it is secret. */
export interface StoredAuth {
  url: string;
  /** From dynamic registration or a metadata document; pre-registered clients keep only `issuer` here. */
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** When `tokens` were issued (ms), for their expiry. */
  obtainedAt?: number;
  discovery?: OAuthDiscoveryState;
}

/** Where a server's requests are made when not from this process: its executor (`"connectFrom": "executor"`). */
export interface RemoteVia {
  /** Makes every request of the server and of its sign-in (./executorFetch.ts). */
  fetch: FetchLike;
  /** Part of the stored sign-in's key: the same URL on two executors may be two servers. */
  executorId: string;
}

interface Challenge {
  resourceMetadataUrl?: URL;
  scope?: string;
}

/**
 * A remote server's OAuth: its stored sign-in, the SDK provider its transports use
 * (./authProvider.ts, background mode: stored tokens, refresh, client credentials — never a
 * browser), and the interactive sign-in behind "Sign in…" (browser + loopback redirect). All OAuth
 * itself is the SDK's `auth()`: discovery (RFC 9728, RFC 8414 / OIDC, the 2025-03-26 fallbacks),
 * registration (dynamic, metadata document, pre-registered), PKCE, `resource`, scopes, refresh.
 */
export class McpAuthSession {
  private stored: StoredAuth | undefined;
  private key: string | undefined;
  private url: URL | undefined;
  private settingsValue: McpOAuthSettings | undefined;
  private via: RemoteVia | undefined;
  private statusValue: McpAuthStatus = { kind: 'none' };
  private readonly changed = new Emitter<void>();
  readonly onDidChange: Event<void> = this.changed.event;
  /** The last 401/403 challenge of the server (its `WWW-Authenticate`): what a sign-in asks for. */
  private challenge: Challenge | undefined;
  /** A 403 `insufficient_scope` was seen: a refresh cannot widen the grant, only a new sign-in can. */
  stepUpScope: string | undefined;
  /** Set while "Sign in…" runs: the provider may then send the user to the browser. */
  interactive: { redirectUrl: URL; state: string } | undefined;
  readonly provider: McpOAuthProvider;

  constructor(
    readonly serverName: string,
    private readonly hooks: McpAuthHooks,
    private readonly log: (line: string) => void,
    clientName: string,
  ) {
    this.provider = new McpOAuthProvider(this, clientName);
  }

  get status(): McpAuthStatus {
    return this.statusValue;
  }
  get settings(): McpOAuthSettings | undefined {
    return this.settingsValue;
  }
  get data(): StoredAuth | undefined {
    return this.stored;
  }
  get serverUrl(): URL | undefined {
    return this.url;
  }

  /**
   * What makes this server's requests: the executor's fetch when it is reached through one, else
   * this process's. Every request of the sign-in goes the same way as the server's own (discovery,
   * registration, token, refresh, revocation, the identity provider's exchange): only the browser
   * page is the user's.
   */
  readonly baseFetch: FetchLike = (url, init) => (this.via ? this.via.fetch(url, init) : fetch(url, init));

  /** Loads the stored sign-in for this server at `url` (each start and each sign-in), reached `via` its executor or not. */
  async bind(url: URL, settings: McpOAuthSettings | undefined, via?: RemoteVia): Promise<void> {
    this.settingsValue = settings;
    this.url = url;
    this.via = via;
    const key = via ? `${this.serverName}|executor:${via.executorId}|${url.href}` : `${this.serverName}|${url.href}`;
    if (key !== this.key) {
      this.key = key;
      this.challenge = undefined;
      this.stepUpScope = undefined;
      this.stored = undefined;
      const raw = await this.hooks.store.get(storeKey(key));
      if (raw !== undefined) {
        try {
          const v = JSON.parse(raw) as StoredAuth;
          if (v.url === url.href) this.stored = v;
        } catch {
          this.log('the stored sign-in could not be read; it is ignored');
        }
      }
      this.refreshStatus();
    }
  }

  /**
   * The transport's fetch: remembers the server's last challenge (`WWW-Authenticate` of a 401 or
   * a 403 `insufficient_scope`) so that "Sign in…" asks for the scope and metadata the server
   * named. Responses of the authorization server are not challenges.
   */
  readonly fetch: FetchLike = async (url, init) => {
    const res = await this.baseFetch(url, init);
    if ((res.status === 401 || res.status === 403) && this.url && sameResource(new URL(String(url)), this.url)) {
      const { resourceMetadataUrl, scope, error } = extractWWWAuthenticateParams(res);
      if (res.status === 401 || error === 'insufficient_scope') {
        this.challenge = { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
      }
      if (res.status === 403 && error === 'insufficient_scope') {
        this.stepUpScope = scope ?? '';
        this.log(`the server asks for more access${scope ? ` (scope "${scope}")` : ''}`);
      }
    }
    return res;
  };

  /**
   * Signs in: client credentials and cross-app access without a browser, else authorization code
   * with PKCE — the authorization page opens in the browser and the redirect comes back to a
   * loopback listener. Resolves once tokens are stored; rejects with the reason otherwise.
   */
  async signIn(url: URL, settings: McpOAuthSettings | undefined, signal: AbortSignal, via?: RemoteVia): Promise<void> {
    if (settings?.enabled === false) throw new Error('sign-in is turned off for this server ("oauth": false)');
    await this.bind(url, settings, via);
    const challenge = this.challenge ?? (await this.probe(url));
    const options = {
      serverUrl: url,
      ...(challenge.scope ? { scope: challenge.scope } : {}),
      ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
      fetchFn: this.fetch,
    };
    this.setStatus({ kind: 'signingIn', ...authServerOf(this.stored) });
    const grant = settings?.grant ?? 'authorizationCode';
    this.log(`signing in (${grant === 'authorizationCode' ? 'browser' : grant}${challenge.scope ? `, scope "${challenge.scope}"` : ''})`);
    try {
      if (grant !== 'authorizationCode') {
        if ((await this.authorize(options)) !== 'AUTHORIZED') throw new Error('the authorization server did not issue a token');
      } else {
        await this.browserSignIn(options, settings, signal);
      }
    } catch (e) {
      this.interactive = undefined;
      this.refreshStatus(`the sign-in failed: ${errorMessage(e)}`);
      this.log(`sign-in failed: ${errorMessage(e)}`);
      throw e;
    }
    this.challenge = undefined;
    const st = this.statusValue;
    this.log(
      `signed in${st.kind === 'signedIn' && st.account ? ` as ${st.account}` : ''}${st.kind === 'signedIn' && st.authServer ? ` at ${st.authServer}` : ''}`,
    );
  }

  private async browserSignIn(options: Parameters<typeof auth>[1], settings: McpOAuthSettings | undefined, signal: AbortSignal) {
    const fixedPort = settings?.callbackPort;
    const redirect = await LoopbackRedirect.open(fixedPort ?? 0, fixedPort === undefined);
    try {
      const redirectUrl = (await this.hooks.externalRedirect?.(redirect.url)) ?? redirect.url;
      const registered = this.stored?.client;
      // A registration made for another redirect URI (another port) would be refused: register again.
      if (registered && 'redirect_uris' in registered && !settings?.clientId && !registered.redirect_uris.includes(redirectUrl.href)) {
        await this.update((s) => delete s.client);
      }
      const state = randomBytes(16).toString('base64url');
      this.interactive = { redirectUrl, state };
      // Listening before the browser opens: a fast browser may come back before auth() returns.
      const code = redirect.waitForCode(state, signal, this.hooks.signInTimeoutMs ?? 300_000);
      code.catch(() => undefined);
      const first = await this.authorize(options);
      if (first === 'REDIRECT') {
        const authorizationCode = await code;
        if ((await auth(this.provider, { ...options, authorizationCode })) !== 'AUTHORIZED')
          throw new Error('the authorization server did not issue a token');
      }
    } finally {
      this.interactive = undefined;
      await redirect.close();
    }
  }

  /** The SDK's `auth()`, once more after a 2025-03-26 server's issuer was accepted (acceptLegacyIssuer). */
  private async authorize(options: Parameters<typeof auth>[1]): ReturnType<typeof auth> {
    try {
      return await auth(this.provider, options);
    } catch (e) {
      if (await this.acceptLegacyIssuer(e)) return auth(this.provider, options);
      throw e;
    }
  }

  /**
   * A 2025-03-26 server — no protected-resource metadata, so its own origin is the authorization
   * server — whose metadata names an issuer on that origin under another path: the SDK's RFC 8414
   * §3.3 check refuses it, a revision the check postdates. Accepted for the same origin only (the
   * resource's own host vouches for it): the discovery is stored and `auth()` uses it as it is.
   * True when it was accepted (the caller tries again).
   */
  async acceptLegacyIssuer(e: unknown): Promise<boolean> {
    if (!(e instanceof IssuerMismatchError) || e.kind !== 'metadata' || !this.url || this.stored?.discovery) return false;
    const url = this.url;
    if (!e.received || !URL.canParse(e.received) || new URL(e.received).origin !== url.origin) return false;
    const info = await discoverOAuthServerInfo(url, { fetchFn: this.fetch, skipIssuerMetadataValidation: true }).catch(() => undefined);
    if (!info || info.resourceMetadata || info.authorizationServerUrl !== new URL('/', url).href) return false;
    if (info.authorizationServerMetadata?.issuer !== e.received) return false;
    await this.update((s) => {
      s.discovery = info;
    });
    this.log(`the authorization server of this 2025-03-26 server names itself ${e.received} (its own origin): accepted`);
    return true;
  }

  /** Opens the authorization page (called by the provider inside `auth()`). */
  async openBrowser(url: URL): Promise<void> {
    this.log(`opening the sign-in page of ${url.origin} in the browser`);
    await this.hooks.openBrowser(this.serverName, url);
  }

  /** Whether the store holds a sign-in for this server (read from the store itself, not our copy). */
  async isStored(): Promise<boolean> {
    return this.key !== undefined && (await this.hooks.store.get(storeKey(this.key))) !== undefined;
  }

  /**
   * Forgets the stored sign-in (the SecretStorage entry): tokens, registration, discovery — and
   * revokes the tokens at the authorization server when its metadata has a `revocation_endpoint`
   * (RFC 7009). The local entry goes first: a revocation that fails or does not answer (bounded)
   * never keeps the user signed in, the log says it failed.
   */
  async signOut(): Promise<void> {
    const s = this.stored;
    const client = s?.tokens ? this.clientForRevocation() : undefined;
    if (this.key) await this.hooks.store.delete(storeKey(this.key));
    this.stored = undefined;
    this.challenge = undefined;
    this.stepUpScope = undefined;
    this.log('signed out: the stored sign-in is deleted');
    this.refreshStatus();
    if (s?.tokens && this.url) await this.revoke(s, client);
  }

  private async revoke(s: StoredAuth, client: OAuthClientInformationMixed | undefined): Promise<void> {
    try {
      const r = await revokeTokens({
        tokens: s.tokens!,
        client,
        metadata: s.discovery?.authorizationServerMetadata,
        serverUrl: this.url!,
        addClientAuthentication: this.provider.addClientAuthentication,
        fetchFn: this.baseFetch,
        timeoutMs: this.hooks.revokeTimeoutMs ?? 10_000,
      });
      if (r.kind === 'unsupported') this.log('the authorization server has no revocation endpoint: the tokens were only forgotten here');
      else this.log(`revoked at the authorization server: the ${r.tokens.join(' and the ')}`);
    } catch (e) {
      this.log(`revoking the tokens at the authorization server failed (${errorMessage(e)}); they are forgotten here all the same`);
    }
  }

  /** The client the tokens were issued to (a pre-registered one from the settings, else the stored registration). */
  private clientForRevocation(): OAuthClientInformationMixed | undefined {
    try {
      return this.settings?.clientId ? this.provider.clientInformation() : this.stored?.client;
    } catch {
      return this.stored?.client;
    }
  }

  /** Changes the stored sign-in and writes it back. */
  async update(change: (s: StoredAuth) => void): Promise<void> {
    if (!this.key || !this.url) return;
    const s: StoredAuth = this.stored ?? { url: this.url.href };
    change(s);
    this.stored = s;
    await this.hooks.store.set(storeKey(this.key), JSON.stringify(s));
    this.refreshStatus();
  }

  /** The provider could not go on without a browser: say so (tree, log) and stop the request. */
  needSignIn(scope: string | undefined, why: string): SignInRequiredError {
    const message = `sign-in required: ${why}${scope ? ` (scope "${scope}")` : ''}; use "Sign in…" on the server`;
    this.setStatus({ kind: 'signInRequired', reason: why, ...authServerOf(this.stored), ...(scope ? { scope } : {}) });
    this.log(message);
    return new SignInRequiredError(message, scope);
  }

  dispose(): void {
    this.changed.dispose();
  }

  /** An unauthenticated request: the server's `WWW-Authenticate`, when it answers 401/403. */
  private async probe(url: URL): Promise<Challenge> {
    try {
      const res = await this.baseFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        // A notification: no session is created on servers that need none to refuse it.
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      await res.body?.cancel();
      if (res.status !== 401 && res.status !== 403) return {};
      const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
      return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
    } catch {
      return {};
    }
  }

  private setStatus(s: McpAuthStatus): void {
    this.statusValue = s;
    this.changed.fire();
  }

  /** The status the stored tokens give (or `reason` for a failed/required sign-in without them). */
  private refreshStatus(reason?: string): void {
    const s = this.stored;
    if (s?.tokens) {
      const expiresAt = s.tokens.expires_in !== undefined && s.obtainedAt ? s.obtainedAt + s.tokens.expires_in * 1000 : undefined;
      this.setStatus({
        kind: 'signedIn',
        account: accountOf(s.tokens) ?? (this.settingsValue?.grant === 'clientCredentials' ? this.settingsValue.clientId : undefined),
        authServer: authServerOf(s).authServer,
        ...(s.tokens.scope ? { scope: s.tokens.scope } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      });
    } else if (reason) this.setStatus({ kind: 'signInRequired', reason, ...authServerOf(s) });
    else if (this.statusValue.kind !== 'signInRequired') this.setStatus({ kind: 'none' });
  }
}

function storeKey(key: string): string {
  return `execBridge.mcp.oauth.${key}`;
}

function sameResource(a: URL, b: URL): boolean {
  return a.origin === b.origin && a.pathname === b.pathname;
}

function authServerOf(s: StoredAuth | undefined): { authServer?: string } {
  const u = s?.discovery?.authorizationServerUrl;
  if (!u) return {};
  try {
    return { authServer: new URL(u).host };
  } catch {
    return {};
  }
}

/** Who the tokens are for, from an OpenID `id_token` or a JWT access token (display only: nothing is trusted from it). */
export function accountOf(tokens: OAuthTokens): string | undefined {
  for (const jwt of [tokens.id_token, tokens.access_token]) {
    const parts = jwt?.split('.');
    if (!parts || parts.length !== 3 || !parts[1]) continue;
    try {
      const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Record<string, unknown>;
      for (const k of ['email', 'preferred_username', 'upn', 'name', 'sub']) {
        const v = claims[k];
        if (typeof v === 'string' && v !== '') return v;
      }
    } catch {
      // not a JWT
    }
  }
  return undefined;
}
