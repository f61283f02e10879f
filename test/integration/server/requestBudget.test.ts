/**
 * Incoming and outgoing bytes have a budget (security issue 20, item 8). A client that sends large
 * requests that cannot finish (writes to a child that does not read, files on a disk that stopped
 * answering) must not grow the server without bound: past its budget a large request gets a clear
 * `-32001` and the connection stays up. Large answers are built a few at a time and all arrive.
 * Each case runs on its own server, so VmHWM (the peak resident size) is that case's peak. The
 * bounds are generous; the old code passed each of them by gigabytes (numbers in the comments).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { until } from '../../helpers/procs';
import { RawClient, startParams, startServer, tmpUri, type StartedServer, type WireMessage } from '../../helpers/rawClient';

const MiB = 1024 * 1024;
/** What the server answers a large request over its budget (codex's app-server uses it for "overloaded"). */
const OVERLOADED = -32001;

function memMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/**
 * Sends `count` frames built by `frame(i)`, each once the socket took the previous one, and stops
 * early once the server's resident size passes `stopAtMb` (so the old code fails fast instead of
 * taking the machine's memory). Resolves with how many were sent.
 */
async function sendWhileBounded(ws: WebSocket, count: number, frame: (i: number) => string, serverPid: number, stopAtMb: number) {
  let sent = 0;
  for (; sent < count; sent++) {
    if (memMb(serverPid, 'VmRSS') > stopAtMb) break;
    await new Promise<void>((resolve, reject) => ws.send(frame(sent), (err) => (err ? reject(err) : resolve())));
  }
  return sent;
}

/** Answers (result or error) to the string ids starting with `prefix`. */
function answersTo(c: RawClient, prefix: string): WireMessage[] {
  return c.received.filter((m) => m.method === undefined && typeof m.id === 'string' && m.id.startsWith(prefix));
}

function assertOverloadedErrors(answers: WireMessage[]): void {
  for (const m of answers.filter((x) => x.error)) {
    assert.equal(m.error!.code, OVERLOADED, JSON.stringify(m.error));
    assert.match(m.error!.message, /server overloaded.*limit \d+ MiB.*wait for/i, m.error!.message);
  }
}

describe('request budget: large requests that cannot finish', () => {
  let server: StartedServer;
  before(async () => {
    server = await startServer('ours');
  });
  after(() => server.stop());

  test('40 process/write of 11 MiB to a stopped child: bounded memory, -32001 past the budget, nothing lost once it reads', async () => {
    const { client: a } = await RawClient.session(server.url);
    const { client: b } = await RawClient.session(server.url);
    // The shell prints its pid, stops itself, and once continued becomes a `cat` that drains stdin.
    const start = await a.call(
      'process/start',
      startParams('sink', ['/bin/sh', '-c', 'echo $$; kill -STOP $$; exec cat >/dev/null'], { pipeStdin: true }),
    );
    assert.equal(start.error, undefined, JSON.stringify(start.error));
    const shellPid = Number((await until(() => a.output('sink').match(/^(\d+)\n/)?.[1], 20_000, 'the shell printed its pid')).trim());
    await until(() => /^State:\s+T/m.test(readFileSync(`/proc/${shellPid}/status`, 'utf8')), 20_000, 'the shell stopped');

    const n = 40;
    const chunk = Buffer.alloc(11 * MiB, 0x5a).toString('base64');
    const pid = server.child.pid!;
    // The old code reached 1.2 GB with 40 such writes (all queued for the child's stdin at once), 3.4 GB with 120.
    const sent = await sendWhileBounded(
      a.ws,
      n,
      (i) => JSON.stringify({ id: `w${i}`, method: 'process/write', params: { processId: 'sink', chunk, writeId: `w${i}` } }),
      pid,
      1500,
    );
    // Answers come in the order the requests were read: once this one is answered, every refusal is.
    assert.equal((await a.call('environment/status', {}, 'barrier', 60_000)).result?.status, 'ready');
    const peak = memMb(pid, 'VmHWM');
    const early = answersTo(a, 'w');
    const refused = early.filter((m) => m.error).length;
    console.log(
      `${sent} writes of 11 MiB sent; ${refused} refused, ${early.length - refused} answered, the rest held; server peak ${peak.toFixed(0)} MB`,
    );
    assert.equal(sent, n, `the server passed 1500 MB after ${sent} writes`);
    assert.ok(peak < 600, `server peak ${peak.toFixed(0)} MB`);
    assert.ok(refused > 0, 'no write was refused');
    assertOverloadedErrors(early);
    // What is held is within the budget: 64 MiB of request text is 4 of these (14.7 MB each).
    assert.ok(n - early.length <= 6, `${n - early.length} writes held`);
    assert.equal(a.closed, false, 'the connection survived');
    assert.equal((await b.call('environment/status', {})).result?.status, 'ready', 'another client is answered');
    const other = await b.call('process/start', startParams('echo', ['/bin/echo', 'still here']));
    assert.equal(other.error, undefined);
    await until(() => b.output('echo') === 'still here\n', 20_000, "another client's process output");

    // Once the child reads, every held write is accepted, in order; none is lost.
    process.kill(shellPid, 'SIGCONT');
    await until(() => answersTo(a, 'w').length === n, 60_000, 'every write answered');
    const all = answersTo(a, 'w');
    assert.equal(all.filter((m) => m.error).length, refused, 'no further refusal');
    assert.ok(all.filter((m) => m.result?.status === 'accepted').length >= n - refused);
    // A refused write was not remembered: sent again (same writeId) it is written now.
    const retry = all.find((m) => m.error)!.id as string;
    const again = await a.call('process/write', { processId: 'sink', chunk, writeId: retry }, `again-${retry}`, 60_000);
    assert.equal(again.result?.status, 'accepted', JSON.stringify(again.error));
    assert.equal(a.closed, false);
    await a.call('process/terminate', { processId: 'sink' });
    a.close();
    b.close();
  });
});

