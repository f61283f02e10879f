import * as http from 'node:http';
import * as https from 'node:https';
import { createGunzip } from 'node:zlib';
import type { HttpRequestResult, ParsedParamsOf } from '../protocol';
import { RpcError, type Router } from '../rpc';
import { decodeBase64 } from './rustCompat';

/**
 * `http/request`: an HTTP(S) request made from the executor, matching `codex exec-server` 0.171.0
 * (docs/protocol.md §7) in params, results and error texts. What the doc leaves open was
 * observed on the real binary: it sends `accept: *\/*`, decodes gzip bodies, follows up to 10
 * redirects like a browser (303, and 301/302 after POST, become GET; credentials are dropped
 * across origins; a `referer` is added), and appends a `valueEnvVar` header's variable to `value`.
 */
export interface HttpContext {
  notify(method: string, params: unknown): void;
  /** Streaming request ids active on this connection; an id must be unique while active. */
  activeHttpStreams: Set<string>;
  /** How to end each of them early (`execBridge/httpCancel`, ours). Optional: without it nothing can be cancelled. */
  httpCancels?: Map<string, () => void>;
  /** Aborted when the connection ends, so that streamed bodies stop downloading. Optional. */
  signal?: AbortSignal;
  /** True while the connection's outgoing buffer is over its high-water mark: streamed bodies wait. */
  congested?(): boolean;
  /** Calls `cb` once the congestion clears (or the connection ends). */
  whenUncongested?(cb: () => void): void;
}

/** Backpressure for a streamed body: stop reading the response while the client is behind. */
interface Flow {
  congested(): boolean;
  whenUncongested(cb: () => void): void;
}

export interface HttpMethodOptions {
  /** Where `valueEnvVar` headers are looked up (default: this process's environment). */
  env?: NodeJS.ProcessEnv;
}

const MAX_REDIRECTS = 10;
/** A whole (non-streamed) body is returned in one message; bigger ones must be streamed. */
export const MAX_HTTP_BODY_BYTES = 256 * 1024 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
/** Headers that describe the body; dropped when a redirect turns the request into a body-less GET. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding']);
/** Headers that must not follow a redirect to another origin. */
const SENSITIVE_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization', 'www-authenticate']);
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

type Header = [name: string, value: string];

interface Hop {
  url: URL;
  method: string;
  headers: Header[];
  body: Buffer | undefined;
  referer?: string;
}

/** Thrown inside this module; turned into the reference's message by phase. */
class TransportError extends Error {}

function urlForMessage(url: URL): string {
  const u = new URL(url.href);
  u.username = '';
  u.password = '';
  return u.href;
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    const reason = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(text) ? 'invalid URL' : 'relative URL without a base';
    throw RpcError.invalidParams(`http/request url is invalid: ${reason}`);
  }
}

function sameOrigin(a: URL, b: URL): boolean {
  return a.protocol === b.protocol && a.hostname === b.hostname && a.port === b.port;
}

/** Referrer policy "strict-origin-when-cross-origin", as the reference's HTTP client applies it. */
function refererFor(previous: URL, next: URL): string | undefined {
  if (previous.protocol === 'https:' && next.protocol === 'http:') return undefined;
  const r = new URL(previous.href);
  r.username = '';
  r.password = '';
  r.hash = '';
  return sameOrigin(previous, next) ? r.href : `${r.origin}/`;
}

/** The request's header block: the caller's headers in order, then the defaults the reference's client adds. */
function headerBlock(hop: Hop): string[] {
  const has = (name: string) => hop.headers.some(([n]) => n === name);
  const out: Header[] = [...hop.headers];
  if (hop.referer !== undefined && !has('referer')) out.push(['referer', hop.referer]);
  if (!has('accept')) out.push(['accept', '*/*']);
  if (!has('accept-encoding')) out.push(['accept-encoding', 'gzip']);
  if (!has('authorization') && (hop.url.username || hop.url.password)) {
    const user = decodeURIComponent(hop.url.username);
    const pass = decodeURIComponent(hop.url.password);
    out.push(['authorization', `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`]);
  }
  if (!has('host')) out.push(['host', hop.url.host]);
  if (!has('content-length') && !has('transfer-encoding')) {
    if (hop.body !== undefined) out.push(['content-length', String(hop.body.length)]);
    else if (METHODS_WITH_BODY.has(hop.method)) out.push(['content-length', '0']);
  }
  return out.flat();
}

