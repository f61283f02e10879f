/**
 * The credit window through our client (StartProcessOptions.creditWindow, ProcessHandle.outputConsumed;
 * docs/protocol-extensions.md "Credit window"): a slow consumer never holds more than W + one chunk
 * it has not consumed, every byte arrives exact and in order, also across a cut connection; against
 * codex (no capability) nothing new goes on the wire and the output is complete.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, websocketConnector, type ProcessHandle } from '../../src/client';
import { proxiedClient, recording, type ProxiedClient } from './clientHelpers';
import type { FaultProxy } from '../helpers/faultProxy';
import { until } from '../helpers/procs';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';
import { processInTree, stalled } from './stalls';

const KiB = 1024;
const CHUNK = 64 * KiB;
/** `seq 1 N`, as the child prints it. */
const counting = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\n`).join('');

/**
 * A consumer slower than the flood: takes `perTick` bytes every millisecond, reports them consumed,
 * and records the most it ever held unconsumed.
 */
function slowConsumer(h: ProcessHandle, perTick: number) {
  const queue: Buffer[] = [];
  const taken: Buffer[] = [];
  let queued = 0;
  let peak = 0;
  let lastSeq = 0;
  let closed = false;
  h.onEvent((e) => {
    if (e.type === 'failed') return;
    assert.ok(e.seq > lastSeq, `seq ${e.seq} after ${lastSeq}`);
    lastSeq = e.seq;
    if (e.type === 'output') {
      queue.push(e.data);
      queued += e.data.length;
      peak = Math.max(peak, queued);
    }
    if (e.type === 'closed') closed = true;
  });
  const done = new Promise<Buffer>((resolve) => {
    const step = () => {
      let budget = perTick;
      while (budget > 0 && queue.length > 0) {
        const head = queue[0]!;
        const n = Math.min(budget, head.length);
        taken.push(head.subarray(0, n));
        if (n === head.length) queue.shift();
        else queue[0] = head.subarray(n);
        queued -= n;
        budget -= n;
        h.outputConsumed(n);
      }
      if (closed && queue.length === 0) resolve(Buffer.concat(taken));
      else setTimeout(step, 1);
    };
    step();
  });
  return { done, peak: () => peak };
}

describe('client credit window against ours', () => {
  let server: ExecServerProcess;
  let proxy: FaultProxy;
  let client: ExecServerClient;
  let world: ProxiedClient | undefined;
  before(async () => {
    world = await proxiedClient('ours');
    ({ server, proxy, client } = world);
  });
  after(() => world?.stop());

  for (const tty of [false, true]) {
    test(`${tty ? 'PTY' : 'pipes'}: a flood into a slow consumer stays within W + one chunk; every byte exact and in order`, async () => {
      const W = 256 * KiB;
      const n = 1_500_000; // ~10 MiB
      const h = await client.startProcess({
        argv: ['seq', '1', String(n)],
        cwd: '/tmp',
        env: { PATH: '/usr/bin:/bin' },
        tty,
        creditWindow: W,
      });
      assert.equal(h.creditWindow, W);
      const c = slowConsumer(h, 48 * KiB);
      const got = await c.done;
      assert.equal((await h.completion).exitCode, 0);
      const expected = counting(n);
      assert.equal(got.toString(), tty ? expected.replace(/\n/g, '\r\n') : expected);
      assert.ok(c.peak() <= W + CHUNK, `peak ${c.peak()} bytes unconsumed (window ${W})`);
      console.log(`# ${tty ? 'pty' : 'pipes'}: peak unconsumed ${c.peak()} bytes, window ${W}`);
    });
  }

  test('a cut connection during a flood: resumed, nothing lost or doubled, the bound holds', async () => {
    const W = 256 * KiB;
    const n = 2_500_000; // ~18 MiB
    const h = await client.startProcess({ argv: ['seq', '1', String(n)], cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, creditWindow: W });
    const c = slowConsumer(h, 32 * KiB);
    let recovered = 0;
    const sub = client.onDidChangeState((s) => {
      if (s.kind === 'connected') recovered++;
    });
    for (let cut = 0; cut < 2; cut++) {
      await new Promise((r) => setTimeout(r, 150));
      proxy.cut();
      await until(() => recovered > cut, 30_000, `resume ${cut + 1}`);
    }
    sub.dispose();
    const got = await c.done;
    assert.equal((await h.completion).exitCode, 0);
    assert.equal(got.toString(), counting(n));
    assert.ok(c.peak() <= W + CHUNK, `peak ${c.peak()} bytes unconsumed (window ${W})`);
  });

  test('a client that adopts the process without a window (a window reload) turns the old credit off: it runs to its end', async () => {
    const endpoint = { kind: 'websocket' as const, url: server.url, token: server.token };
    const first = await ExecServerClient.connect({ endpoint });
    const total = 8 * 1024 * KiB;
    const argv = ['head', '-c', String(total), '/dev/zero'];
    const h = await first.startProcess({ argv, cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, creditWindow: 128 * KiB });
    // Nobody consumes: the child blocks at the window; then its client goes away.
    const head = await processInTree(server.child.pid!, argv);
    const at = await stalled(head, 0);
    assert.ok(at < total, `stalled at ${at}`);
    const sessionId = first.sessionId;
    first.dispose();
    const second = await ExecServerClient.connect({ endpoint, resumeSessionId: sessionId });
    try {
      const { handle, evictedBefore } = await second.attachProcess(h.processId, { tty: false, stdinWritable: false });
      // The old credit holds the process until the retained output is read: nothing was evicted.
      assert.equal(evictedBefore, 0);
      assert.equal(handle.creditWindow, undefined);
      let bytes = 0;
      handle.onEvent((e) => {
        if (e.type === 'output') bytes += e.data.length;
      });
      assert.equal((await handle.completion).exitCode, 0);
      // Under 1 MiB had been sent when it stalled, all of it retained: every byte, from the first.
      assert.equal(bytes, total, `${bytes} bytes after the adoption`);
    } finally {
      second.dispose();
    }
  });
  test('a client that adopts the process with a window (a reopened terminal) keeps it on: the child stalls until it consumes, then all arrives', async () => {
    const endpoint = { kind: 'websocket' as const, url: server.url, token: server.token };
    const first = await ExecServerClient.connect({ endpoint });
    const W = 128 * KiB;
    const n = 1_500_000;
    const argv = ['seq', '1', String(n)];
    const h = await first.startProcess({ argv, cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, creditWindow: W });
    const head = await processInTree(server.child.pid!, argv);
    await stalled(head, 0);
    const sessionId = first.sessionId;
    first.dispose();
    const second = await ExecServerClient.connect({ endpoint, resumeSessionId: sessionId });
    try {
      const { handle, evictedBefore } = await second.attachProcess(h.processId, { tty: false, stdinWritable: false, creditWindow: W });
      assert.equal(evictedBefore, 0);
      assert.equal(handle.creditWindow, W);
      const received: Buffer[] = [];
      let consuming = false;
      let held = 0;
      handle.onEvent((e) => {
        if (e.type !== 'output') return;
        received.push(e.data);
        if (consuming) handle.outputConsumed(e.data.length);
        else held += e.data.length;
      });
      // Nothing consumed yet: the process is still held by the window (without one it would run to its end).
      // (While nobody was attached it ran on into the output spool: the session spools, our client asked.)
      const at = await stalled(head, 0);
      assert.equal(handle.status, 'running', `stalled at ${at} bytes`);
      assert.ok(at < counting(n).length, `stalled at ${at}`);
      consuming = true;
      handle.outputConsumed(held);
      assert.equal((await handle.completion).exitCode, 0);
      assert.equal(Buffer.concat(received).toString(), counting(n));
    } finally {
      second.dispose();
    }
  });
});

describe('client credit window against codex (no capability)', () => {
  let server: ExecServerProcess;
  let client: ExecServerClient;
  const sent: string[] = [];
  before(async () => {
    server = await startExecServer('codex');
    client = await ExecServerClient.connect({ connector: recording(websocketConnector(server.url), sent) });
  });
  after(async () => {
    client?.dispose();
    await server?.stop();
  });

  test('creditWindow sends nothing new; outputConsumed is a no-op; the output is complete', async () => {
    const n = 400_000;
    const h = await client.startProcess({ argv: ['seq', '1', String(n)], cwd: '/tmp', env: {}, tty: false, creditWindow: 64 * KiB });
    assert.equal(h.creditWindow, undefined);
    const got = await slowConsumer(h, 1024 * KiB).done;
    assert.equal((await h.completion).exitCode, 0);
    assert.equal(got.toString(), counting(n));
    assert.ok(sent.some((t) => t.includes('"process/start"')));
    assert.deepEqual(
      sent.filter((t) => /process\/ack|execBridgeCreditWindow/.test(t)),
      [],
    );
  });
});
