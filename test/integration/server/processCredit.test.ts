/**
 * The credit window (`process/start.execBridgeCreditWindow`, `process/ack`, capability
 * `execBridgeProcessCredit`, docs/protocol-extensions.md "Credit window"): the server reads a
 * process only while fewer than W of its bytes are unacknowledged, so a client that reads its
 * socket at once still never holds more than W + one chunk it has not acknowledged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RawClient, startParams, startServer, type StartedServer, type WireMessage } from '../../helpers/rawClient';
import { processInTree, stalled } from '../stalls';

const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 64 * KiB;

function outputsOf(c: RawClient, id: string): WireMessage[] {
  return c.received.filter((m) => m.method === 'process/output' && m.params.processId === id);
}
const bytesOf = (m: WireMessage) => Buffer.from(m.params.chunk, 'base64').length;

/**
 * Acknowledges everything received, over and over, until `closed`; checks after each ack's
 * answer that what arrived beyond the acknowledged point stays within the window. Returns the most seen.
 */
async function ackUntilClosed(c: RawClient, id: string, window: number, from = { seq: 0, bytes: 0 }): Promise<number> {
  let acked = from;
  let worst = 0;
  for (let round = 0; round < 100_000; round++) {
    const outs = outputsOf(c, id).filter((m) => m.params.seq > acked.seq);
    const beyond = outs.reduce((n, m) => n + bytesOf(m), 0);
    worst = Math.max(worst, beyond);
    assert.ok(beyond <= window + CHUNK, `${beyond} bytes beyond the last ack (window ${window})`);
    if (c.received.some((m) => m.method === 'process/closed' && m.params.processId === id)) return worst;
    if (outs.length === 0) {
      // Wait for an event newer than any received: `exited` can be in before `closed`, and waiting for
      // "beyond the ack" would then resolve at once, round after round, without the socket ever being read.
      const seen = c.received.reduce(
        (n, m) => (m.params?.processId === id && typeof m.params.seq === 'number' ? Math.max(n, m.params.seq) : n),
        0,
      );
      await c.waitFor((m) => m.params?.processId === id && m.params.seq > seen, 30_000, `an event of ${id} after seq ${seen}`);
      continue;
    }
    const last = outs[outs.length - 1]!.params.seq as number;
    assert.deepEqual((await c.call('process/ack', { processId: id, seq: last })).result, {});
    acked = { seq: last, bytes: acked.bytes + beyond };
  }
  throw new Error('too many rounds');
}

/** Contiguous seqs from 1, every byte once; returns the output's bytes. */
function contiguous(events: WireMessage[]): Buffer {
  const bySeq = new Map<number, WireMessage>();
  for (const m of events) bySeq.set(m.params.seq, m);
  const seqs = [...bySeq.keys()].sort((a, b) => a - b);
  seqs.forEach((s, i) => assert.equal(s, i + 1, 'contiguous seqs'));
  return Buffer.concat(
    seqs
      .map((s) => bySeq.get(s)!)
      .filter((m) => m.method === 'process/output')
      .map((m) => Buffer.from(m.params.chunk, 'base64')),
  );
}