function send(hop: Hop, agents: { http: http.Agent; https: https.Agent }, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const secure = hop.url.protocol === 'https:';
    const options: http.RequestOptions = {
      protocol: hop.url.protocol,
      hostname: hop.url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: hop.url.port || (secure ? 443 : 80),
      path: `${hop.url.pathname}${hop.url.search}`,
      method: hop.method,
      // An array keeps the caller's order and repeated names (Node sends it as is).
      headers: headerBlock(hop),
      setHost: false,
      agent: secure ? agents.https : agents.http,
      signal,
    };
    let req: http.ClientRequest;
    try {
      req = (secure ? https : http).request(options);
    } catch (e) {
      reject(new TransportError(e instanceof Error ? e.message : String(e)));
      return;
    }
    req.once('response', resolve);
    req.once('error', (e) => reject(new TransportError(e.message)));
    req.end(hop.body);
  });
}

/** The next hop for a followed redirect, or undefined when the response is final. */
function redirectHop(hop: Hop, res: http.IncomingMessage): Hop | undefined {
  const status = res.statusCode ?? 0;
  if (![301, 302, 303, 307, 308].includes(status)) return undefined;
  const location = res.headers.location;
  if (!location) return undefined;
  let next: URL;
  try {
    next = new URL(location, hop.url);
  } catch {
    return undefined;
  }
  if (next.protocol !== 'http:' && next.protocol !== 'https:') {
    throw new TransportError(`redirect target uses unsupported URL scheme: ${next.protocol.slice(0, -1)}`);
  }
  const toGet = (status === 303 && hop.method !== 'HEAD') || ((status === 301 || status === 302) && hop.method === 'POST');
  let headers = hop.headers;
  if (toGet) headers = headers.filter(([n]) => !BODY_HEADERS.has(n));
  if (!sameOrigin(hop.url, next)) headers = headers.filter(([n]) => !SENSITIVE_HEADERS.has(n));
  return {
    url: next,
    method: toGet ? 'GET' : hop.method,
    headers,
    body: toGet ? undefined : hop.body,
    referer: refererFor(hop.url, next),
  };
}

/** The response headers as received (order and repeats kept, names lowercased). */
function responseHeaders(res: http.IncomingMessage, decoded: boolean): Array<{ name: string; value: string }> {
  const out: Array<{ name: string; value: string }> = [];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!.toLowerCase();
    // A decoded body no longer has the encoding or length the server announced.
    if (decoded && (name === 'content-encoding' || name === 'content-length')) continue;
    out.push({ name, value: res.rawHeaders[i + 1]! });
  }
  return out;
}

function isGzip(res: http.IncomingMessage, method: string): boolean {
  const status = res.statusCode ?? 0;
  if (method === 'HEAD' || status === 204 || status === 304 || res.headers['content-length'] === '0') return false;
  return (res.headers['content-encoding'] ?? '').trim().toLowerCase() === 'gzip';
}

/**
 * Calls `onChunk` for each body chunk (gunzipped when needed) and settles when the body ends;
 * rejects if it breaks off (reset, truncated, bad gzip, timeout).
 */
function pumpBody(res: http.IncomingMessage, gzip: boolean, onChunk: (b: Buffer) => void, flow?: Flow): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let held = false;
    const fail = (): void => {
      if (settled) return;
      settled = true;
      res.destroy();
      reject(new TransportError('error decoding response body'));
    };
    const source = gzip ? res.pipe(createGunzip()) : res;
    source.on('data', (b: Buffer) => {
      if (settled) return;
      onChunk(b);
      if (flow && !held && flow.congested()) {
        // The deltas wait in the socket, not in our memory: the server's TCP window closes.
        held = true;
        source.pause();
        flow.whenUncongested(() => {
          held = false;
          if (!settled) source.resume();
        });
      }
    });
    source.once('end', () => {
      if (settled) return;
      if (!res.complete) return fail();
      settled = true;
      resolve();
    });
    source.once('error', fail);
    res.once('error', fail);
    res.once('aborted', fail);
    res.once('close', () => {
      if (!res.complete) fail();
    });
    // The response may have been paused explicitly (streamed bodies start later); a `data`
    // listener alone does not restart it.
    res.resume();
  });
}

