import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionClosedError, RpcError } from '../../../src/rpc/errors';
import { RpcPeer } from '../../../src/rpc/peer';
import { Router } from '../../../src/rpc/router';
import { MemoryTransport } from '../../helpers/memoryTransport';

test('requests are answered concurrently and out of order', { timeout: 5000 }, async () => {
  const [a, b] = MemoryTransport.pair();
  const client = new RpcPeer(a);
  // `slow` is answered only once `fast` has been: handled one at a time, neither would be.
  let fastAnswered!: () => void;
  const gate = new Promise<void>((r) => (fastAnswered = r));
  new RpcPeer(b, {
    onRequest: async (method, params) => {
      if (method === 'slow') await gate;
      return { method, params };
    },
  });
  const order: string[] = [];
  const slow = client.request('slow', { x: 1 }).then((r) => order.push('slow') && r);
  const fast = client.request('fast', { x: 2 }).then((r) => order.push('fast') && r);
  void fast.then(() => fastAnswered());
  assert.deepEqual(await Promise.all([slow, fast]), [
    { method: 'slow', params: { x: 1 } },
    { method: 'fast', params: { x: 2 } },
  ]);
  assert.deepEqual(order, ['fast', 'slow']);
});

test('the wire carries no "jsonrpc" member and errors keep their code and data', async () => {
  const [a, b] = MemoryTransport.pair();
  const client = new RpcPeer(a);
  new RpcPeer(b, {
    onRequest: () => {
      throw new RpcError(-32603, 'boom', { kind: 'spawnNotFound' });
    },
  });
  await assert.rejects(
    client.request('x', {}),
    (e: unknown) => e instanceof RpcError && e.code === -32603 && (e.data as { kind: string }).kind === 'spawnNotFound',
  );
  for (const frame of [...a.sent, ...b.sent]) assert.ok(!frame.includes('jsonrpc'), frame);
});

test('malformed frames are answered with id -1 and the connection stays usable', async () => {
  const [a, b] = MemoryTransport.pair();
  new RpcPeer(b, { onRequest: () => 'ok' });
  const got: string[] = [];
  let gotThree!: () => void;
  const three = new Promise<void>((r) => (gotThree = r));
  a.onMessage((t) => got.push(t) === 3 && gotThree());
  a.send('{not json');
  a.send('[1,2]');
  a.send('{"id":1,"method":"m"}');
  await three;
  // One more round trip: a fourth (wrong) answer would have been sent before this one arrives.
  a.send('{"id":2,"method":"m"}');
  await new Promise<void>((r) => a.onMessage((t) => JSON.parse(t).id === 2 && r()));
  assert.equal(got.length, 4);
  assert.equal(JSON.parse(got[0]!).id, -1);
  assert.equal(JSON.parse(got[0]!).error.code, -32600);
  assert.equal(JSON.parse(got[1]!).id, -1);
  assert.deepEqual(JSON.parse(got[2]!), { id: 1, result: 'ok' });
});

test('closing fails every pending call once and refuses new calls', async () => {
  const [a, b] = MemoryTransport.pair();
  const client = new RpcPeer(a);
  let arrived = 0;
  let bothArrived!: () => void;
  const both = new Promise<void>((r) => (bothArrived = r));
  new RpcPeer(b, {
    onRequest: () => {
      if (++arrived === 2) bothArrived();
      return new Promise(() => undefined);
    },
  });
  const calls = [client.request('hang', {}), client.request('hang', {})];
  await both; // the server side holds both calls
  assert.equal(client.pendingCount, 2);
  b.close('server gone');
  for (const c of calls) await assert.rejects(c, ConnectionClosedError);
  await assert.rejects(client.request('later', {}), ConnectionClosedError);
  assert.equal(client.pendingCount, 0);
});

test('an aborted call rejects at once and its late answer is ignored', async () => {
  const [a, b] = MemoryTransport.pair();
  const unexpected: unknown[] = [];
  let lateArrived!: () => void;
  const late = new Promise<void>((r) => (lateArrived = r));
  const client = new RpcPeer(a, {
    onUnexpectedResponse: (id) => {
      unexpected.push(id);
      lateArrived();
    },
  });
  // The server answers only after the client has given up.
  let answer!: (v: string) => void;
  new RpcPeer(b, { onRequest: () => new Promise<string>((r) => (answer = r)) });
  const ac = new AbortController();
  const p = client.request('x', {}, { signal: ac.signal });
  ac.abort(new Error('user cancelled'));
  await assert.rejects(p, /user cancelled/);
  answer('late');
  await late;
  assert.deepEqual(unexpected, [1]);
});

test('router validates params with serde-style messages and answers unknown methods with -32601', () => {
  const router = new Router<undefined>().on('process/signal', () => ({}));
  assert.throws(
    () => router.dispatch('process/signal', { processId: 'p' }, undefined),
    (e: unknown) => e instanceof RpcError && e.code === -32602 && e.message === 'missing field `signal`',
  );
  assert.throws(
    () => router.dispatch('process/signal', { processId: 'p', signal: 'terminate' }, undefined),
    (e: unknown) => e instanceof RpcError && e.message === 'unknown variant `terminate`, expected `interrupt`',
  );
  assert.throws(
    () => router.dispatch('process/signal', { processId: 7, signal: 'interrupt' }, undefined),
    /invalid type: number, expected a string/,
  );
  assert.throws(
    () => router.dispatch('nope', {}, undefined),
    (e: unknown) => e instanceof RpcError && e.code === -32601,
  );
  assert.deepEqual(router.dispatch('process/signal', { processId: 'p', signal: 'interrupt', extra: 1 }, undefined), {});
});