describe('our exec-server: the credit window', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test('the capability is announced', async () => {
    const { client: c, init } = await RawClient.session(server.url);
    assert.equal(init.result.environmentInfo.capabilities.execBridgeProcessCredit, true);
    c.close();
  });

  for (const tty of [false, true]) {
    test(`${tty ? 'PTY' : 'pipes'}: without acks the child blocks after the window; acked as it comes, all arrives and never more than W + a chunk beyond the ack`, async () => {
      const { client: c } = await RawClient.session(server.url);
      const W = 256 * KiB;
      const total = 24 * MiB;
      const argv = ['head', '-c', String(total), '/dev/zero'];
      assert.ok((await c.call('process/start', startParams('p', argv, { tty, execBridgeCreditWindow: W }))).result);
      const head = await processInTree(server.child.pid!, argv);
      await stalled(head, 0);
      const got = outputsOf(c, 'p').reduce((n, m) => n + bytesOf(m), 0);
      assert.ok(got >= W && got <= W + CHUNK, `${got} bytes before the first ack`);
      await ackUntilClosed(c, 'p', W);
      const events = c.received.filter((m) => m.method?.startsWith('process/') && m.params?.processId === 'p');
      const data = contiguous(events);
      // A PTY turns nothing in /dev/zero's bytes (no newlines), so both are exact.
      assert.equal(data.length, total);
      assert.ok(data.every((b) => b === 0));
      c.close();
    });
  }

  test('exact bytes in order (a counting stream)', async () => {
    const { client: c } = await RawClient.session(server.url);
    const W = 128 * KiB;
    await c.call('process/start', startParams('s', ['seq', '1', '600000'], { execBridgeCreditWindow: W }));
    await ackUntilClosed(c, 's', W);
    const expected = Array.from({ length: 600000 }, (_, i) => `${i + 1}\n`).join('');
    assert.equal(
      contiguous(c.received.filter((m) => m.params?.processId === 's' && m.method?.startsWith('process/'))).toString(),
      expected,
    );
    c.close();
  });

  test('window null turns the credit off: the process runs to its end without acks', async () => {
    const { client: c } = await RawClient.session(server.url);
    const total = 8 * MiB;
    const argv = ['head', '-c', String(total), '/dev/zero'];
    await c.call('process/start', startParams('n', argv, { execBridgeCreditWindow: 64 * KiB }));
    await stalled(await processInTree(server.child.pid!, argv), 0);
    assert.deepEqual((await c.call('process/ack', { processId: 'n', seq: 0, window: null })).result, {});
    assert.equal(contiguous(await c.processEvents('n', 60_000)).length, total);
    c.close();
  });

  test('an ack can turn the credit on for a running process (a client that adopts it)', async () => {
    const { client: c } = await RawClient.session(server.url);
    const W = 128 * KiB;
    const argv = ['sh', '-c', 'read x; head -c 16777216 /dev/zero'];
    await c.call('process/start', startParams('a', argv, { pipeStdin: true }));
    await c.call('process/ack', { processId: 'a', seq: 0, window: W });
    await c.call('process/write', { processId: 'a', chunk: Buffer.from('go\n').toString('base64'), writeId: 'w1' });
    await ackUntilClosed(c, 'a', W);
    assert.equal(contiguous(c.received.filter((m) => m.params?.processId === 'a' && m.method?.startsWith('process/'))).length, 16 * MiB);
    c.close();
  });

  test('across a detach: the child stays blocked, nothing is evicted; the resumed client reads the rest and acks on', async () => {
    const { client: c, sessionId } = await RawClient.session(server.url);
    const W = 256 * KiB;
    const total = 12 * MiB;
    const argv = ['head', '-c', String(total), '/dev/urandom'];
    await c.call('process/start', startParams('d', argv, { execBridgeCreditWindow: W }));
    const head = await processInTree(server.child.pid!, argv);
    // Take a few windows, then lose the connection with output unacknowledged.
    let acked = 0;
    for (let i = 0; i < 3; i++) {
      await stalled(head, 0);
      const outs = outputsOf(c, 'd');
      acked = outs[outs.length - 1]!.params.seq;
      await c.call('process/ack', { processId: 'd', seq: acked });
    }
    const before = await stalled(head, 0);
    const live = c.received.filter((m) => m.params?.processId === 'd' && m.method?.startsWith('process/'));
    c.close();
    await c.waitClosed();
    assert.equal(await stalled(head, before), before, 'detached: still blocked');
    const { client: c2 } = await RawClient.session(server.url, sessionId);
    // The new connection saw none of it: it reads what it misses (all still retained) and acks from there.
    const read = await c2.call('process/read', { processId: 'd', afterSeq: acked });
    const readMsgs: WireMessage[] = read.result.chunks.map((ch: { seq: number; chunk: string }) => ({
      method: 'process/output',
      params: { processId: 'd', seq: ch.seq, chunk: ch.chunk },
    }));
    const lastRead = readMsgs.length ? readMsgs[readMsgs.length - 1]!.params.seq : acked;
    assert.ok(lastRead >= live[live.length - 1]!.params.seq, 'everything the first connection was sent is still retained');
    await c2.call('process/ack', { processId: 'd', seq: lastRead });
    await ackUntilClosed(c2, 'd', W, { seq: lastRead, bytes: 0 });
    const all = [...live, ...readMsgs, ...c2.received.filter((m) => m.params?.processId === 'd' && m.method?.startsWith('process/'))];
    assert.equal(contiguous(all).length, total);
    c2.close();
  });

  test('unknown process ids are refused; a bad window is invalid params', async () => {
    const { client: c } = await RawClient.session(server.url);
    assert.equal((await c.call('process/ack', { processId: 'nope', seq: 1 })).error?.code, -32600);
    await c.call('process/start', startParams('b', ['true']));
    assert.equal((await c.call('process/ack', { processId: 'b', seq: 1, window: 0 })).error?.code, -32602);
    c.close();
  });
});