export function registerHttpMethods<Ctx extends HttpContext>(router: Router<Ctx>, options: HttpMethodOptions = {}): void {
  const env = options.env ?? process.env;
  // Keep-alive agents, like the reference's pooled client; idle sockets do not hold the process open.
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  router.on('http/request', async (params, ctx): Promise<HttpRequestResult> => {
    const first = firstHop(params, env);
    const stream = params.streamResponse === true;
    const requestId = params.requestId;
    if (stream && ctx.activeHttpStreams.has(requestId)) {
      throw RpcError.invalidParams(`http/request streamResponse requestId \`${requestId}\` is already active`);
    }
    if (params.timeoutMs === 0) throw RpcError.internal('http/request failed: route-aware request timed out');

    const deadline = exchangeDeadline(params.timeoutMs, ctx.signal, () => {
      if (!stream) return;
      ctx.activeHttpStreams.delete(requestId);
      if (ctx.httpCancels?.get(requestId) === cancel) ctx.httpCancels.delete(requestId);
    });
    const cancel = (): void => deadline.abort();
    if (stream) {
      ctx.activeHttpStreams.add(requestId);
      ctx.httpCancels?.set(requestId, cancel);
    }
    let final: { hop: Hop; res: http.IncomingMessage };
    try {
      final = await exchange(first, agents, deadline.signal, params.redirectPolicy !== 'stop');
    } catch (e) {
      deadline.finish();
      throw e;
    }
    const gzip = isGzip(final.res, final.hop.method);
    const head = { status: final.res.statusCode ?? 0, headers: responseHeaders(final.res, gzip) };
    if (!stream) return { ...head, bodyBase64: await wholeBody(final.res, gzip, deadline.finish) };
    streamBody(final.res, gzip, ctx, requestId, deadline.finish);
    return { ...head, bodyBase64: '' };
  });

  // Ours: ends a streamed request early, connecting or streaming (its last bodyDelta then says why).
  router.on('execBridge/httpCancel', (params, ctx) => {
    const cancel = ctx.httpCancels?.get(params.requestId);
    cancel?.();
    return { cancelled: cancel !== undefined };
  });
}

/** The request as the caller asked for it, checked in the reference's order and with its messages. */
function firstHop(params: ParsedParamsOf<'http/request'>, env: NodeJS.ProcessEnv): Hop {
  let body: Buffer | undefined;
  if (params.bodyBase64 !== undefined && params.bodyBase64 !== null) {
    const decoded = decodeBase64(params.bodyBase64);
    if (!decoded.ok) throw RpcError.invalidParams(decoded.message);
    body = decoded.bytes;
  }
  const url = parseUrl(params.url);
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'http' && scheme !== 'https')
    throw RpcError.invalidParams(`http/request only supports http and https URLs, got ${scheme}`);
  if (!TOKEN.test(params.method)) throw RpcError.invalidParams('http/request method is invalid: invalid HTTP method');
  const headers: Header[] = [];
  for (const h of params.headers ?? []) {
    if (!TOKEN.test(h.name)) throw RpcError.invalidParams('http/request header name is invalid: invalid HTTP header name');
    const name = h.name.toLowerCase();
    let value = h.value;
    if (h.valueEnvVar !== undefined && h.valueEnvVar !== null) {
      const fromEnv = env[h.valueEnvVar];
      if (fromEnv === undefined)
        throw RpcError.invalidParams(`http/request header ${h.name} requires executor environment variable ${h.valueEnvVar}`);
      // The variable is appended: `value` can carry a prefix such as "Bearer ".
      value += fromEnv;
    }
    if (!HEADER_VALUE.test(value))
      throw RpcError.invalidParams(`http/request header value is invalid for ${h.name}: failed to parse header value`);
    headers.push([name, value]);
  }
  return { url, method: params.method, headers, body };
}

