import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive, until } from '../../helpers/procs';
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

  /** initialize + initialized with extra params; the answer's result. */
  async function open(extra: Record<string, unknown>, resumeSessionId?: string) {
    const client = await RawClient.connect(server.url);
    const init = await client.call('initialize', { clientName: 'ttl-test', ...(resumeSessionId ? { resumeSessionId } : {}), ...extra });
    assert.equal(init.error, undefined, JSON.stringify(init.error));
    client.notify('initialized', {});
    return { client, result: init.result as Record<string, unknown> & { sessionId: string } };
  }

  test("a client asks how long its detached session is kept; a codex-style client gets the default and codex's answer", async () => {
    const asked = await open({ execBridgeSessionTtlMs: 600_000 });
    assert.equal(asked.result.execBridgeSessionTtlMs, 600_000);
    const capped = await open({ execBridgeSessionTtlMs: 30 * 24 * 3600_000 });
    assert.equal(capped.result.execBridgeSessionTtlMs, 7 * 24 * 3600_000, 'capped at the 7-day maximum');
    for (const junk of [0, -5, 1.5, 'long', null, true]) {
      const j = await open({ execBridgeSessionTtlMs: junk });
      assert.equal(j.result.execBridgeSessionTtlMs, 1000, `${JSON.stringify(junk)}: the server's default`);
      j.client.close();
    }
    const codex = await open({});
    assert.equal('execBridgeSessionTtlMs' in codex.result, false, 'no field for a client that did not ask');

    // Both start a process and drop: the default (1 s) session ends, the asked-for one lives on.
    const dir = mkdtempSync(join(tmpdir(), 'eb-ttl-ask-'));
    for (const [c, name] of [
      [asked.client, 'kept'],
      [codex.client, 'dropped'],
    ] as const) {
      await c.call('process/start', startParams(name, ['bash', '-c', `echo $$ > ${dir}/${name}; echo ok; exec sleep 300`]));
      await c.waitFor(() => c.output(name) === 'ok\n');
    }
    const kept = Number(readFileSync(join(dir, 'kept'), 'utf8'));
    const dropped = Number(readFileSync(join(dir, 'dropped'), 'utf8'));
    asked.client.close();
    codex.client.close();
    capped.client.close();

    // The listing says who is detached, how long each is kept and when it ends.
    const lister = await open({ execBridgeSessionTtlMs: 1 });
    const listed = await lister.client.call('execBridge/sessions', {});
    const mine = (listed.result.sessions as Array<Record<string, unknown>>).find((x) => x.sessionId === asked.result.sessionId);
    assert.ok(mine, JSON.stringify(listed.result));
    assert.equal(mine.attached, false);
    assert.equal(mine.ttlMs, 600_000);
    assert.equal(mine.processes, 1);
    assert.equal((mine.expiresAt as number) - (mine.detachedAt as number), 600_000);
    lister.client.close();

    for (let i = 0; i < 200 && alive(dropped); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(dropped), false, 'the default-TTL session ended');
    assert.equal(alive(kept), true, 'the session that asked for 10 min still runs');
    // It resumes, with its process; a resume without the field keeps the TTL it had.
    const back = await open({}, asked.result.sessionId);
    assert.equal(back.result.sessionId, asked.result.sessionId);
    const read = await back.client.call('process/read', { processId: 'kept', afterSeq: 0 });
    assert.equal(Buffer.from(read.result.chunks[0].chunk, 'base64').toString(), 'ok\n');
    await back.client.call('process/terminate', { processId: 'kept' });
    back.client.close();
  });

  test('a process that exits while its session is detached stays readable until the resume, beyond the default retention', async () => {
    const a = await open({ execBridgeSessionTtlMs: 600_000 });
    const dir = mkdtempSync(join(tmpdir(), 'eb-ttl-exit-'));
    const gate = join(dir, 'go');
    await a.client.call(
      'process/start',
      startParams('late', ['bash', '-c', `echo start; while [ ! -e ${gate} ]; do sleep 0.05; done; echo done; echo $$ > ${dir}/pid`]),
    );
    await a.client.waitFor(() => a.client.output('late') === 'start\n');
    a.client.close();
    writeFileSync(gate, '');
    await until(() => existsSync(join(dir, 'pid')), 20_000, 'the process to exit');
    // Twice the default TTL (1 s), measured by events: a default-TTL session dropped after the exit
    // ends (its process dies), twice over. The attached default would have released the record by then.
    for (const round of [1, 2]) {
      const marker = await open({});
      await marker.client.call('process/start', startParams('m', ['bash', '-c', `echo $$ > ${dir}/m${round}; echo ok; exec sleep 300`]));
      await marker.client.waitFor(() => marker.client.output('m') === 'ok\n');
      const pid = Number(readFileSync(join(dir, `m${round}`), 'utf8'));
      marker.client.close();
      await until(() => !alive(pid), 20_000, 'the default-TTL session to end');
    }
    const back = await open({}, a.result.sessionId);
    const read = await back.client.call('process/read', { processId: 'late', afterSeq: 0 });
    assert.equal(read.error, undefined, 'the exited process is still known');
    const text = read.result.chunks.map((c: { chunk: string }) => Buffer.from(c.chunk, 'base64').toString()).join('');
    assert.equal(text, 'start\ndone\n');
    assert.equal(read.result.exited, true);
    back.client.close();
  });
});
