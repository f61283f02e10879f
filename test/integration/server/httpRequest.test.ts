// http/request against a local 127.0.0.1 server, through the typed router. Expected results and
// messages are what `codex exec-server` 0.171.0 answered for the same requests.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { RpcError } from '../../../src/rpc/errors';
import { Router } from '../../../src/rpc/router';
import { registerHttpMethods, type HttpContext } from '../../../src/server/httpRequest';
import { until } from '../../helpers/procs';

interface Delta {
  requestId: string;
  seq: number;
  deltaBase64: string;
  done: boolean;
  error: string | null;
}

/** A context that records notifications and lets a test wait for the last delta of a stream. */
class RecordingContext implements HttpContext {
  readonly activeHttpStreams = new Set<string>();
  readonly httpCancels = new Map<string, () => void>();
  readonly deltas: Delta[] = [];
  readonly events: string[] = [];
  private readonly waiters: Array<() => void> = [];
  constructor(readonly signal?: AbortSignal) {}
  notify(method: string, params: unknown): void {
    assert.equal(method, 'http/request/bodyDelta');
    const d = params as Delta;
    this.deltas.push(d);
    this.events.push(`delta ${d.seq}`);
    for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves once streams named `id` have sent `count` `done` deltas (at most 5 s). */
  async done(id: string, count = 1): Promise<Delta[]> {
    const deadline = Date.now() + 5000;
    while (this.deltas.filter((d) => d.requestId === id && d.done).length < count) {
      assert.ok(Date.now() < deadline, `stream ${id} did not finish`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.deltas.filter((d) => d.requestId === id);
  }
}

const env = { PROBE_TOKEN: 'sekrit' };
const router = new Router<HttpContext>();
registerHttpMethods(router, { env });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(params: unknown, ctx: HttpContext = new RecordingContext()): Promise<any> {
  return await router.dispatch('http/request', params, ctx);
}

async function fail(params: unknown, ctx?: HttpContext): Promise<{ code: number; message: string }> {
  try {
    await call(params, ctx);
  } catch (e) {
    assert.ok(e instanceof RpcError, `expected an RpcError, got ${String(e)}`);
    return { code: e.code, message: e.message };
  }
  assert.fail(`http/request ${JSON.stringify(params)} succeeded`);
}

const text = (b64: string) => Buffer.from(b64, 'base64').toString();
const header = (r: { headers: Array<{ name: string; value: string }> }, name: string) =>
  r.headers.filter((h) => h.name === name).map((h) => h.value);

let server: http.Server;
let base = '';
let port = 0;
/** Requests that should fail mid-body wait on this, so the test decides when they end. */
const pending = new Set<http.ServerResponse>();

before(async () => {
  server = http.createServer((req, res) => {
    const u = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      switch (u.pathname) {
        case '/hello':
          res.setHeader('X-Multi', ['a', 'b']);
          res.setHeader('Content-Type', 'text/plain');
          res.end('hello');
          return;
        case '/redirect':
          res.writeHead(Number(u.searchParams.get('status') ?? 302), { Location: u.searchParams.get('to') ?? '/hello' });
          res.end('moved');
          return;
        case '/loop':
          res.writeHead(302, { Location: '/loop' });
          res.end();
          return;
        case '/hang':
          // Never answers; the client's timeout (or the test's cleanup) ends it.
          pending.add(res);
          return;
        case '/slowbody':
          res.writeHead(200);
          res.write('first');
          pending.add(res);
          return;
        case '/stream': {
          res.writeHead(200, { 'content-type': 'text/plain' });
          let i = 0;
          const next = (): void => {
            res.write(`part${i}\n`, () => {
              if (++i === 3) res.end();
              else setImmediate(next);
            });
          };
          next();
          return;
        }
        case '/abort':
          res.writeHead(200, { 'content-length': '100' });
          res.write('partial', () => setImmediate(() => req.socket.destroy()));
          return;
        case '/gzip': {
          const z = gzipSync('zipped!');
          res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': z.length, 'x-after': '1' });
          res.end(z);
          return;
        }
        case '/badgzip':
          res.writeHead(200, { 'content-encoding': 'gzip' });
          res.end('not gzip');
          return;
        case '/br':
          res.writeHead(200, { 'content-encoding': 'br' });
          res.end('raw');
          return;
        case '/status':
          res.writeHead(Number(u.searchParams.get('s')));
          res.end(u.searchParams.get('s') === '204' ? undefined : 'st');
          return;
        default:
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, url: req.url, raw: req.rawHeaders, body: body.toString() }));
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

after(() => {
  for (const res of pending) res.destroy();
  server.closeAllConnections();
  server.close();
});

/** What the echo route saw, with the header list as [name, value] pairs. */
function echoed(r: { bodyBase64: string }): { method: string; url: string; headers: Array<[string, string]>; body: string } {
  const e = JSON.parse(text(r.bodyBase64)) as { method: string; url: string; raw: string[]; body: string };
  const headers: Array<[string, string]> = [];
  for (let i = 0; i < e.raw.length; i += 2) headers.push([e.raw[i]!, e.raw[i + 1]!]);
  // Node's client adds `Connection: keep-alive`; the reference's does not (a known difference).
  return { method: e.method, url: e.url, headers: headers.filter(([n]) => n.toLowerCase() !== 'connection'), body: e.body };
}

describe('whole responses', () => {
  test('status, headers in order with repeats, body', async () => {
    const r = await call({ method: 'GET', url: `${base}/hello`, requestId: 'r1' });
    assert.equal(r.status, 200);
    assert.deepEqual(header(r, 'x-multi'), ['a', 'b']);
    assert.deepEqual(r.headers.slice(0, 3), [
      { name: 'x-multi', value: 'a' },
      { name: 'x-multi', value: 'b' },
      { name: 'content-type', value: 'text/plain' },
    ]);
    assert.equal(r.bodyBase64, 'aGVsbG8=');
    const notFound = await call({ method: 'GET', url: `${base}/status?s=404`, requestId: 'r2' });
    assert.deepEqual([notFound.status, text(notFound.bodyBase64)], [404, 'st']);
    const empty = await call({ method: 'GET', url: `${base}/status?s=204`, requestId: 'r3' });
    assert.deepEqual([empty.status, empty.bodyBase64], [204, '']);
    const head = await call({ method: 'HEAD', url: `${base}/hello`, requestId: 'r4' });
    assert.deepEqual([head.status, head.bodyBase64, header(head, 'x-multi')], [200, '', ['a', 'b']]);
  });

  test('sends the caller headers in order (lowercased), then accept, accept-encoding, host, content-length', async () => {
    const r = await call({
      method: 'POST',
      url: `${base}/echo?x=1#frag`,
      requestId: 'r5',
      bodyBase64: 'aGVsbG8=',
      headers: [
        { name: 'X-A', value: '1' },
        { name: 'x-a', value: '2' },
        { name: 'Authorization', value: 'Bearer ', valueEnvVar: 'PROBE_TOKEN' },
        { name: 'Content-Type', value: 'text/x', valueEnvVar: null },
      ],
    });
    assert.deepEqual(echoed(r), {
      method: 'POST',
      url: '/echo?x=1',
      headers: [
        ['x-a', '1'],
        ['x-a', '2'],
        ['authorization', 'Bearer sekrit'],
        ['content-type', 'text/x'],
        ['accept', '*/*'],
        ['accept-encoding', 'gzip'],
        ['host', `127.0.0.1:${port}`],
        ['content-length', '5'],
      ],
      body: 'hello',
    });
    const own = echoed(
      await call({ method: 'GET', url: `${base}/echo`, requestId: 'r6', headers: [{ name: 'Accept', value: 'text/html' }] }),
    );
    assert.deepEqual(own.headers, [
      ['accept', 'text/html'],
      ['accept-encoding', 'gzip'],
      ['host', `127.0.0.1:${port}`],
    ]);
    // Any token is sent as is (Node's server answers 400 to a method it does not know, as it did to the reference).
    assert.equal((await call({ method: 'FOO', url: `${base}/echo`, requestId: 'r7' })).status, 400);
  });

  test('gzip bodies are decoded (encoding and length headers dropped); others are not', async () => {
    const z = await call({ method: 'GET', url: `${base}/gzip`, requestId: 'g1' });
    assert.equal(text(z.bodyBase64), 'zipped!');
    assert.deepEqual(header(z, 'content-encoding'), []);
    assert.deepEqual(header(z, 'content-length'), []);
    assert.deepEqual(header(z, 'x-after'), ['1']);
    const br = await call({ method: 'GET', url: `${base}/br`, requestId: 'g2' });
    assert.deepEqual([text(br.bodyBase64), header(br, 'content-encoding')], ['raw', ['br']]);
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/badgzip`, requestId: 'g3' }), {
      code: -32603,
      message: 'failed to read http/request response body: error decoding response body',
    });
  });
});

describe('redirects', () => {
  test('followed by default; stop returns the 3xx', async () => {
    const followed = await call({ method: 'GET', url: `${base}/redirect`, requestId: 'd1' });
    assert.deepEqual([followed.status, text(followed.bodyBase64)], [200, 'hello']);
    const stopped = await call({ method: 'GET', url: `${base}/redirect`, requestId: 'd2', redirectPolicy: 'stop' });
    assert.deepEqual([stopped.status, header(stopped, 'location'), text(stopped.bodyBase64)], [302, ['/hello'], 'moved']);
  });

  test('303 (and 301/302 after POST) become GET without body headers; 307 keeps method and body; referer added', async () => {
    const headers = [
      { name: 'Content-Type', value: 'text/x' },
      { name: 'X-K', value: 'k' },
    ];
    const g = echoed(
      await call({ method: 'POST', url: `${base}/redirect?status=303&to=/echo`, requestId: 'd3', bodyBase64: 'aGk=', headers }),
    );
    assert.deepEqual(g, {
      method: 'GET',
      url: '/echo',
      headers: [
        ['x-k', 'k'],
        ['referer', `${base}/redirect?status=303&to=/echo`],
        ['accept', '*/*'],
        ['accept-encoding', 'gzip'],
        ['host', `127.0.0.1:${port}`],
      ],
      body: '',
    });
    assert.equal(
      echoed(await call({ method: 'POST', url: `${base}/redirect?status=301&to=/echo`, requestId: 'd4', bodyBase64: 'aGk=' })).method,
      'GET',
    );
    const put = echoed(await call({ method: 'PUT', url: `${base}/redirect?status=301&to=/echo`, requestId: 'd5', bodyBase64: 'aGk=' }));
    assert.deepEqual([put.method, put.body], ['PUT', 'hi']);
    const kept = echoed(
      await call({ method: 'POST', url: `${base}/redirect?status=307&to=/echo`, requestId: 'd6', bodyBase64: 'aGk=', headers }),
    );
    assert.deepEqual([kept.method, kept.body, kept.headers[0]], ['POST', 'hi', ['content-type', 'text/x']]);
  });

  test('credentials do not follow to another origin; the referer is then the origin only', async () => {
    const to = `http://localhost:${port}/echo`;
    const r = echoed(
      await call({
        method: 'GET',
        url: `${base}/redirect?to=${encodeURIComponent(to)}`,
        requestId: 'd7',
        headers: [
          { name: 'Authorization', value: 'tok' },
          { name: 'Cookie', value: 'c=1' },
          { name: 'X-K', value: 'k' },
        ],
      }),
    );
    assert.deepEqual(r.headers.slice(0, 2), [
      ['x-k', 'k'],
      ['referer', `${base}/`],
    ]);
  });

  test('too many, or to another scheme', async () => {
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/loop`, requestId: 'd8' }), {
      code: -32603,
      message: 'http/request failed: too many redirects',
    });
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/redirect?to=ftp://x/`, requestId: 'd9' }), {
      code: -32603,
      message: 'http/request failed: redirect target uses unsupported URL scheme: ftp',
    });
  });
});

describe('errors', () => {
  test('refused params: -32602 with the reference messages', async () => {
    const cases: Array<[object, string]> = [
      [{ url: 'ftp://x/' }, 'http/request only supports http and https URLs, got ftp'],
      [{ url: 'not a url' }, 'http/request url is invalid: relative URL without a base'],
      [{ url: '' }, 'http/request url is invalid: relative URL without a base'],
      [{ method: '' }, 'http/request method is invalid: invalid HTTP method'],
      [{ method: 'G T' }, 'http/request method is invalid: invalid HTTP method'],
      [{ bodyBase64: 'a*k=' }, 'Invalid symbol 42, offset 1.'],
      [{ bodyBase64: 'aGl=' }, 'Invalid last symbol 108, offset 2.'],
      [{ headers: [{ name: 'bad name', value: 'x' }] }, 'http/request header name is invalid: invalid HTTP header name'],
      [{ headers: [{ name: 'X-NL', value: 'a\nb' }] }, 'http/request header value is invalid for X-NL: failed to parse header value'],
      [
        { headers: [{ name: 'X-Env', value: 'v', valueEnvVar: 'NO_SUCH_VAR_XYZ' }] },
        'http/request header X-Env requires executor environment variable NO_SUCH_VAR_XYZ',
      ],
      [{ headers: [{ name: 'X-E', valueEnvVar: 'PROBE_TOKEN' }] }, 'missing field `value`'],
      [{ redirectPolicy: 'nope' }, 'unknown variant `nope`, expected `follow` or `stop`'],
      [{ requestId: undefined }, 'missing field `requestId`'],
    ];
    for (const [over, message] of cases) {
      assert.deepEqual(
        await fail({ method: 'GET', url: `${base}/echo`, requestId: 'e', ...over }),
        { code: -32602, message },
        JSON.stringify(over),
      );
    }
  });

  test('transport failures: -32603 naming the URL (without credentials)', async () => {
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const deadPort = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    for (const url of [
      `http://127.0.0.1:${deadPort}/x`,
      `http://user:pw@127.0.0.1:${deadPort}/x?q=1#frag`,
      `https://127.0.0.1:${deadPort}/x`,
    ]) {
      const shown = url.replace('user:pw@', '');
      assert.deepEqual(await fail({ method: 'GET', url, requestId: 't' }), {
        code: -32603,
        message: `http/request failed: error sending request for url (${shown})`,
      });
    }
  });

  test('a body cut short is a read failure', async () => {
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/abort`, requestId: 't1' }), {
      code: -32603,
      message: 'failed to read http/request response body: error decoding response body',
    });
  });

  test('timeouts: before the answer, during the body, and zero', async () => {
    const t0 = Date.now();
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/hang`, requestId: 't2', timeoutMs: 100 }), {
      code: -32603,
      message: `http/request failed: error sending request for url (${base}/hang)`,
    });
    // /hang never answers: any end at all is the timeout's (the bound leaves room for a loaded machine).
    assert.ok(Date.now() - t0 < 20_000);
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/slowbody`, requestId: 't3', timeoutMs: 100 }), {
      code: -32603,
      message: 'failed to read http/request response body: error decoding response body',
    });
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/echo`, requestId: 't4', timeoutMs: 0 }), {
      code: -32603,
      message: 'http/request failed: route-aware request timed out',
    });
  });
});