/**
 * One deadline for the whole exchange: connect, redirects and body. The end of the connection
 * aborts it too. `finish` (once the body is read or the exchange failed) clears both and calls `onFinish`.
 */
function exchangeDeadline(
  timeoutMs: number | null | undefined,
  connection: AbortSignal | undefined,
  onFinish: () => void,
): { signal: AbortSignal; finish(): void; abort(): void } {
  const abort = new AbortController();
  const timer =
    timeoutMs === undefined || timeoutMs === null ? undefined : setTimeout(() => abort.abort(), Math.min(timeoutMs, 2_147_483_647));
  const onConnectionEnd = (): void => abort.abort();
  connection?.addEventListener('abort', onConnectionEnd, { once: true });
  const finish = (): void => {
    if (timer) clearTimeout(timer);
    connection?.removeEventListener('abort', onConnectionEnd);
    onFinish();
  };
  return { signal: abort.signal, finish, abort: () => abort.abort() };
}

/** Sends the request and follows its redirects (unless `follow` is false): the final response and the hop that got it. */
async function exchange(
  first: Hop,
  agents: { http: http.Agent; https: https.Agent },
  signal: AbortSignal,
  follow: boolean,
): Promise<{ hop: Hop; res: http.IncomingMessage }> {
  let hop = first;
  try {
    // Bounded: the hop after MAX_REDIRECTS redirects throws.
    for (let redirects = 0; ; redirects++) {
      const r = await send(hop, agents, signal);
      const next = follow ? redirectHop(hop, r) : undefined;
      if (!next) return { hop, res: r };
      r.resume();
      if (redirects === MAX_REDIRECTS) throw new TransportError('too many redirects');
      hop = next;
    }
  } catch (e) {
    if (e instanceof TransportError && (e.message === 'too many redirects' || e.message.startsWith('redirect target'))) {
      throw RpcError.internal(`http/request failed: ${e.message}`);
    }
    throw RpcError.internal(`http/request failed: error sending request for url (${urlForMessage(hop.url)})`);
  }
}

/** A whole body, for the one answer (base64); at most MAX_HTTP_BODY_BYTES. Calls `finish` when done. */
async function wholeBody(response: http.IncomingMessage, gzip: boolean, finish: () => void): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    await pumpBody(response, gzip, (b) => {
      size += b.length;
      if (size > MAX_HTTP_BODY_BYTES) response.destroy();
      else chunks.push(b);
    });
  } catch {
    if (size > MAX_HTTP_BODY_BYTES) {
      throw RpcError.internal(
        `failed to read http/request response body: it is larger than ${MAX_HTTP_BODY_BYTES} bytes; use streamResponse`,
      );
    }
    throw RpcError.internal('failed to read http/request response body: error decoding response body');
  } finally {
    finish();
  }
  return Buffer.concat(chunks).toString('base64');
}

/**
 * A streamed body: the result goes out first (the body starts on a later turn of the event loop),
 * then `bodyDelta`s with seq from 1; the last one has `done: true` and an empty delta.
 */
function streamBody(response: http.IncomingMessage, gzip: boolean, ctx: HttpContext, requestId: string, finish: () => void): void {
  let seq = 0;
  const delta = (bytes: Buffer, done: boolean, error: string | null): void => {
    ctx.notify('http/request/bodyDelta', { requestId, seq: ++seq, deltaBase64: bytes.toString('base64'), done, error });
  };
  response.pause();
  setImmediate(() => {
    const { congested, whenUncongested } = ctx;
    const flow =
      congested && whenUncongested
        ? { congested: () => congested.call(ctx), whenUncongested: (cb: () => void) => whenUncongested.call(ctx, cb) }
        : undefined;
    pumpBody(response, gzip, (b) => delta(b, false, null), flow).then(
      () => {
        finish();
        delta(Buffer.alloc(0), true, null);
      },
      (e: unknown) => {
        finish();
        delta(Buffer.alloc(0), true, e instanceof Error ? e.message : String(e));
      },
    );
  });
}
