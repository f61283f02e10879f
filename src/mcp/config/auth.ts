/**
 * The `oauth` key of a remote (http/sse) server: how Exec Bridge signs in to it. Our own key (VS
 * Code ignores it). Without it a server that answers 401 still gets the standard flow: discovery,
 * dynamic client registration, authorization code + PKCE in the browser.
 *
 * ```jsonc
 * "oauth": {
 *   "clientId": "…", "clientSecret": "${input:secret}",          // a pre-registered client
 *   "clientMetadataUrl": "https://example.com/client.json",      // or a Client ID Metadata Document
 *   "scopes": ["read"],                                           // when the server names none
 *   "callbackPort": 33418,                                        // fixed loopback redirect port
 *   "grant": "clientCredentials", "privateKey": "${input:key}",  // machine to machine
 *   "grant": "crossAppAccess", "idp": { "tokenEndpoint": "…", "clientId": "…", "idToken": "${input:id}" }
 * }
 * ```
 * `"oauth": false` turns sign-in off (a 401 then just fails). Strings may hold variables; secrets
 * belong in `${input:…}` (kept in SecretStorage), never in the file.
 */
export type McpOAuthGrant = 'authorizationCode' | 'clientCredentials' | 'crossAppAccess';

export interface McpOAuthSettings {
  enabled: boolean;
  grant: McpOAuthGrant;
  clientId?: string;
  clientSecret?: string;
  clientMetadataUrl?: string;
  scopes?: string[];
  callbackPort?: number;
  /** PEM (PKCS#8) for `private_key_jwt` client authentication (client credentials). */
  privateKey?: string;
  /** JWS algorithm for `privateKey`; default ES256. */
  signingAlgorithm?: string;
  /** Cross-app access (SEP-990): the enterprise IdP that exchanges the user's ID token for an ID-JAG. */
  idp?: { tokenEndpoint: string; clientId: string; idToken: string };
}

const STRING_KEYS = ['clientId', 'clientSecret', 'clientMetadataUrl', 'privateKey', 'signingAlgorithm'] as const;
const KEYS = new Set<string>([...STRING_KEYS, 'grant', 'scopes', 'callbackPort', 'idp']);
const GRANTS: readonly McpOAuthGrant[] = ['authorizationCode', 'clientCredentials', 'crossAppAccess'];

type FieldError = (key: string | undefined, message: string, path?: (string | number)[]) => void;
type VariableCheck = (value: string, key: string, path: (string | number)[]) => boolean;

/** Reads `oauth`; reports each bad key and returns undefined when anything is wrong. */
export function readOAuthSettings(raw: unknown, error: FieldError, checkVariables: VariableCheck): McpOAuthSettings | undefined {
  if (raw === false) return { enabled: false, grant: 'authorizationCode' };
  if (raw === true) return { enabled: true, grant: 'authorizationCode' };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    error('oauth', `"oauth" must be an object (or false to turn sign-in off), got ${JSON.stringify(raw)}`);
    return undefined;
  }
  const o = raw as Record<string, unknown>;
  const out: McpOAuthSettings = { enabled: true, grant: 'authorizationCode' };
  let ok = true;
  const bad = (key: string, message: string, path: (string | number)[] = ['oauth', key]) => {
    error(`oauth.${key}`, message, path);
    ok = false;
  };
  for (const key of Object.keys(o)) if (!KEYS.has(key)) bad(key, `unknown key "oauth.${key}"; known: ${[...KEYS].join(', ')}`);
  const str = (key: string, v: unknown, path = ['oauth', key]): string | undefined => {
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.trim() === '') bad(key, `"oauth.${key}" must be a non-empty string`, path);
    else if (!checkVariables(v, `oauth.${key}`, path)) ok = false;
    else return v;
    return undefined;
  };
  for (const key of STRING_KEYS) {
    const v = str(key, o[key]);
    if (v !== undefined) out[key] = v;
  }
  if (o['grant'] !== undefined) {
    if (!GRANTS.includes(o['grant'] as McpOAuthGrant)) bad('grant', `"oauth.grant" must be one of ${GRANTS.join(', ')}`);
    else out.grant = o['grant'] as McpOAuthGrant;
  }
  const scopes = o['scopes'];
  if (scopes !== undefined) {
    if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)))
      bad('scopes', '"oauth.scopes" must be an array of scope names (no spaces or quotes)');
    else out.scopes = scopes as string[];
  }
  const port = o['callbackPort'];
  if (port !== undefined) {
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
      bad('callbackPort', '"oauth.callbackPort" must be a port number (1-65535)');
    else out.callbackPort = port;
  }
  const idp = o['idp'];
  if (idp !== undefined) {
    if (typeof idp !== 'object' || idp === null || Array.isArray(idp)) bad('idp', '"oauth.idp" must be an object');
    else {
      const i = idp as Record<string, unknown>;
      const tokenEndpoint = str('idp.tokenEndpoint', i['tokenEndpoint'], ['oauth', 'idp', 'tokenEndpoint']);
      const clientId = str('idp.clientId', i['clientId'], ['oauth', 'idp', 'clientId']);
      const idToken = str('idp.idToken', i['idToken'], ['oauth', 'idp', 'idToken']);
      if (tokenEndpoint && clientId && idToken) out.idp = { tokenEndpoint, clientId, idToken };
      else if (ok) bad('idp', '"oauth.idp" needs "tokenEndpoint", "clientId" and "idToken"');
    }
  }
  if (out.grant === 'clientCredentials' && (!out.clientId || (!out.clientSecret && !out.privateKey)))
    bad('grant', '"clientCredentials" needs "oauth.clientId" and "oauth.clientSecret" (or "oauth.privateKey")', ['oauth', 'grant']);
  if (out.grant === 'crossAppAccess' && (!out.clientId || !out.clientSecret || !out.idp))
    bad('grant', '"crossAppAccess" needs "oauth.clientId", "oauth.clientSecret" and "oauth.idp"', ['oauth', 'grant']);
  if (out.clientSecret && !out.clientId) bad('clientSecret', '"oauth.clientSecret" needs "oauth.clientId"');
  return ok ? out : undefined;
}

/** Every string of `oauth` that may hold variables, with its key (for checks and substitution). */
export function* oauthStrings(o: McpOAuthSettings | undefined): Generator<[string, string]> {
  if (!o) return;
  for (const key of STRING_KEYS) {
    const v = o[key];
    if (v !== undefined) yield [`oauth.${key}`, v];
  }
  if (o.idp) for (const [k, v] of Object.entries(o.idp)) yield [`oauth.idp.${k}`, v];
}

/** `o` with each string replaced by `sub(value, key)` (variables filled in). */
export async function resolveOAuthSettings(
  o: McpOAuthSettings,
  sub: (value: string, key: string) => Promise<string>,
): Promise<McpOAuthSettings> {
  const out: McpOAuthSettings = { ...o };
  for (const key of STRING_KEYS) {
    const v = o[key];
    if (v !== undefined) out[key] = await sub(v, `oauth.${key}`);
  }
  if (o.idp)
    out.idp = {
      tokenEndpoint: await sub(o.idp.tokenEndpoint, 'oauth.idp.tokenEndpoint'),
      clientId: await sub(o.idp.clientId, 'oauth.idp.clientId'),
      idToken: await sub(o.idp.idToken, 'oauth.idp.idToken'),
    };
  return out;
}