describe('streamed responses', () => {
  test('the result comes first with an empty body, then deltas seq 1.. and a final empty done', async () => {
    const ctx = new RecordingContext();
    const r = await call({ method: 'GET', url: `${base}/stream`, requestId: 's1', streamResponse: true }, ctx);
    ctx.events.push('result');
    assert.deepEqual([r.status, r.bodyBase64, header(r, 'content-type')], [200, '', ['text/plain']]);
    assert.ok(ctx.activeHttpStreams.has('s1'));
    const deltas = await ctx.done('s1');
    assert.equal(ctx.events[0], 'result');
    assert.deepEqual(
      deltas.map((d) => d.seq),
      deltas.map((_, i) => i + 1),
    );
    assert.equal(deltas.map((d) => text(d.deltaBase64)).join(''), 'part0\npart1\npart2\n');
    assert.deepEqual(deltas.at(-1), { requestId: 's1', seq: deltas.length, deltaBase64: '', done: true, error: null });
    assert.ok(deltas.slice(0, -1).every((d) => !d.done && d.error === null && d.deltaBase64 !== ''));
    assert.equal(ctx.activeHttpStreams.size, 0);
  });

  test('an empty body is one done delta; gzip is decoded', async () => {
    const ctx = new RecordingContext();
    await call({ method: 'GET', url: `${base}/status?s=204`, requestId: 's2', streamResponse: true }, ctx);
    assert.deepEqual(await ctx.done('s2'), [{ requestId: 's2', seq: 1, deltaBase64: '', done: true, error: null }]);
    await call({ method: 'GET', url: `${base}/gzip`, requestId: 's3', streamResponse: true }, ctx);
    const z = await ctx.done('s3');
    assert.equal(z.map((d) => text(d.deltaBase64)).join(''), 'zipped!');
  });

  test('a failing body ends with an error delta; so does the timeout', async () => {
    const ctx = new RecordingContext();
    await call({ method: 'GET', url: `${base}/abort`, requestId: 's4', streamResponse: true }, ctx);
    const cut = await ctx.done('s4');
    assert.deepEqual(cut.at(-1), { requestId: 's4', seq: cut.length, deltaBase64: '', done: true, error: 'error decoding response body' });
    assert.equal(
      cut
        .slice(0, -1)
        .map((d) => text(d.deltaBase64))
        .join(''),
      'partial',
    );
    await call({ method: 'GET', url: `${base}/slowbody`, requestId: 's5', streamResponse: true, timeoutMs: 150 }, ctx);
    const slow = await ctx.done('s5');
    assert.deepEqual(
      slow.map((d) => [d.seq, text(d.deltaBase64), d.done, d.error]),
      [
        [1, 'first', false, null],
        [2, '', true, 'error decoding response body'],
      ],
    );
    assert.equal(ctx.activeHttpStreams.size, 0);
  });

  test('a requestId is unique while its stream is active, and free again after', async () => {
    const ctx = new RecordingContext();
    await call({ method: 'GET', url: `${base}/slowbody`, requestId: 'dup', streamResponse: true, timeoutMs: 300 }, ctx);
    assert.deepEqual(await fail({ method: 'GET', url: `${base}/hello`, requestId: 'dup', streamResponse: true }, ctx), {
      code: -32602,
      message: 'http/request streamResponse requestId `dup` is already active',
    });
    // A non-streamed request may reuse it.
    assert.equal((await call({ method: 'GET', url: `${base}/hello`, requestId: 'dup' }, ctx)).status, 200);
    await ctx.done('dup');
    await call({ method: 'GET', url: `${base}/hello`, requestId: 'dup', streamResponse: true }, ctx);
    assert.equal((await ctx.done('dup', 2)).filter((d) => d.done).length, 2);
    // A request that fails before its answer releases the id at once.
    const ctx2 = new RecordingContext();
    await fail({ method: 'GET', url: `${base}/hang`, requestId: 'x', streamResponse: true, timeoutMs: 50 }, ctx2);
    assert.equal(ctx2.activeHttpStreams.size, 0);
  });

  test('execBridge/httpCancel ends a stream while it streams and while it connects; an ended one is not cancelled', async () => {
    const cancel = (ctx: HttpContext, requestId: string) => router.dispatch('execBridge/httpCancel', { requestId }, ctx);
    const ctx = new RecordingContext();
    await call({ method: 'GET', url: `${base}/slowbody`, requestId: 'c1', streamResponse: true }, ctx);
    assert.deepEqual(await cancel(ctx, 'c1'), { cancelled: true });
    const d = await ctx.done('c1');
    assert.deepEqual([d.at(-1)!.done, d.at(-1)!.error], [true, 'error decoding response body']);
    assert.deepEqual([ctx.activeHttpStreams.size, ctx.httpCancels.size], [0, 0]);
    assert.deepEqual(await cancel(ctx, 'c1'), { cancelled: false });
    // /hang never answers: only the cancel ends this one.
    const pending = fail({ method: 'GET', url: `${base}/hang`, requestId: 'c2', streamResponse: true }, ctx);
    await until(() => ctx.httpCancels.has('c2'));
    assert.deepEqual(await cancel(ctx, 'c2'), { cancelled: true });
    assert.deepEqual(await pending, { code: -32603, message: `http/request failed: error sending request for url (${base}/hang)` });
    assert.deepEqual([ctx.activeHttpStreams.size, ctx.httpCancels.size], [0, 0]);
    // A request that is not streamed has no id to cancel it by.
    assert.deepEqual(await cancel(ctx, 'nothing'), { cancelled: false });
  });

  test("execBridge/httpCancel of another connection's request id cancels nothing: that stream runs to its end", async () => {
    const owner = new RecordingContext();
    const other = new RecordingContext();
    // /slowbody sends a first part and never ends: only its own connection's cancel ends it.
    await call({ method: 'GET', url: `${base}/slowbody`, requestId: 'mine', streamResponse: true }, owner);
    assert.deepEqual(await router.dispatch('execBridge/httpCancel', { requestId: 'mine' }, other), { cancelled: false });
    assert.ok(owner.activeHttpStreams.has('mine'), 'still streaming for its own connection');
    assert.equal(owner.deltas.filter((d) => d.done).length, 0);
    assert.deepEqual(await router.dispatch('execBridge/httpCancel', { requestId: 'mine' }, owner), { cancelled: true });
    assert.equal((await owner.done('mine')).at(-1)!.error, 'error decoding response body');
  });

  test('the end of the connection stops a stream', async () => {
    const ac = new AbortController();
    const ctx = new RecordingContext(ac.signal);
    await call({ method: 'GET', url: `${base}/slowbody`, requestId: 's6', streamResponse: true }, ctx);
    ac.abort();
    const d = await ctx.done('s6');
    assert.equal(d.at(-1)!.error, 'error decoding response body');
    assert.equal(ctx.activeHttpStreams.size, 0);
  });
});
