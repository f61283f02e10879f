import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputCoalescer } from '../../../src/server/processOutput';

test('OutputCoalescer: reads from one reused buffer come out exact, in order, at most maxChunk each', async () => {
  const out: Array<{ stream: string; data: Buffer }> = [];
  const c = new OutputCoalescer(1000, (stream, data) => out.push({ stream, data: Buffer.from(data) }));
  const reused = Buffer.alloc(5000);
  const expected: Record<string, Buffer[]> = { stdout: [], stderr: [] };
  const sizes = [1, 999, 1000, 1001, 2500, 3, 5000, 7];
  for (let i = 0; i < 200; i++) {
    const n = sizes[i % sizes.length]!;
    const stream = i % 5 === 0 ? 'stderr' : 'stdout';
    for (let j = 0; j < n; j++) reused[j] = (i * 31 + j) & 0xff;
    expected[stream]!.push(Buffer.from(reused.subarray(0, n)));
    c.push(stream, reused.subarray(0, n));
    reused.fill(0xee); // overwritten by the next read
    if (i % 7 === 0) await new Promise((r) => setImmediate(r)); // a pending read goes out on the next turn
  }
  await new Promise((r) => setImmediate(r));
  c.flush();
  assert.ok(out.every((o) => o.data.length > 0 && o.data.length <= 1000));
  for (const s of ['stdout', 'stderr'])
    assert.deepEqual(Buffer.concat(out.filter((o) => o.stream === s).map((o) => o.data)), Buffer.concat(expected[s]!));
});
