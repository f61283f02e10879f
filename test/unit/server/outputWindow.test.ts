import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { encodeOutputNotification } from '../../../src/server/managedProcess';
import { OutputWindow } from '../../../src/server/outputWindow';

const chunk = (seq: number, n: number) => ({ seq, stream: 'stdout' as const, data: Buffer.alloc(n, seq % 256) });

test('returns chunks after a seq, skipping seqs that are not output', () => {
  const w = new OutputWindow();
  w.push(chunk(1, 3));
  w.push(chunk(2, 3));
  w.push(chunk(4, 3)); // seq 3 was the exit event
  assert.deepEqual(
    w.after(0).map((c) => c.seq),
    [1, 2, 4],
  );
  assert.deepEqual(
    w.after(2).map((c) => c.seq),
    [4],
  );
  assert.deepEqual(
    w.after(3).map((c) => c.seq),
    [4],
  );
  assert.deepEqual(w.after(4), []);
});

test('maxBytes returns whole chunks and always at least one', () => {
  const w = new OutputWindow();
  for (let s = 1; s <= 5; s++) w.push(chunk(s, 10));
  assert.deepEqual(
    w.after(0, 0).map((c) => c.seq),
    [1],
  );
  assert.deepEqual(
    w.after(0, 1).map((c) => c.seq),
    [1],
  );
  assert.deepEqual(
    w.after(0, 25).map((c) => c.seq),
    [1, 2],
  );
  assert.deepEqual(
    w.after(2, 30).map((c) => c.seq),
    [3, 4, 5],
  );
});

test('evicts the oldest chunks beyond the byte budget; the gap shows the loss', () => {
  const w = new OutputWindow(100);
  for (let s = 1; s <= 30; s++) w.push(chunk(s, 10));
  assert.equal(w.retainedBytes, 100);
  assert.equal(w.firstSeq, 21);
  assert.equal(w.after(0)[0]!.seq, 21);
  // A single chunk bigger than the budget is still kept.
  w.push(chunk(31, 500));
  assert.deepEqual(
    w.after(0).map((c) => c.seq),
    [31],
  );
});

test('evicts beyond the chunk-count bound and stays fast over many pushes', () => {
  const w = new OutputWindow(1 << 30, 1000);
  for (let s = 1; s <= 200_000; s++) w.push(chunk(s, 1));
  assert.equal(w.retainedChunks, 1000);
  assert.equal(w.firstSeq, 199_001);
  assert.equal(w.after(199_999).length, 1);
});

test('output notifications encoded straight to bytes are the JSON a serializer would produce', () => {
  for (const [id, len] of [
    ['p1', 0],
    ['p1', 1],
    ['p1', 2],
    ['ünïcode "id"\n', 3],
    ['', 65536],
  ] as const) {
    const data = Buffer.from(Array.from({ length: len }, (_, i) => (i * 7) % 256));
    const frame = encodeOutputNotification(JSON.stringify(id), 42, 'stderr', data);
    assert.deepEqual(JSON.parse(frame.toString('utf8')), {
      method: 'process/output',
      params: { processId: id, seq: 42, stream: 'stderr', chunk: data.toString('base64') },
    });
  }
});

test('an evicted chunk is let go at once (the window must not keep a long stream alive)', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const w = new OutputWindow(1024 * 1024);
  // 64 KiB chunks: far fewer evictions than it takes to compact the slot array.
  let evicted: WeakRef<Buffer> | undefined;
  (() => {
    const first = chunk(1, 64 * 1024);
    evicted = new WeakRef(first.data);
    w.push(first);
  })();
  for (let seq = 2; seq <= 40; seq++) w.push(chunk(seq, 64 * 1024));
  assert.equal(w.firstSeq, 25, 'the newest 1 MiB is retained');
  await new Promise((r) => setImmediate(r)); // WeakRef targets stay alive until the job ends
  gc();
  assert.equal(evicted.deref(), undefined, 'the evicted chunk was collected');
  assert.equal(w.after(24).length, 16);
});

test('push copies: the caller may reuse its buffer; slabs recycled over a long stream keep every retained byte', () => {
  const w = new OutputWindow(1024 * 1024);
  const reused = Buffer.alloc(64 * 1024);
  const sizes = [65536, 4096, 100, 30000, 65536, 5000];
  const sent = new Map<number, Buffer>();
  for (let seq = 1; seq <= 2000; seq++) {
    const n = sizes[seq % sizes.length]!;
    reused.fill(seq % 251, 0, n);
    reused.writeUInt32LE(seq, 0);
    w.push({ seq, stream: 'stdout', data: reused.subarray(0, n) });
    sent.set(seq, Buffer.from(reused.subarray(0, n)));
    reused.fill(0xee); // the next read overwrites it
  }
  const kept = w.after(0);
  assert.ok(kept.length > 20);
  assert.ok(w.retainedBytes <= 1024 * 1024);
  for (const c of kept) assert.ok(c.data.equals(sent.get(c.seq)!), `seq ${c.seq} intact`);
  assert.equal(kept.at(-1)!.seq, 2000);
});
