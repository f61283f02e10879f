/**
 * ProcessHandle.pauseOutput / resumeOutput (docs/protocol-extensions.md, "Per-process flow
 * control"): against ours the child blocks and every byte still arrives, also when the connection is
 * cut while paused (the pause is sent again after the resume); against codex (no capability)
 * nothing new goes on the wire.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, websocketConnector, type ProcessHandle } from '../../src/client';
import { proxiedClient, recording, type ProxiedClient } from './clientHelpers';
import type { FaultProxy } from '../helpers/faultProxy';
import { until } from '../helpers/procs';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';
import { processInTree, stalled } from './stalls';

const MiB = 1024 * 1024;

/** Counts a handle's output bytes and checks that seqs only grow. */
function counter(h: ProcessHandle) {
  let bytes = 0;
  let lastSeq = 0;
  h.onEvent((e) => {
    if (e.type === 'failed') return;
    assert.ok(e.seq > lastSeq, `seq ${e.seq} after ${lastSeq}`);
    lastSeq = e.seq;
    if (e.type === 'output') bytes += e.data.length;
  });
  return { bytes: () => bytes };
}

describe('client flow control against ours', () => {
  let server: ExecServerProcess;
  let proxy: FaultProxy;
  let client: ExecServerClient;
  let world: ProxiedClient | undefined;
  before(async () => {
    world = await proxiedClient('ours');
    ({ server, proxy, client } = world);
  });
  after(() => world?.stop());

  test('pauseOutput blocks the child, resumeOutput lets it finish with every byte', async () => {
    const total = 128 * MiB;
    const argv = ['head', '-c', String(total), '/dev/zero'];
    const h = await client.startProcess({ argv, cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, tty: false });
    assert.equal(h.canPause, true);
    h.pauseOutput();
    const out = counter(h);
    const head = await processInTree(server.child.pid!, argv);
    const at = await stalled(head, 0);
    assert.ok(at < total, `stalled at ${at}`);
    assert.equal(h.status, 'running');
    h.resumeOutput();
    const done = await h.completion;
    assert.equal(done.exitCode, 0);
    assert.equal(out.bytes(), total);
  });

  test('a pause survives a cut connection: sent again after the resume, the child stays blocked', async () => {
    const total = 256 * MiB;
    const argv = ['head', '-c', String(total), '/dev/zero'];
    const h = await client.startProcess({ argv, cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, tty: false });
    h.pauseOutput();
    const out = counter(h);
    // In force at the server before the cut: a pause still in flight when the connection dies may
    // be lost (the client says it again after the resume), and a stall alone may be congestion.
    await h.flowSettled();
    const head = await processInTree(server.child.pid!, argv);
    const first = await stalled(head, 0);
    let recovered = false;
    const sub = client.onDidChangeState((s) => {
      if (s.kind === 'connected') recovered = true;
    });
    proxy.cut();
    await until(() => recovered, 30_000, 'the resume');
    sub.dispose();
    // Reattached, the server reads again until the client's pause arrives once more.
    const second = await stalled(head, first);
    assert.ok(second < total, `stalled again at ${second}`);
    h.resumeOutput();
    assert.equal((await h.completion).exitCode, 0);
    assert.equal(out.bytes(), total);
  });
});

describe('client flow control against codex (no capability)', () => {
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

  test('pauseOutput and resumeOutput send nothing; the output is complete', async () => {
    const total = 8 * MiB;
    const h = await client.startProcess({ argv: ['head', '-c', String(total), '/dev/zero'], cwd: '/tmp', env: {}, tty: false });
    assert.equal(h.canPause, false);
    const out = counter(h);
    h.pauseOutput();
    h.resumeOutput();
    h.pauseOutput();
    assert.equal((await h.completion).exitCode, 0);
    assert.equal(out.bytes(), total);
    // Something was sent after the start (proof the recorder works), but no flow control method.
    assert.ok(sent.some((t) => t.includes('"process/start"')));
    assert.deepEqual(
      sent.filter((t) => /process\/(pause|resume)/.test(t)),
      [],
    );
  });
});
