/** `PendingSockets` (src/server/socketBudget.ts) over real loopback sockets. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { PendingSockets } from '../../../src/server/socketBudget';

describe('PendingSockets (issue 20 item 5)', () => {
  let server: Server;
  let accepted: Socket[] = [];
  let onAccept: (s: Socket) => void = () => undefined;
  before(async () => {
    server = createServer((s) => {
      accepted.push(s);
      onAccept(s);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  after(() => server.close());

  /** Opens `n` client sockets one after the other and resolves once the server accepted each. */
  async function open(n: number): Promise<Socket[]> {
    const clients: Socket[] = [];
    for (let i = 0; i < n; i++) {
      const got = new Promise<void>((r) => (onAccept = () => r()));
      const c = connect((server.address() as AddressInfo).port, '127.0.0.1');
      c.on('error', () => undefined);
      clients.push(c);
      await got;
    }
    return clients;
  }

  test('over its budget, the oldest sockets are closed to make room; a released one is not touched', async () => {
    accepted = [];
    const clients = await open(6);
    const budget = new PendingSockets(3, 60_000);
    const [s0, s1, s2, s3, s4, s5] = accepted as [Socket, Socket, Socket, Socket, Socket, Socket];
    budget.add(s0);
    budget.add(s1);
    budget.release(s1); // became an authenticated WebSocket
    budget.add(s2);
    budget.add(s3);
    assert.equal(budget.size, 3);
    budget.add(s4); // s0 is the oldest pending one
    assert.equal(s0.destroyed, true);
    assert.equal(s1.destroyed, false, 'a released socket is never closed to make room');
    budget.add(s5);
    assert.equal(s2.destroyed, true);
    assert.deepEqual(
      [s3, s4, s5].map((s) => s.destroyed),
      [false, false, false],
    );
    assert.equal(budget.size, 3);
    budget.closeAll();
    assert.equal(budget.size, 0);
    assert.ok([s3, s4, s5].every((s) => s.destroyed));
    for (const s of [s1, ...clients]) s.destroy();
  });

  test('a socket still pending after the head bound is closed; a released one stays open', async () => {
    accepted = [];
    const clients = await open(2);
    const budget = new PendingSockets(10, 200);
    const [slow, upgraded] = accepted as [Socket, Socket];
    budget.add(slow);
    budget.add(upgraded);
    budget.release(upgraded);
    await once(slow, 'close');
    assert.equal(budget.size, 0);
    assert.equal(upgraded.destroyed, false);
    for (const s of [upgraded, ...clients]) s.destroy();
  });
});
