import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Router } from '../../../src/rpc/router';
import { ServerConnection } from '../../../src/server/connection';
import { SessionRegistry } from '../../../src/server/sessionRegistry';
import { MemoryTransport } from '../../helpers/memoryTransport';

/** A transport whose unsent byte count the test sets. */
class Queued extends MemoryTransport {
  unsent = 0;
  override get bufferedBytes(): number {
    return this.unsent;
  }
}

test('connection: child output stops being read above 2 MiB unsent, requests only above 8 MiB', () => {
  const [t] = MemoryTransport.pair();
  const transport = Object.setPrototypeOf(t, Queued.prototype) as Queued;
  transport.unsent = 0;
  const conn = new ServerConnection(transport, {
    registry: new SessionRegistry({ ttlMs: 1000, clock: { now: () => Date.now() } as never, planner: (() => undefined) as never }),
    router: new Router(),
    environmentInfo: () => ({}) as never,
  });
  try {
    assert.equal(conn.congested(), false);
    transport.unsent = 2 * 1024 * 1024;
    assert.equal(conn.congested(), false);
    transport.unsent = 2 * 1024 * 1024 + 1;
    assert.equal(conn.congested(), true, 'output stops above 2 MiB (each unsent frame holds a pooled buffer)');
    assert.equal(transport.highWaterMark, 8 * 1024 * 1024, 'requests are still read up to 8 MiB');
  } finally {
    conn.close('test');
  }
});
