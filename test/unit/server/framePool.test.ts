import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FramePool, frameBytes } from '../../../src/server/framePool';
import { encodeOutputNotification } from '../../../src/server/managedProcess';

test('frames built in a reused buffer are exact, and a buffer is reused only after it was given back', () => {
  const pool = new FramePool(frameBytes(64 * 1024), 2);
  const taken: Buffer[] = [];
  const frames: Buffer[] = [];
  for (const [seq, len] of [
    [1, 65536],
    [2, 10],
    [3, 0],
    [4, 65535],
  ] as const) {
    const data = Buffer.from(Array.from({ length: len }, (_, i) => (i * 13 + seq) % 256));
    const frame = encodeOutputNotification('"p"', seq, 'stdout', data, (n) => {
      const b = pool.take(n)!;
      taken.push(b);
      return b;
    });
    frames.push(frame);
    assert.deepEqual(JSON.parse(frame.toString('utf8')), {
      method: 'process/output',
      params: { processId: 'p', seq, stream: 'stdout', chunk: data.toString('base64') },
    });
  }
  // None was given back: four distinct buffers, so no frame overwrote another still in flight.
  assert.equal(new Set(taken).size, 4);
  for (const b of taken) pool.give(b);
  assert.ok(taken.includes(pool.take(1)!), 'a given-back buffer is reused');
  // At most `maxIdle` idle buffers are kept; a frame too large for the pool is not pooled.
  assert.equal(taken.filter((b) => b === pool.take(1)).length, 1);
  assert.equal(taken.includes(pool.take(1)!), false, 'only two were kept');
  assert.equal(pool.take(pool.slabBytes + 1), undefined);
  // A process id too long for the pool's head room still gets its frame (allocated as before).
  const long = JSON.stringify('x'.repeat(4096));
  const big = encodeOutputNotification(long, 9, 'stderr', Buffer.alloc(65536, 1), (n) => pool.take(n));
  assert.equal(JSON.parse(big.toString('utf8')).params.seq, 9);
});

test('idle buffers beyond the few kept go once the pool was not used for a while; in use, they stay', async () => {
  const pool = new FramePool(1024, 128, 2, 50);
  const bufs = Array.from({ length: 10 }, () => pool.take(1)!);
  for (const b of bufs) pool.give(b);
  assert.equal(pool.idle, 10);
  // In use: takes before the first trim check (timers run in deadline order) keep the idle buffers.
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    pool.give(pool.take(1)!);
  }
  assert.equal(pool.idle, 10);
  // Unused for a whole period: only `keepIdle` stay (bounded wait: a few periods).
  for (let i = 0; i < 40 && pool.idle > 2; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(pool.idle, 2);
});
