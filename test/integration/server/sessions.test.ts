import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive } from '../../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

const alive = isAlive;

describe('our exec-server: sessions', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours', ['--session-ttl-ms', '1000']);
  });
  after(() => server.stop());

  test('a dropped connection detaches the session; resume continues it and catch-up reads fill the gap exactly', async () => {
    const { client: a, sessionId } = await RawClient.session(server.url);
    await a.call('process/start', startParams('tick', ['bash', '-c', 'for i in $(seq 1 40); do echo tick$i; sleep 0.02; done']));
    await a.waitFor((m) => m.method === 'process/output' && m.params.processId === 'tick' && m.params.seq >= 3);
    const seen = a.received.filter((m) => m.method === 'process/output').map((m) => m.params.seq as number);
    const lastSeen = Math.max(...seen);
    a.close();
    await new Promise((r) => setTimeout(r, 200)); // output keeps being produced while detached

    // While attached elsewhere, resume is refused with -32010, and may be retried on the same connection.
    const { client: b } = await RawClient.session(server.url, sessionId);
    const c = await RawClient.connect(server.url);
    const refused = await c.call('initialize', { clientName: 'c', resumeSessionId: sessionId });
    assert.equal(refused.error?.code, -32010);
    assert.match(refused.error!.message, /already attached to another connection/);

    const live: number[] = [];
    const read = await b.call('process/read', { processId: 'tick', afterSeq: lastSeen });
    await b.processEvents('tick');
    for (const m of b.received) if (m.method === 'process/output') live.push(m.params.seq);
    const bySeq = new Map<number, string>();
    for (const m of a.received) if (m.method === 'process/output') bySeq.set(m.params.seq, m.params.chunk);
    for (const ch of read.result.chunks) bySeq.set(ch.seq, ch.chunk);
    for (const m of b.received) if (m.method === 'process/output') bySeq.set(m.params.seq, m.params.chunk);
    const text = [...bySeq.entries()]
      .sort((x, y) => x[0] - y[0])
      .map(([, ch]) => Buffer.from(ch, 'base64').toString())
      .join('');
    assert.equal(text, Array.from({ length: 40 }, (_, i) => `tick${i + 1}\n`).join(''));
    // Seqs are contiguous from 1 (no eviction here): nothing lost, and duplicates only by seq.
    const seqs = [...bySeq.keys()].sort((x, y) => x - y);
    assert.deepEqual(
      seqs,
      Array.from({ length: seqs.length }, (_, i) => i + 1),
    );
    b.close();
    c.close();
  });

  test('a detached session expires after the TTL and its processes are killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eb-ttl-'));
    const { client: a, sessionId } = await RawClient.session(server.url);
    await a.call('process/start', startParams('long', ['bash', '-c', `echo $$ > ${dir}/pid; echo ok; exec sleep 300`]));
    await a.waitFor(() => a.output('long') === 'ok\n');
    const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    a.close();
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(pid), false, 'the process died with its session');
    const c = await RawClient.connect(server.url);
    assert.deepEqual((await c.call('initialize', { clientName: 'late', resumeSessionId: sessionId })).error, {
      code: -32600,
      message: `unknown session id ${sessionId}`,
    });
    c.close();
  });
});
