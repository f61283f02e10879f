/**
 * `ExecServerClient.httpRequestStream` against a real exec-server (ours; codex for what it lacks)
 * and a local HTTP server that streams slowly: the body arrives as it is written, a cancelled body
 * or an aborted request ends the far side's request on ours (`execBridge/httpCancel`) and not on
 * codex, and a cut exec connection errors the body at once while later requests work again.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient } from '../../../src/client';
import { FaultProxy } from '../../helpers/faultProxy';
import { until } from '../../helpers/procs';
import { startExecServer, type ExecServerProcess } from '../../helpers/servers';

/** /drip writes `tick N` lines until the request goes away, and counts the requests still open. */
async function dripServer(): Promise<{ server: Server; base: string; open(): number }> {
  const live = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (req.url === '/hang') {
      live.add(res);
      res.once('close', () => live.delete(res));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    live.add(res);
    let n = 0;
    const timer = setInterval(() => res.write(`tick ${n++}\n`), 20);
    res.once('close', () => {
      clearInterval(timer);
      live.delete(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, open: () => live.size };
}

/** Reads the body until `text` has come (bounded), returning what came. */
async function readUntil(
  body: ReadableStream<Uint8Array>,
  text: string,
): Promise<{ seen: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = body.getReader();
  let seen = '';
  for (let i = 0; i < 1000 && !seen.includes(text); i++) {
    const r = await reader.read();
    if (r.done) break;
    seen += Buffer.from(r.value).toString('utf8');
  }
  return { seen, reader };
}

for (const kind of ['ours', 'codex'] as const) {
  describe(`http/request streamed to a ReadableStream, on ${kind}`, () => {
    let exec: ExecServerProcess;
    let proxy: FaultProxy;
    let client: ExecServerClient;
    let drip: Awaited<ReturnType<typeof dripServer>>;
    before(async () => {
      drip = await dripServer();
      exec = await startExecServer(kind);
      proxy = await FaultProxy.forUrl(exec.url);
      client = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: proxy.url },
        // Loose: a cut is noticed by the close; a 500 ms bound took a loaded machine's slow pong for a loss.
        keepalive: { intervalMs: 2_000, timeoutMs: 15_000 },
        attemptTimeoutMs: 10_000,
      });
    });
    after(async () => {
      client?.dispose();
      await proxy?.close();
      await exec?.stop();
      drip?.server.closeAllConnections();
      drip?.server.close();
    });

    test('the body streams as written; cancelling it ends the request on the far side (ours) or leaves it (codex)', async () => {
      const r = await client.httpRequestStream({ method: 'GET', url: `${drip.base}/drip`, headers: [] });
      assert.equal(r.status, 200);
      assert.ok(r.headers.some((h) => h.name === 'content-type' && h.value === 'text/event-stream'));
      const { seen, reader } = await readUntil(r.body, 'tick 3\n');
      assert.match(seen, /^tick 0\ntick 1\ntick 2\ntick 3\n/);
      assert.equal(drip.open(), 1);
      await reader.cancel();
      if (kind === 'ours') await until(() => drip.open() === 0, 10_000, 'the far side saw the request end');
      else {
        // Codex cannot end it early: it goes on until the exec connection closes.
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(drip.open(), 1);
        proxy.cut();
        await until(() => drip.open() === 0, 10_000, 'the far side saw the request end with the connection');
        await until(() => client.state.kind === 'connected', 15_000, 'the client resumed');
      }
    });

    test('an aborted request ends, connecting or streaming', async () => {
      const ac = new AbortController();
      const r = await client.httpRequestStream({ method: 'GET', url: `${drip.base}/drip`, headers: [], signal: ac.signal });
      const { reader } = await readUntil(r.body, 'tick 1\n');
      ac.abort(new Error('the reader left'));
      await assert.rejects(reader.read(), /the reader left/);
      // On ours the aborted /drip ends on the far side: wait for it, so that the count below is /hang's.
      if (kind === 'ours') await until(() => drip.open() === 0, 10_000, 'the aborted request ended on the far side');
      const hanging = new AbortController();
      const pending = client.httpRequestStream({ method: 'GET', url: `${drip.base}/hang`, headers: [], signal: hanging.signal });
      await until(() => drip.open() >= 1, 10_000, 'the request reached the far side');
      hanging.abort(new Error('gave up waiting'));
      await assert.rejects(pending, /gave up waiting|aborted/i);
      if (kind === 'ours') await until(() => drip.open() === 0, 10_000, 'both requests ended on the far side');
    });

    test('a cut exec connection errors the body at once; the next request works', async () => {
      const r = await client.httpRequestStream({ method: 'GET', url: `${drip.base}/drip`, headers: [] });
      const { reader } = await readUntil(r.body, 'tick 1\n');
      proxy.cut();
      let error: unknown;
      for (let i = 0; i < 1000 && error === undefined; i++) {
        const x = await reader.read().catch((e: unknown) => ({ e }));
        if ('e' in x) error = x.e;
        else if (x.done) break;
      }
      assert.match(String(error), /connection to the executor was lost/);
      await until(() => client.state.kind === 'connected', 15_000, 'the client resumed');
      const again = await client.httpRequestStream({ method: 'GET', url: `${drip.base}/drip`, headers: [] });
      const second = await readUntil(again.body, 'tick 0\n');
      assert.match(second.seen, /tick 0/);
      await second.reader.cancel();
    });
  });
}
