/**
 * The server's credit window (src/server/creditWindow.ts) with output that went to the spool while
 * nobody was attached (coalesced entries), against the client's ack rule (src/client/processHandle.ts:
 * an ack once a quarter of the window was consumed since the last). A client that consumed
 * everything delivered must never find the process held: that was a deadlock in a clean-clone CI
 * run (clientCredit "a cut connection during a flood" hung with the child blocked on its pipe).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CreditWindow } from '../../../src/server/creditWindow';

/** The client's rule: consume events in order, ack the last consumed seq whenever a quarter of the window was consumed since the last ack. */
function consumeAll(credit: CreditWindow, events: Array<{ seq: number; bytes: number }>, window: number): void {
  let consumed = 0;
  let acked = 0;
  for (const e of events) {
    consumed += e.bytes;
    if (consumed - acked >= window / 4) {
      credit.ack(e.seq);
      acked = consumed;
    }
  }
}

test('output spooled while detached never holds a client that consumed everything delivered', () => {
  const W = 1000;
  const credit = new CreditWindow(W);
  const events: Array<{ seq: number; bytes: number }> = [];
  let seq = 0;
  // Attached: five events of 100 bytes, the first three consumed and acked.
  for (let i = 0; i < 5; i++) {
    credit.sent(++seq, 100);
    events.push({ seq, bytes: 100 });
  }
  credit.ack(3);
  // Detached, spooling: a long stretch of output, counted as coalesced entries.
  for (let i = 0; i < 95; i++) {
    credit.sent(++seq, 100, true);
    events.push({ seq, bytes: 100 });
  }
  assert.equal(credit.exhausted, true, 'the detached output fills the window');
  // The client comes back, replays everything (events 4..100) and acks by its rule.
  consumeAll(credit, events.slice(3), W);
  assert.equal(credit.exhausted, false, `held after everything was consumed: ${credit.unacked} unacknowledged`);
  assert.ok(credit.unacked < W / 2, `${credit.unacked} bytes unacknowledged`);
});

test('detached output takes an entry per eighth of the window, not one per event', () => {
  const credit = new CreditWindow(8000);
  for (let seq = 1; seq <= 1000; seq++) credit.sent(seq, 100, true);
  // 100 000 bytes in entries of at most 1000 bytes: acking seq 10 (1000 bytes) releases exactly that entry.
  credit.ack(10);
  assert.equal(credit.unacked, 99_000);
  credit.ack(15); // inside the next entry: nothing more is released
  assert.equal(credit.unacked, 99_000);
  credit.ack(20);
  assert.equal(credit.unacked, 98_000);
});
