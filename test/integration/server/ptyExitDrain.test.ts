/**
 * A PTY child that exits right after a flood: every byte it wrote reaches the client before
 * `process/exited` and `process/closed`. (node-pty reports an exit only once its read side closes,
 * and closes it itself 200 ms after the exit if the kernel has not said EIO by then: a reader
 * that is behind, e.g. paused for a congested connection, then lost what was still queued.)
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RawClient, startParams, startServer, type StartedServer, type WireMessage } from '../../helpers/rawClient';

const MiB = 1024 * 1024;
const RUNS = 8;

/** Output bytes of one process, checking seqs are contiguous and output precedes exited and closed. */
function tally(events: WireMessage[]): { bytes: number; order: string } {
  let bytes = 0;
  let expected = 1;
  const kinds: string[] = [];
  for (const m of events) {
    assert.equal(m.params.seq, expected++, 'contiguous seqs, in order');
    if (m.method === 'process/output') bytes += Buffer.from(m.params.chunk, 'base64').length;
    const kind = (m.method ?? '').slice('process/'.length);
    if (kinds[kinds.length - 1] !== kind) kinds.push(kind);
  }
  return { bytes, order: kinds.join(',') };
}

describe('our exec-server: a PTY child that exits right after a flood', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test(`every byte arrives before exited and closed (${RUNS} runs of 32 MiB, exit at once)`, async () => {
    const { client: c } = await RawClient.session(server.url);
    const total = 32 * MiB;
    const short: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const id = `f${run}`;
      const r = await c.call('process/start', startParams(id, ['head', '-c', String(total), '/dev/zero'], { tty: true }));
      assert.ok(r.result, JSON.stringify(r));
      const { bytes, order } = tally(await c.processEvents(id, 60_000));
      assert.equal(order, 'output,exited,closed', `run ${run}: all output first`);
      if (bytes !== total) short.push(`run ${run}: ${total - bytes} bytes short`);
    }
    assert.deepEqual(short, [], `of ${RUNS} runs of ${total} bytes, some lost their last bytes`);
    c.close();
  });

  test('a child that writes a little and exits while paused: resumed, every byte arrives, then exited and closed', async () => {
    const { client: c } = await RawClient.session(server.url);
    const total = 8_000; // two reads, less than the kernel and the socket hold while nobody reads (~16 KiB)
    const dir = mkdtempSync(join(tmpdir(), 'pty-drain-'));
    const done = join(dir, 'done');
    const command = ['sh', '-c', `head -c ${total} /dev/zero; : > ${done}`];
    const started = c.call('process/start', startParams('w', command, { tty: true }));
    const paused = await c.call('process/pause', { processId: 'w' });
    assert.ok((await started).result && paused.result, JSON.stringify([await started, paused]));
    for (let i = 0; i < 1000 && !existsSync(done); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(
      existsSync(done),
      `the child wrote everything: ${JSON.stringify(c.received.filter((m) => m.params?.processId === 'w').slice(-3))} ${done}`,
    );
    // Held well past node-pty's own close of the read side (200 ms after the exit).
    await new Promise((r) => setTimeout(r, 600));
    await c.call('process/resume', { processId: 'w' });
    const { bytes, order } = tally(await c.processEvents('w', 30_000));
    assert.equal(order, 'output,exited,closed');
    assert.equal(bytes, total, `${total - bytes} bytes lost`);
    rmSync(dir, { recursive: true, force: true });
    c.close();
  });
});
