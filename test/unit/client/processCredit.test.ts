/** ProcessHandle's side of the credit window: acks by seq of wholly consumed events, a quarter window at a time, one in flight. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessHandleImpl, type HandleHost } from '../../../src/client/processHandle';
import { Deferred } from '../../../src/util/deferred';

function host() {
  const acks: Array<{ seq: number; done: Deferred<void> }> = [];
  const h: HandleHost = {
    writeStdin: async () => undefined,
    interrupt: async () => undefined,
    terminate: async () => true,
    resize: async () => undefined,
    canPause: () => true,
    holdOutput: async () => undefined,
    ackOutput: (_h, seq) => {
      const done = new Deferred<void>();
      acks.push({ seq, done });
      return done.promise;
    },
    sandboxDeniedAfterExit: async () => false,
    forget: () => undefined,
  };
  return { h, acks };
}
const tick = () => new Promise((r) => setImmediate(r));

test('acks go out once a quarter of the window was consumed, name the last wholly consumed event, and one at a time', async () => {
  const { h, acks } = host();
  const handle = new ProcessHandleImpl(h, 'p', false, false);
  handle.enableCredit(400);
  handle.onEvent(() => undefined);
  for (let seq = 1; seq <= 10; seq++) handle.receive({ type: 'output', seq, stream: 'stdout', data: Buffer.alloc(60) });
  handle.outputConsumed(90); // event 1 whole, event 2 half: 60 bytes wholly consumed, below 100
  assert.equal(acks.length, 0);
  handle.outputConsumed(30); // events 1–2: 120 bytes
  assert.deepEqual(
    acks.map((a) => a.seq),
    [2],
  );
  handle.outputConsumed(300); // up to event 7, but the first ack is still in flight
  assert.equal(acks.length, 1);
  acks[0]!.done.resolve();
  await tick();
  assert.deepEqual(
    acks.map((a) => a.seq),
    [2, 7],
  );
  acks[1]!.done.resolve();
  await tick();
  handle.outputConsumed(1000); // everything: clamped to what was delivered (600 bytes, event 10)
  assert.deepEqual(
    acks.map((a) => a.seq),
    [2, 7, 10],
  );
});

test('without a credit window nothing is acknowledged', () => {
  const { h, acks } = host();
  const handle = new ProcessHandleImpl(h, 'p', false, false);
  handle.onEvent(() => undefined);
  handle.receive({ type: 'output', seq: 1, stream: 'stdout', data: Buffer.alloc(1000) });
  handle.outputConsumed(1000);
  assert.equal(handle.creditWindow, undefined);
  assert.equal(acks.length, 0);
});

test('exited and closed events take no credit; consumed output after them is still acknowledged until the end', async () => {
  const { h, acks } = host();
  const handle = new ProcessHandleImpl(h, 'p', false, false);
  handle.enableCredit(100);
  handle.onEvent(() => undefined);
  handle.receive({ type: 'output', seq: 1, stream: 'stdout', data: Buffer.alloc(50) });
  handle.receive({ type: 'exited', seq: 2, exitCode: 0, sandboxDenied: false });
  handle.outputConsumed(50);
  assert.deepEqual(
    acks.map((a) => a.seq),
    [1],
  );
});
