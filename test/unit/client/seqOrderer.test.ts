import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeqOrderer, type SeqEvent } from '../../../src/client/seqOrderer';
import type { ProcessReadResult } from '../../../src/protocol/process';

const out = (seq: number, text = `o${seq}`): SeqEvent => ({ type: 'output', seq, stream: 'stdout', data: Buffer.from(text) });
const seqs = (events: SeqEvent[]) => events.map((e) => `${e.type[0]}${e.seq}`);
const read = (over: Partial<ProcessReadResult>): ProcessReadResult => ({
  chunks: [],
  nextSeq: 1,
  exited: false,
  exitCode: null,
  closed: false,
  failure: null,
  sandboxDenied: false,
  ...over,
});
const chunk = (seq: number) => ({ seq, stream: 'stdout' as const, chunk: Buffer.from(`o${seq}`).toString('base64') });

test('publishes in seq order, holds back after a gap, drops duplicates', () => {
  const o = new SeqOrderer();
  assert.deepEqual(seqs(o.push(out(2))), []);
  assert.deepEqual(seqs(o.push(out(1))), ['o1', 'o2']);
  assert.deepEqual(seqs(o.push(out(2))), []);
  assert.deepEqual(seqs(o.push(out(4))), []);
  assert.deepEqual(seqs(o.push(out(4))), []);
  assert.equal(o.pendingCount, 1);
  assert.deepEqual(seqs(o.push(out(3))), ['o3', 'o4']);
  assert.equal(o.lastPublished, 4);
});

test('a read rebuilds exit and close: close is the last seq, exit the highest unaccounted one', () => {
  const o = new SeqOrderer();
  o.push(out(1));
  // Server: 2,3 output, 4 exit, 5 output drained after exit, 6 closed.
  const r = o.mergeRead(
    read({ chunks: [chunk(2), chunk(3), chunk(5)], nextSeq: 7, exited: true, exitCode: 9, closed: true, sandboxDenied: true }),
  );
  assert.deepEqual(seqs(r.events), ['o2', 'o3', 'e4', 'o5', 'c6']);
  const exit = r.events.find((e) => e.type === 'exited');
  assert.deepEqual(exit, { type: 'exited', seq: 4, exitCode: 9, sandboxDenied: true });
  assert.equal(r.lost, undefined);
});

test('a read merges with live events already buffered, without duplicates', () => {
  const o = new SeqOrderer();
  o.push(out(1));
  o.push(out(4)); // live, after the gap
  o.push({ type: 'exited', seq: 5, exitCode: 0, sandboxDenied: false });
  const r = o.mergeRead(read({ chunks: [chunk(2), chunk(3), chunk(4)], nextSeq: 6, exited: true, exitCode: 0 }));
  assert.deepEqual(seqs(r.events), ['o2', 'o3', 'o4', 'e5']);
  assert.equal(r.lost, undefined);
  assert.deepEqual(seqs(o.push({ type: 'closed', seq: 6 })), ['c6']);
});

test('evicted seqs are reported as lost; what came before them is still published', () => {
  const o = new SeqOrderer();
  o.push(out(1));
  const r = o.mergeRead(read({ chunks: [chunk(5), chunk(6)], nextSeq: 7 }));
  assert.deepEqual(seqs(r.events), []);
  assert.deepEqual(r.lost, { fromSeq: 2, toSeq: 4 });
});

test('a closed without seq (older servers) goes after everything seen', () => {
  const o = new SeqOrderer();
  o.push(out(1));
  o.push(out(3));
  assert.equal(o.seqForUnnumberedClosed(), 4);
});

test('spool pages (execBridgeSpooled): published in order, the exit placed by execBridgeExitSeq, the last answer merged as a read', () => {
  const o = new SeqOrderer();
  // Output 1..3, exit 4, output 5 (drained after the exit), closed 7 after output 6.
  const p1 = o.mergeSpooled(read({ chunks: [chunk(1), chunk(2)], nextSeq: 3, execBridgeSpooled: true, execBridgeDroppedBytes: 0 }), true);
  assert.deepEqual(seqs(p1.events), ['o1', 'o2']);
  const p2 = o.mergeSpooled(
    read({
      chunks: [chunk(3), chunk(5)],
      nextSeq: 6,
      exited: true,
      exitCode: 2,
      execBridgeSpooled: true,
      execBridgeExitSeq: 4,
      execBridgeDroppedBytes: 0,
    }),
    true,
  );
  assert.deepEqual(seqs(p2.events), ['o3', 'e4', 'o5']);
  const last = o.mergeSpooled(
    read({ chunks: [chunk(6)], nextSeq: 8, exited: true, exitCode: 2, closed: true, execBridgeExitSeq: 4, execBridgeDroppedBytes: 0 }),
    true,
  );
  assert.deepEqual(seqs(last.events), ['o6', 'c7']);
  assert.equal(last.lost, undefined);
});

test('spool pages: what a cap dropped is skipped on an attach (the exit in it kept) and lost on a catch-up', () => {
  const attach = new SeqOrderer();
  // Seqs 1..9 dropped, among them the exit (5); the page starts at 10.
  const r = read({
    chunks: [chunk(10), chunk(11)],
    nextSeq: 12,
    exited: true,
    exitCode: 0,
    execBridgeSpooled: true,
    execBridgeExitSeq: 5,
    execBridgeDroppedBytes: 900,
  });
  assert.deepEqual(seqs(attach.mergeSpooled(r, true).events), ['e5', 'o10', 'o11']);
  assert.equal(attach.lastPublished, 11);
  const catchUp = new SeqOrderer();
  catchUp.push(out(1));
  const lost = catchUp.mergeSpooled(r, false);
  assert.deepEqual(lost.events, []);
  assert.deepEqual(lost.lost, { fromSeq: 2, toSeq: 9 });
  // Only the exit between: nothing was dropped.
  const exitOnly = new SeqOrderer();
  exitOnly.push(out(1));
  const ok = exitOnly.mergeSpooled(
    read({
      chunks: [chunk(3)],
      nextSeq: 4,
      exited: true,
      exitCode: 0,
      execBridgeSpooled: true,
      execBridgeExitSeq: 2,
      execBridgeDroppedBytes: 0,
    }),
    false,
  );
  assert.equal(ok.lost, undefined);
  assert.deepEqual(seqs(ok.events), ['e2', 'o3']);
});
