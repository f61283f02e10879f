import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { after, before, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { WebSocketTransport } from '../../../src/rpc/wsTransport';

/** A real ws server on loopback; each upgrade's transport is built as the exec-server builds it. */
let http: Server;
let wss: WebSocketServer;
let url: string;
const transports: Array<{ transport: WebSocketTransport; socket: Duplex }> = [];
const waiting: Array<() => void> = [];

before(async () => {
  wss = new WebSocketServer({ noServer: true });
  http = createServer();
  http.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      transports.push({ transport: new WebSocketTransport(ws, socket), socket });
      waiting.shift()?.();
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
after(async () => {
  wss.close();
  await new Promise((r) => http.close(r));
});

async function connect() {
  const accepted = new Promise<void>((r) => waiting.push(r));
  const client = new WebSocket(url);
  const received: string[] = [];
  const counted: Array<{ n: number; resolve: () => void }> = [];
  client.on('message', (data, binary) => {
    received.push(binary ? `bin:${(data as Buffer).length}` : (data as Buffer).toString());
    for (const c of counted.filter((c) => received.length >= c.n)) c.resolve();
  });
  /** Resolves once `n` messages arrived. */
  const receivedCount = (n: number) => new Promise<void>((resolve) => (received.length >= n ? resolve() : counted.push({ n, resolve })));
  await new Promise((r, j) => client.once('open', r).once('error', j));
  await accepted;
  return { client, server: transports[transports.length - 1]!, received, receivedCount };
}

test('messages sent in one turn are written together once the turn is over: the socket is corked until then, and everything arrives in order', async () => {
  const { client, server, received, receivedCount } = await connect();
  const { transport, socket } = server;
  assert.equal(socket.writableCorked, 0);
  for (let i = 0; i < 200; i++) transport.send(`{"n":${i}}`);
  transport.sendBinary(Buffer.alloc(256 * 1024, 7));
  transport.sendFrame(Buffer.from('{"last":true}'));
  // Still held: nothing of this turn went to the socket yet.
  assert.equal(socket.writableCorked, 1);
  assert.ok(transport.bufferedBytes > 256 * 1024);
  await new Promise((r) => setImmediate(r));
  assert.equal(socket.writableCorked, 0, 'written at the end of the turn');
  const expected = [...Array.from({ length: 200 }, (_, i) => `{"n":${i}}`), `bin:${256 * 1024}`, '{"last":true}'];
  await receivedCount(expected.length);
  assert.deepEqual(received, expected);
  // A later turn is held and written on its own.
  transport.send('{"again":1}');
  assert.equal(socket.writableCorked, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(socket.writableCorked, 0);
  client.close();
});

test('what was sent in the turn the transport closes still reaches the peer before the close', async () => {
  const { client, server, received } = await connect();
  const closed = new Promise<void>((r) => client.once('close', () => r()));
  server.transport.send('{"answer":1}');
  server.transport.send('{"bye":true}');
  assert.equal(server.socket.writableCorked, 1);
  server.transport.close('done');
  await closed;
  assert.equal(server.transport.isClosed, true);
  assert.deepEqual(received, ['{"answer":1}', '{"bye":true}']);
});
