import type { FetchLike } from '@modelcontextprotocol/client';
import { errorMessage } from '../util';
import type { McpExecClient } from './executorHost';

/** Statuses whose response has no body (the Fetch standard's "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A `fetch` whose every request the executor makes (`http/request`, the body streamed back with
 * `streamResponse`): what the SDK's transports and `auth()` are given for a remote server with
 * `"connectFrom": "executor"`. Long-lived SSE bodies stream as they arrive; aborting the request's
 * signal or cancelling the body ends it on the executor too (on ours; src/client/httpStream.ts).
 * Redirects are followed by the executor, or left to the caller for `redirect: "manual"` (the
 * SDK's own rule). Nothing here logs: headers carry tokens.
 */
export function executorFetch(client: Pick<McpExecClient, 'httpRequestStream'>, executorLabel: string): FetchLike {
  return async (input, init) => {
    const request = new Request(input, init);
    const signal = init?.signal ?? undefined;
    const body = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    let res;
    try {
      res = await client.httpRequestStream({
        method: request.method,
        url: request.url,
        headers: [...request.headers].map(([name, value]) => ({ name, value })),
        ...(body ? { body } : {}),
        redirect: request.redirect === 'follow' ? 'follow' : 'stop',
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      // fetch's own failure type, with words that say where the request was made from.
      throw new TypeError(
        `the executor "${executorLabel}" could not reach ${new URL(request.url).origin}: ${withoutQueries(errorMessage(e))}`,
        {
          cause: e,
        },
      );
    }
    const headers = new Headers();
    for (const h of res.headers) {
      try {
        headers.append(h.name, h.value);
      } catch {
        // A header value fetch itself would refuse: left out, as a browser would.
      }
    }
    const redirect = res.status >= 300 && res.status < 400 && headers.has('location');
    const noBody = NULL_BODY.has(res.status) || request.method === 'HEAD';
    if (noBody || (redirect && request.redirect === 'error')) await res.body.cancel().catch(() => undefined);
    if (redirect && request.redirect === 'error')
      throw new TypeError(`${withoutQueries(request.url)} redirected, and the request said redirect: "error"`);
    if (res.status < 200 || res.status > 599) {
      await res.body.cancel().catch(() => undefined);
      throw new TypeError(`${new URL(request.url).origin} answered with HTTP status ${res.status}, which fetch cannot represent`);
    }
    const response = new Response(noBody ? null : res.body, { status: res.status, headers });
    // A constructed Response has no URL; the SDK reads it to resolve relative redirects.
    Object.defineProperty(response, 'url', { value: request.url });
    return response;
  };
}

/**
 * Text with every http(s) URL in it cut to its origin and path. The executor's error names the URL
 * it could not reach (ours without user and password, codex's whole), and a server URL may carry a
 * secret in its query (`…/mcp?api_key=…`); these words reach the MCP log and the tree.
 */
export function withoutQueries(text: string): string {
  return text.replace(/\bhttps?:\/\/[^\s"'<>)]+/gi, (url) => {
    try {
      const u = new URL(url);
      return `${u.origin}${u.pathname}${u.search || u.hash ? '?…' : ''}`;
    } catch {
      return url.replace(/[?#].*$/, '?…');
    }
  });
}
