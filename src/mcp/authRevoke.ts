import {
  assertSecureTokenEndpoint,
  discoverOAuthServerInfo,
  parseErrorResponse,
  selectClientAuthMethod,
  type AddClientAuthentication,
  type AuthorizationServerMetadata,
  type FetchLike,
  type OAuthClientInformationMixed,
  type OAuthTokens,
} from '@modelcontextprotocol/client';
import { errorMessage } from '../util';

/** What revoking a sign-in needs: the tokens, the client they were issued to, where the server is. */
export interface RevokeRequest {
  tokens: OAuthTokens;
  client: OAuthClientInformationMixed | undefined;
  /** The authorization server's metadata as the sign-in discovered it (discovered again when missing). */
  metadata: AuthorizationServerMetadata | undefined;
  /** The MCP server, to discover its authorization server from when `metadata` is missing. */
  serverUrl: URL;
  /** The provider's own client authentication (`private_key_jwt`), used instead of the SDK's choice. */
  addClientAuthentication?: AddClientAuthentication | undefined;
  /** The whole revocation (discovery included) gives up after this long. */
  timeoutMs: number;
  fetchFn?: FetchLike;
}

/** `revoked`: every token was revoked; `unsupported`: the authorization server has no `revocation_endpoint`. */
export type RevokeResult = { kind: 'revoked'; tokens: string[] } | { kind: 'unsupported' };

/**
 * Revokes a sign-in at its authorization server (RFC 7009): the refresh token first (revoking it
 * ends the grant on most servers), then the access token, each with the client authentication the
 * SDK selects for the token endpoint (or the provider's own). The SDK has discovery and client
 * authentication but no revocation call: this one request is ours. Rejects with the reason when a
 * request fails or the time is up; never puts a token in that reason.
 */
export async function revokeTokens(r: RevokeRequest): Promise<RevokeResult> {
  const signal = AbortSignal.timeout(r.timeoutMs);
  const base = r.fetchFn ?? fetch;
  const fetchFn: FetchLike = (url, init) => base(url, { ...init, signal });
  try {
    const metadata = r.metadata ?? (await discoverOAuthServerInfo(r.serverUrl, { fetchFn })).authorizationServerMetadata;
    // RFC 8414 metadata has it; OpenID provider metadata may carry it too (not in its type).
    const endpoint = (metadata as { revocation_endpoint?: unknown } | undefined)?.revocation_endpoint;
    if (!metadata || typeof endpoint !== 'string' || endpoint === '') return { kind: 'unsupported' };
    if (!r.client) throw new Error('no client registration is stored to authenticate the revocation with');
    const url = assertSecureTokenEndpoint(endpoint);
    const revoked: string[] = [];
    const order = [
      ['refresh_token', r.tokens.refresh_token],
      ['access_token', r.tokens.access_token],
    ] as const;
    for (const [hint, token] of order) {
      if (!token) continue;
      await revokeOne(url, token, hint, r.client, metadata, r.addClientAuthentication, fetchFn);
      revoked.push(hint === 'refresh_token' ? 'refresh token' : 'access token');
    }
    return { kind: 'revoked', tokens: revoked };
  } catch (e) {
    if (signal.aborted) throw new Error(`no answer within ${Math.round(r.timeoutMs / 1000)} s`);
    // An authorization server's error text is its own: it must not carry a token into our log.
    let message = errorMessage(e);
    for (const t of [r.tokens.refresh_token, r.tokens.access_token]) if (t) message = message.split(t).join('[token]');
    throw new Error(message);
  }
}

async function revokeOne(
  url: URL,
  token: string,
  hint: 'refresh_token' | 'access_token',
  client: OAuthClientInformationMixed,
  metadata: AuthorizationServerMetadata,
  addClientAuthentication: AddClientAuthentication | undefined,
  fetchFn: FetchLike,
): Promise<void> {
  const headers = new Headers({ 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' });
  const params = new URLSearchParams({ token, token_type_hint: hint });
  if (addClientAuthentication) await addClientAuthentication(headers, params, url, metadata);
  else authenticate(selectClientAuthMethod(client, metadata.token_endpoint_auth_methods_supported ?? []), client, headers, params);
  const res = await fetchFn(url, { method: 'POST', headers, body: params });
  if (res.ok) {
    await res.body?.cancel();
    return;
  }
  const error = await parseErrorResponse(res).catch((e: unknown) => new Error(errorMessage(e)));
  throw new Error(`the ${hint === 'refresh_token' ? 'refresh' : 'access'} token's revocation got HTTP ${res.status}: ${error.message}`);
}

/** The three client authentications of RFC 6749 §2.3.1 the SDK selects between (it does not export how it applies them). */
function authenticate(
  method: ReturnType<typeof selectClientAuthMethod>,
  client: OAuthClientInformationMixed,
  headers: Headers,
  params: URLSearchParams,
): void {
  if (method === 'client_secret_basic' && client.client_secret !== undefined) {
    headers.set('authorization', `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`);
    return;
  }
  params.set('client_id', client.client_id);
  if (method === 'client_secret_post' && client.client_secret !== undefined) params.set('client_secret', client.client_secret);
}
