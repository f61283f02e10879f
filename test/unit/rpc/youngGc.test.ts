import assert from 'node:assert/strict';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { StdioTransport } from '../../../src/rpc/stdioTransport';
import { tuneYoungGeneration } from '../../../src/rpc/youngGc';

// This file changes V8 flags of its own test process (node --test runs each file in a process).

const MiB = 1024 * 1024;
const turn = () => new Promise((r) => setImmediate(r));
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;

/** Counts minor collections while `work` runs (gc entries are delivered a turn or two later). */
async function minorCollections(work: () => void): Promise<number> {
  let n = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) n++;
  });
  observer.observe({ entryTypes: ['gc'] });
  work();
  for (let i = 0; i < 5; i++) await turn();
  observer.disconnect();
  return n;
}

test('once tuned, a transport that sends N × step bytes triggers a young-generation collection per step; the young generation stops growing at the cap', async () => {
  const out = new PassThrough();
  out.resume();
  const transport = new StdioTransport(new PassThrough(), out);
  const frame = Buffer.alloc(MiB, 0x61);
  const send8 = () => {
    for (let i = 0; i < 8; i++) transport.sendFrame(frame);
  };
  const before = await minorCollections(send8);
  assert.ok(tuneYoungGeneration({ stepBytes: 2 * MiB, maxNewSpaceBytes: 4 * MiB }), 'this runtime takes the flags');
  const after = await minorCollections(send8);
  assert.ok(after >= 4, `8 MiB sent in steps of 2 MiB: ${after} minor collections (untuned: ${before})`);

  // Objects that survive make V8 double its young generation; capped, it stays at 4 MiB. In small
  // steps with turns between them, as a server's work comes (one sync burst could double it twice).
  let keep: object[] = [];
  for (let round = 0; round < 400; round++) {
    for (let i = 0; i < 5_000; i++) keep.push({ i, a: [i] });
    if (keep.length > 200_000) keep = [];
    await turn();
    await turn();
  }
  assert.ok(newSpace() <= 4 * MiB, `young generation ${newSpace() / MiB} MiB, cap 4 MiB`);
  transport.close();
});
