/**
 * Per-process flow control (`process/pause` / `process/resume`, capability `execBridgeProcessPause`,
 * docs/protocol-extensions.md): a paused process blocks on its pipe or PTY while the connection is
 * otherwise idle and uncongested; resumed, it runs on, and every byte arrives once, in seq order.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { RawClient, startParams, startServer, type StartedServer, type WireMessage } from '../../helpers/rawClient';
import { processInTree, stalled } from '../stalls';

const MiB = 1024 * 1024;

function outputBytes(events: WireMessage[]): number {
  let bytes = 0;
  let expected = 1;
  for (const m of events) {
    assert.equal(m.params.seq, expected++, 'contiguous seqs, in order');
    if (m.method === 'process/output') bytes += Buffer.from(m.params.chunk, 'base64').length;
  }
  return bytes;
}

describe('our exec-server: process/pause and process/resume', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test('the capability is announced', async () => {
    const { client: c, init } = await RawClient.session(server.url);
    assert.equal(init.result.environmentInfo.capabilities.execBridgeProcessPause, true);
    c.close();
  });

  for (const tty of [false, true]) {
    test(`a paused ${tty ? 'PTY' : 'pipe'} process blocks (far below the connection's 8 MiB mark); resumed, all its bytes arrive`, async () => {
      const { client: c } = await RawClient.session(server.url);
      const total = 48 * MiB;
      const argv = ['head', '-c', String(total), '/dev/zero'];
      // Paused before it can write much: the pause is answered before the child is even found.
      const started = c.call('process/start', startParams('p', argv, { tty }));
      const paused = await c.call('process/pause', { processId: 'p' });
      assert.ok((await started).result, JSON.stringify(await started));
      assert.deepEqual(paused.result, {});
      const head = await processInTree(server.child.pid!, argv);
      // The client reads its socket all the time: only the pause can hold the child back.
      const written = await stalled(head, 0);
      assert.ok(written < 4 * MiB, `stalled after ${written} bytes`);
      const seen = c.received.filter((m) => m.params?.processId === 'p');
      assert.ok(!seen.some((m) => m.method === 'process/exited'), 'stalled, not finished');
      assert.deepEqual((await c.call('process/resume', { processId: 'p' })).result, {});
      assert.equal(outputBytes(await c.processEvents('p', 60_000)), total);
      c.close();
    });
  }

  test('pause, resume, pause again: the process stalls each time and nothing is lost', async () => {
    const { client: c } = await RawClient.session(server.url);
    const total = 64 * MiB;
    const argv = ['head', '-c', String(total), '/dev/urandom'];
    await c.call('process/start', startParams('q', argv));
    const head = await processInTree(server.child.pid!, argv);
    await c.call('process/pause', { processId: 'q' });
    const first = await stalled(head, 0);
    await c.call('process/resume', { processId: 'q' });
    // It moves again: wait until it has written clearly more, then hold it once more.
    for (let i = 0; i < 2000; i++) {
      const now = Number(/^wchar:\s*(\d+)$/m.exec(readFileSync(`/proc/${head}/io`, 'latin1'))?.[1] ?? 0);
      if (now > first + 8 * MiB) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    await c.call('process/pause', { processId: 'q' });
    const second = await stalled(head, first + 1);
    assert.ok(second > first && second < total, `first stall at ${first}, second at ${second}`);
    await c.call('process/resume', { processId: 'q' });
    assert.equal(outputBytes(await c.processEvents('q', 60_000)), total);
    c.close();
  });

  test('a pause lasts while the session is detached: nothing is evicted, the resumed client reads every byte', async () => {
    const { client: c, sessionId } = await RawClient.session(server.url);
    const total = 16 * MiB;
    const argv = ['head', '-c', String(total), '/dev/zero'];
    await c.call('process/start', startParams('d', argv));
    await c.call('process/pause', { processId: 'd' });
    const head = await processInTree(server.child.pid!, argv);
    const before = await stalled(head, 0);
    const live = c.received.filter((m) => m.params?.processId === 'd');
    c.close();
    await c.waitClosed();
    // Detached: still blocked (without the pause a detached session reads on and evicts).
    const after = await stalled(head, before);
    assert.equal(after, before);
    const { client: c2 } = await RawClient.session(server.url, sessionId);
    const lastSeen = live.length === 0 ? 0 : live[live.length - 1]!.params.seq;
    const read = await c2.call('process/read', { processId: 'd', afterSeq: lastSeen });
    await c2.call('process/resume', { processId: 'd' });
    const later = await c2.processEvents('d', 60_000);
    // Seqs continue from what the first connection saw: first the retained ones, then live ones.
    const merged = new Map<number, WireMessage>();
    for (const m of live) merged.set(m.params.seq, m);
    for (const ch of read.result.chunks) merged.set(ch.seq, { method: 'process/output', params: { seq: ch.seq, chunk: ch.chunk } });
    for (const m of later) merged.set(m.params.seq, m);
    assert.equal(outputBytes([...merged.keys()].sort((a, b) => a - b).map((k) => merged.get(k)!)), total);
    c2.close();
  });

  test('unknown process ids are refused as for every process method', async () => {
    const { client: c } = await RawClient.session(server.url);
    const r = await c.call('process/pause', { processId: 'nope' });
    assert.equal(r.error?.code, -32600);
    assert.match(r.error?.message, /unknown process id nope/);
    c.close();
  });
});
