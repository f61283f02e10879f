import { randomBytes } from 'node:crypto';
import {
  createPrivateKeyJwtAuth,
  type AddClientAuthentication,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
} from '@modelcontextprotocol/client';
import type { McpAuthSession } from './authSession';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/**
 * The SDK's `OAuthClientProvider` for one server, over its session (./authSession.ts): storage is
 * the session's entry, the redirect is the session's loopback listener, the browser is the host's.
 * Outside "Sign in…" it never sends anyone to a browser: where the SDK would, it stops the request
 * with "sign-in required" (and registers no client first).
 */
export class McpOAuthProvider implements OAuthClientProvider {
  private verifier: string | undefined;
  addClientAuthentication?: AddClientAuthentication;

  constructor(
    private readonly session: McpAuthSession,
    private readonly clientName: string,
  ) {}

  private get settings() {
    return this.session.settings;
  }
  private get grant() {
    return this.settings?.grant ?? 'authorizationCode';
  }

  /** Undefined for the grants without a user (the SDK then asks `prepareTokenRequest` for the grant). */
  get redirectUrl(): string | undefined {
    if (this.grant !== 'authorizationCode') return undefined;
    const interactive = this.session.interactive?.redirectUrl.href;
    if (interactive) return interactive;
    const registered = this.session.data?.client;
    const first = registered && 'redirect_uris' in registered ? registered.redirect_uris[0] : undefined;
    return first ?? `http://127.0.0.1:${this.settings?.callbackPort ?? 0}/callback`;
  }

  get clientMetadataUrl(): string | undefined {
    return this.settings?.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const scope = this.settings?.scopes?.join(' ');
    if (this.grant !== 'authorizationCode')
      return {
        client_name: this.clientName,
        redirect_uris: [],
        grant_types: [this.grant === 'clientCredentials' ? 'client_credentials' : JWT_BEARER],
        token_endpoint_auth_method: this.settings?.privateKey ? 'private_key_jwt' : 'client_secret_basic',
        ...(scope ? { scope } : {}),
      };
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl ?? ''],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // A public client (RFC 8252 native app): PKCE, no secret to keep.
      token_endpoint_auth_method: 'none',
      ...(scope ? { scope } : {}),
    };
  }

  state(): string {
    return this.session.interactive?.state ?? randomBytes(16).toString('base64url');
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const s = this.settings;
    if (s?.clientId) {
      // Pre-registered: the secret stays in the configuration (an input); only the binding to
      // the authorization server that accepted it is stored.
      const issuer = this.session.data?.client?.issuer;
      if (s.privateKey && !this.addClientAuthentication) {
        this.addClientAuthentication = createPrivateKeyJwtAuth({
          issuer: s.clientId,
          subject: s.clientId,
          privateKey: s.privateKey,
          alg: s.signingAlgorithm ?? 'ES256',
        });
      }
      return { client_id: s.clientId, ...(s.clientSecret ? { client_secret: s.clientSecret } : {}), ...(issuer ? { issuer } : {}) };
    }
    const stored = this.session.data?.client;
    // Registering a client (or presenting a metadata document) starts a browser sign-in: not in the background.
    if (!stored && !this.session.interactive) throw this.session.needSignIn(undefined, 'the server needs a sign-in');
    return stored;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    const preRegistered = !!this.settings?.clientId;
    await this.session.update((s) => {
      s.client = preRegistered ? { client_id: info.client_id, ...(info.issuer ? { issuer: info.issuer } : {}) } : info;
    });
  }

  tokens(): OAuthTokens | undefined {
    const t = this.session.data?.tokens;
    // A refresh keeps the scope the user granted; a step-up needs the browser.
    if (t && this.session.stepUpScope !== undefined) {
      const { refresh_token: _unused, ...rest } = t;
      return rest;
    }
    return t;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.session.stepUpScope = undefined;
    await this.session.update((s) => {
      s.tokens = tokens;
      s.obtainedAt = Date.now();
    });
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    if (!this.session.interactive) {
      const scope = authorizationUrl.searchParams.get('scope') ?? undefined;
      throw this.session.needSignIn(
        scope,
        this.session.stepUpScope !== undefined ? 'the server asks for more access' : 'the server needs a sign-in',
      );
    }
    await this.session.openBrowser(authorizationUrl);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no sign-in is in progress (no PKCE code verifier)');
    return this.verifier;
  }

  async prepareTokenRequest(scope?: string): Promise<URLSearchParams | undefined> {
    if (this.grant === 'clientCredentials') {
      return new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
    }
    if (this.grant === 'crossAppAccess') return new URLSearchParams({ grant_type: JWT_BEARER, assertion: await this.idJag() });
    return undefined; // authorization code: the SDK's own request
  }

  /**
   * Cross-app access (SEP-990, enterprise-managed authorization): the IdP exchanges the user's ID
   * token for an ID-JAG for this authorization server and resource (RFC 8693 token exchange); the
   * SDK then presents it with the jwt-bearer grant (RFC 7523) and our client authentication.
   */
  private async idJag(): Promise<string> {
    const idp = this.settings?.idp;
    const d = this.session.data?.discovery;
    if (!idp || !d) throw new Error('cross-app access needs "oauth.idp" and the authorization server discovered');
    const audience = d.authorizationServerMetadata?.issuer ?? d.authorizationServerUrl;
    const resource = d.resourceMetadata?.resource ?? this.session.serverUrl?.href ?? '';
    const res = await this.session.baseFetch(idp.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        requested_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
        audience,
        resource,
        subject_token: idp.idToken,
        subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
        client_id: idp.clientId,
      }),
    });
    const body = (await res.json().catch(() => ({}))) as { access_token?: unknown; error?: unknown; error_description?: unknown };
    if (!res.ok || typeof body.access_token !== 'string')
      throw new Error(
        `the identity provider refused the token exchange (HTTP ${res.status}${typeof body.error === 'string' ? `, ${body.error}` : ''}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''})`,
      );
    return body.access_token;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'verifier') {
      this.verifier = undefined;
      return;
    }
    await this.session.update((s) => {
      if (scope === 'all' || scope === 'client') delete s.client;
      if (scope === 'all' || scope === 'tokens') {
        delete s.tokens;
        delete s.obtainedAt;
      }
      if (scope === 'all' || scope === 'discovery') delete s.discovery;
    });
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.session.update((s) => {
      s.discovery = state;
    });
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.session.data?.discovery;
  }
}