describe('request budget: fs/writeFile onto a disk that stopped answering', () => {
  let server: StartedServer;
  let dir: string;
  let mnt: string;
  let frozen = false;
  const thaw = () => {
    if (frozen) spawnSync('fsfreeze', ['-u', mnt]);
    frozen = false;
  };
  // A writer blocked on a frozen file system cannot even be killed: thaw whatever happens.
  process.on('exit', thaw);
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'eb-budget-'));
    mnt = join(dir, 'mnt');
    mkdirSync(mnt);
    // A small ext4 on a loop device, frozen as a hung disk (or NFS server) would be.
    execFileSync('truncate', ['-s', '64M', join(dir, 'disk.img')]);
    execFileSync('mkfs.ext4', ['-q', '-F', join(dir, 'disk.img')]);
    execFileSync('mount', ['-o', 'loop', join(dir, 'disk.img'), mnt]);
    server = await startServer('ours');
  });
  after(async () => {
    thaw();
    await server.stop();
    spawnSync('umount', [mnt]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('400 fs/writeFile of 1 MiB that cannot finish: bounded memory, -32001 past the budget, the rest written after the thaw', async () => {
    const { client: a } = await RawClient.session(server.url);
    const { client: b } = await RawClient.session(server.url);
    const target = join(mnt, 'out.bin');
    assert.deepEqual((await a.call('fs/writeFile', { path: tmpUri(target), dataBase64: 'aGk=' })).result, {});
    execFileSync('fsfreeze', ['-f', mnt]);
    frozen = true;
    const n = 400;
    const data = Buffer.alloc(MiB, 0x61).toString('base64');
    const pid = server.child.pid!;
    // The old code held every one: 1.1 GB for 400 such writes, 3.7 GB and climbing for 1000.
    const sent = await sendWhileBounded(
      a.ws,
      n,
      (i) => JSON.stringify({ id: `f${i}`, method: 'fs/writeFile', params: { path: tmpUri(target), dataBase64: data } }),
      pid,
      1500,
    );
    assert.equal((await a.call('environment/status', {}, 'barrier', 60_000)).result?.status, 'ready');
    const peak = memMb(pid, 'VmHWM');
    const early = answersTo(a, 'f');
    const refused = early.filter((m) => m.error).length;
    console.log(
      `${sent} writeFile of 1 MiB sent to a frozen disk; ${refused} refused, ${n - early.length} held; server peak ${peak.toFixed(0)} MB`,
    );
    assert.equal(sent, n, `the server passed 1500 MB after ${sent} writes`);
    assert.ok(peak < 600, `server peak ${peak.toFixed(0)} MB`);
    assert.equal(early.length, refused, 'only refusals are answered while the disk is frozen');
    assertOverloadedErrors(early);
    // 64 MiB of request text is 48 of these (1.4 MB each).
    assert.ok(n - refused <= 50, `${n - refused} writes held`);
    assert.equal(a.closed, false, 'the connection survived');
    assert.equal((await b.call('environment/status', {})).result?.status, 'ready', 'another client is answered');

    thaw();
    await until(() => answersTo(a, 'f').length === n, 60_000, 'every writeFile answered after the thaw');
    const all = answersTo(a, 'f');
    assert.equal(all.filter((m) => m.error).length, refused, 'the held writes succeed');
    assert.equal(readFileSync(target).length, MiB);
    a.close();
    b.close();
  });
});

describe('answer budget: large fs/readFile answers', () => {
  let dir: string;
  // 250 MiB less one byte: a multiple of 3, so the base64 text ends without padding.
  const size = 250 * MiB - 1;
  const marks = ['one', 'two', 'six', 'ten'];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'eb-answers-'));
    // Sparse files with a marker at each end: what each answer must carry, cheap to make.
    for (const m of marks) {
      const fd = openSync(join(dir, m), 'w');
      writeSync(fd, Buffer.from(`<${m}>`), 0, 5, 0);
      writeSync(fd, Buffer.from(`[${m}]`), 0, 5, size - 5);
      closeSync(fd);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A bare client that keeps answers as raw bytes (a 350 MB JSON text is not parsed here). */
  async function connect(url: string, binary: boolean): Promise<{ ws: WebSocket; answers: Buffer[]; closed: () => number | undefined }> {
    const ws = new WebSocket(url, { maxPayload: 512 * MiB, perMessageDeflate: false });
    const answers: Buffer[] = [];
    let closeCode: number | undefined;
    ws.on('close', (code) => (closeCode = code));
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const init = new Promise<void>((resolve) =>
      ws.on('message', (data: Buffer) => {
        if (data.length < 10_000 && data[0] === 0x7b && JSON.parse(data.toString()).id === 'init') return resolve();
        answers.push(data);
      }),
    );
    ws.send(JSON.stringify({ id: 'init', method: 'initialize', params: { clientName: 'test', execBridgeBinaryOutput: binary } }));
    await init;
    ws.send(JSON.stringify({ method: 'initialized', params: {} }));
    return { ws, answers, closed: () => closeCode };
  }

  /** The file an answer carries: checks its size and both markers, returns the marker. */
  function fileOf(answer: Buffer, binary: boolean): string {
    if (binary) {
      assert.equal(answer[0], 0x01, 'a binary result frame');
      const idEnd = 4 + answer.readUInt16BE(2);
      const data = answer.subarray(idEnd);
      assert.equal(data.length, size);
      const m = data.subarray(1, 4).toString();
      assert.equal(answer.subarray(4, idEnd).toString(), `r${m}`, 'the answer to its own request');
      assert.equal(data.subarray(0, 5).toString(), `<${m}>`);
      assert.equal(data.subarray(size - 5).toString(), `[${m}]`);
      return m;
    }
    const head = answer.subarray(0, 200).toString('latin1');
    const match = /^\{"id":"r(\w+)","result":\{"dataBase64":"/.exec(head);
    assert.ok(match, head.slice(0, 100));
    const b64 = answer.subarray(match[0].length, answer.length - 3);
    assert.equal(answer.subarray(answer.length - 3).toString(), '"}}');
    assert.equal(b64.length, (size / 3) * 4);
    const m = Buffer.from(b64.subarray(0, 8).toString(), 'base64').subarray(1, 4).toString();
    assert.equal(m, match[1]);
    assert.equal(Buffer.from(b64.subarray(0, 8).toString(), 'base64').subarray(0, 5).toString(), `<${m}>`);
    assert.equal(
      Buffer.from(b64.subarray(b64.length - 8).toString(), 'base64')
        .subarray(1)
        .toString(),
      `[${m}]`,
    );
    return m;
  }

  for (const binary of [false, true]) {
    test(`4 concurrent fs/readFile of 250 MiB on one connection (${binary ? 'binary frames' : 'base64 JSON, as codex clients'}): all arrive, bounded memory`, async () => {
      const server = await startServer('ours');
      try {
        const c = await connect(server.url, binary);
        for (const m of marks) c.ws.send(JSON.stringify({ id: `r${m}`, method: 'fs/readFile', params: { path: tmpUri(join(dir, m)) } }));
        await until(() => c.answers.length === marks.length || c.closed() !== undefined, 100_000, 'every answer or a close');
        const peak = memMb(server.child.pid!, 'VmHWM');
        console.log(
          `4 × 250 MiB readFile (${binary ? 'binary' : 'JSON'}): ${c.answers.length} answers, close ${c.closed()}; server peak ${peak.toFixed(0)} MB`,
        );
        // The old code lost 3 of 4 JSON answers (ENOBUFS: two 350 MB strings in one writev; the socket then closed, 1006).
        assert.equal(c.closed(), undefined, 'the connection stayed open');
        assert.deepEqual(c.answers.map((x) => fileOf(x, binary)).sort(), [...marks].sort());
        // The old code peaked at 3.3-3.6 GB (JSON) and 1.1 GB (binary): every answer built at once.
        assert.ok(peak < (binary ? 800 : 1200), `server peak ${peak.toFixed(0)} MB`);
        c.ws.terminate();
      } finally {
        await server.stop();
      }
    });
  }
});
