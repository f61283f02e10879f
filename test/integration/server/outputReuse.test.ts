/**
 * The server's output path reuses its buffers (one read buffer for every pipe, pooled pending and
 * frame buffers, retained output in recycled slabs). A buffer reused before its bytes were sent or
 * retained shows as wrong bytes: here a child writes distinct bytes in odd sizes on stdout and
 * stderr while a slow reader keeps the connection congested (the server pauses and resumes its
 * reads), and every byte received, live and from the retained window, is compared.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { decodeBinaryOutput } from '../../../src/protocol/binaryOutput';
import { startExecServer, type ExecServerProcess } from '../../helpers/servers';

const TOTAL = 24 * 1024 * 1024;
/** Write sizes around the 64 KiB read and chunk size, and tiny ones that coalesce. */
const SIZES = [1, 7, 100, 4095, 4096, 4097, 65535, 65536, 65537, 200_000, 3, 131_072];

/** Byte i of a stream: its position mixed with the stream's tag, so that no two 64 KiB windows are equal. */
function expected(tag: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i += 4) b.writeUInt32LE((Math.imul(i >>> 2, 0x9e3779b1) + tag) >>> 0, i);
  return b;
}

/** The child: writes both streams (synchronously: sizes exact, order of the writes kept) in SIZES order. */
const CHILD = `
const fs = require('fs');
const gen = ${expected.toString()};
const total = ${TOTAL}, sizes = ${JSON.stringify(SIZES)};
const out = gen(1, total), err = gen(2, total / 4);
let o = 0, e = 0, k = 0;
while (o < out.length || e < err.length) {
  const n = sizes[k++ % sizes.length];
  if (o < out.length) { const m = Math.min(n, out.length - o); for (let w = 0; w < m; ) w += fs.writeSync(1, out, o + w, m - w); o += m; }
  if (k % 3 === 0 && e < err.length) { const m = Math.min(n, err.length - e); for (let w = 0; w < m; ) w += fs.writeSync(2, err, e + w, m - w); e += m; }
}
`;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Received {
  byStream: Map<string, Buffer[]>;
  bySeq: Map<number, Buffer>;
  seqs: number[];
  json: Json[];
}

/** Runs the child through a raw WebSocket client that reads in short bursts (20 ms reading, 20 ms not). */
async function runSlowly(url: string, binary: boolean): Promise<{ got: Received; ws: WebSocket; send: (m: Json) => Promise<Json> }> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 });
  await once(ws, 'open');
  const got: Received = { byStream: new Map(), bySeq: new Map(), seqs: [], json: [] };
  const waiters = new Set<() => void>();
  const add = (seq: number, stream: string, data: Buffer) => {
    // A copy: ws may hand out views of its own buffers.
    const copy = Buffer.from(data);
    got.seqs.push(seq);
    got.bySeq.set(seq, copy);
    if (!got.byStream.has(stream)) got.byStream.set(stream, []);
    got.byStream.get(stream)!.push(copy);
  };
  ws.on('message', (data: Buffer, isBinary) => {
    if (isBinary && data[0] === 0) {
      const o = decodeBinaryOutput(data)!;
      add(o.seq, o.stream, o.data);
    } else {
      const m = JSON.parse(data.toString('utf8')) as Json;
      if (m.method === 'process/output') add(m.params.seq, m.params.stream, Buffer.from(m.params.chunk, 'base64'));
      else got.json.push(m);
    }
    for (const w of [...waiters]) w();
  });
  const until = (pred: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 100_000);
      const check = () => {
        if (!pred()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  let nextId = 1;
  const send = async (m: Json) => {
    const id = nextId++;
    ws.send(JSON.stringify({ id, ...m }));
    await until(() => got.json.some((x) => x.id === id), `answer ${id}`);
    return got.json.find((x) => x.id === id)!;
  };
  await send({ method: 'initialize', params: { clientName: 'slow', ...(binary ? { execBridgeBinaryOutput: true } : {}) } });
  ws.send('{"method":"initialized","params":{}}');
  // A slow reader: the socket reads for 20 ms, then not for 20 ms, so the server's queue passes its
  // high-water mark and it stops and restarts reading the child many times.
  const socket = (ws as unknown as { _socket: Socket })._socket;
  let reading = true;
  const pacer = setInterval(() => {
    reading = !reading;
    if (reading) socket.resume();
    else socket.pause();
  }, 20);
  try {
    await send({
      method: 'process/start',
      params: {
        processId: 'flood',
        argv: [process.execPath, '-e', CHILD],
        cwd: 'file:///tmp',
        env: { PATH: '/usr/bin:/bin' },
        tty: false,
        pipeStdin: false,
        arg0: null,
      },
    });
    await until(() => got.json.some((m) => m.method === 'process/closed'), 'closed');
  } finally {
    clearInterval(pacer);
    socket.resume();
  }
  return { got, ws, send };
}

describe('output buffers are reused only once their bytes are sent and retained', () => {
  let server: ExecServerProcess;
  before(async () => {
    server = await startExecServer('ours');
  });
  after(() => server?.stop());

  for (const binary of [true, false]) {
    test(`${binary ? 'binary frames' : 'base64 JSON'}: a flood to a slow reader arrives exact, and so does the retained window`, async () => {
      const { got, ws, send } = await runSlowly(server.url, binary);
      try {
        // Output in seq order; with `exited` (which output may follow: the child can exit while the
        // server is not reading its pipes) and `closed`, every seq from 1 once.
        assert.deepEqual(
          got.seqs,
          [...got.seqs].sort((a, b) => a - b),
          'output in seq order',
        );
        const events = got.json
          .filter((m) => m.method === 'process/exited' || m.method === 'process/closed')
          .map((m) => m.params.seq as number);
        assert.equal(events.length, 2, 'one exited, one closed');
        const all = [...got.seqs, ...events].sort((a, b) => a - b);
        assert.deepEqual(
          all,
          all.map((_, i) => i + 1),
          'seqs 1..n: none missing, none twice',
        );
        assert.equal(events[1], all.length, 'closed last');
        const stdout = Buffer.concat(got.byStream.get('stdout') ?? []);
        const stderr = Buffer.concat(got.byStream.get('stderr') ?? []);
        assert.equal(stdout.length, TOTAL);
        assert.ok(stdout.equals(expected(1, TOTAL)), 'stdout exact');
        assert.ok(stderr.equals(expected(2, TOTAL / 4)), 'stderr exact');
        assert.ok(got.seqs.length > 400, `many chunks (${got.seqs.length})`);
        // The retained window (slabs reused many times over by now): the newest chunks, as they were sent.
        const read = (await send({ method: 'process/read', params: { processId: 'flood', afterSeq: 0 } })).result;
        assert.ok(read.chunks.length > 8, `the window holds several chunks (${read.chunks.length})`);
        for (const c of read.chunks) {
          const live = got.bySeq.get(c.seq);
          assert.ok(live, `retained seq ${c.seq} was sent`);
          assert.ok(Buffer.from(c.chunk, 'base64').equals(live), `retained seq ${c.seq} is what was sent`);
        }
        assert.equal(read.chunks.at(-1).seq, got.seqs.at(-1), 'the window ends at the last output');
      } finally {
        ws.terminate();
      }
    });
  }
});
