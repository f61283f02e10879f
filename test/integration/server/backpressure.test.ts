import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';
import { processInTree, stalled } from '../stalls';

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

describe('our exec-server: backpressure', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test('a client that stops reading stalls the child (bounded server memory); nothing is dropped when it resumes', async () => {
    const { client: c } = await RawClient.session(server.url);
    const total = 128 * 1024 * 1024;
    await c.call('process/start', startParams('flood', ['head', '-c', String(total), '/dev/zero']));
    // Stop reading from the socket: the kernel buffers fill, then the server's send buffer.
    const socket = (c.ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    // The server stops reading the child once the client's buffer is full: the child stalls (it
    // must get past the 2 MiB mark of unsent output first). Without backpressure it would run to the end instead.
    const head = await processInTree(server.child.pid!, ['head', '-c', String(total), '/dev/zero']);
    const written = await stalled(head, 2 * 1024 * 1024);
    console.log(`child stalled after ${written} bytes`);
    const rss = rssKb(server.child.pid!);
    console.log(`server RSS while paused: ${rss} kB`);
    // Without backpressure the server would hold ~170 MB of base64 frames by now.
    assert.ok(rss < 150 * 1024, `server RSS ${rss} kB while the client is paused`);
    const events = c.received.filter((m) => m.method === 'process/output').length;
    assert.ok(!c.received.some((m) => m.method === 'process/exited' && m.params.processId === 'flood'), 'child is stalled, not finished');
    socket.resume();
    const all = await c.processEvents('flood', 60_000);
    let bytes = 0;
    let expected = 1;
    for (const m of all) {
      assert.equal(m.params.seq, expected++, 'contiguous seqs, in order');
      if (m.method === 'process/output') bytes += Buffer.from(m.params.chunk, 'base64').length;
    }
    assert.equal(bytes, total);
    assert.ok(events < all.length);
    c.close();
  });
});
