/**
 * Binary output frames (docs/protocol-extensions.md): only a client that asks gets them, only on
 * WebSocket; a codex-style client sees base64 JSON exactly as before; our client gets exact bytes
 * from ours (binary) and from codex (base64), also across connection cuts mid-stream.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { ExecServerClient, websocketConnector, type Connection } from '../../src/client';
import { decodeBinaryOutput, decodeBinaryResult } from '../../src/protocol/binaryOutput';
import { FaultProxy } from '../helpers/faultProxy';
import { CLI_JS, startExecServer, type ExecServerProcess } from '../helpers/servers';

const dir = mkdtempSync(join(tmpdir(), 'binary-output-'));
/** Random bytes: every byte value, no line structure, nothing a text path could get right by luck. */
const SMALL = randomBytes(3 * 1024 * 1024 + 7);
const SMALL_FILE = join(dir, 'small');
writeFileSync(SMALL_FILE, SMALL);
const BIG = randomBytes(8 * 1024 * 1024);
const BIG_FILE = join(dir, 'big');
writeFileSync(BIG_FILE, BIG);
/** Larger than the 64 MiB the client once accepted per message. */
const HUGE = Buffer.alloc(70 * 1024 * 1024);
for (let i = 0; i < HUGE.length; i += 4096) HUGE.writeUInt32BE(i, i);
const HUGE_FILE = join(dir, 'huge');
writeFileSync(HUGE_FILE, HUGE);
/** The big file in 32 pieces, 30 ms apart: a stream a test can cut in the middle of. */
const PACED = ['bash', '-c', `for i in $(seq 0 31); do dd if='${BIG_FILE}' bs=262144 skip=$i count=1 status=none; sleep 0.03; done`];

after(() => rmSync(dir, { recursive: true, force: true }));

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Frame {
  binary: boolean;
  data: Buffer;
}

/** A raw WebSocket session that records every frame with its type (text or binary). */
async function rawSession(url: string, initParams: Record<string, unknown>) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open');
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data: Buffer, binary) => {
    frames.push({ binary, data });
    for (const w of [...waiters]) w();
  });
  const json = () => frames.filter((f) => !f.binary || f.data[0] !== 0).map((f) => JSON.parse(f.data.toString('utf8')));
  const until = (pred: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 30_000);
      const check = () => {
        if (!pred()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  ws.send(JSON.stringify({ id: 1, method: 'initialize', params: initParams }));
  await until(() => json().some((m) => m.id === 1), 'initialize answer');
  const init = json().find((m) => m.id === 1);
  ws.send('{"method":"initialized","params":{}}');
  return { ws, frames, json, until, init };
}

function startParams(processId: string, argv: string[]) {
  return { processId, argv, cwd: `file://${dir}`, env: { PATH: '/usr/bin:/bin' }, tty: false, pipeStdin: false, arg0: null };
}

describe('binary output frames on our server', () => {
  let server: ExecServerProcess;
  before(async () => {
    server = await startExecServer('ours');
  });
  after(() => server?.stop());

  test('a client that does not ask (codex-style) gets only text frames of base64 JSON, exact bytes', async () => {
    const s = await rawSession(server.url, { clientName: 'codex-style' });
    assert.equal(s.init.result.execBridgeBinaryOutput, undefined, 'no binary field in its initialize result');
    assert.equal(s.init.result.environmentInfo.capabilities.execBridgeBinaryOutput, true, 'the capability is announced');
    s.ws.send(JSON.stringify({ id: 2, method: 'process/start', params: startParams('p', ['cat', SMALL_FILE]) }));
    await s.until(() => s.json().some((m) => m.method === 'process/closed'), 'closed');
    assert.ok(
      s.frames.every((f) => !f.binary),
      'every frame is a text frame',
    );
    // In seq order (output may follow `exited`: the pipe can still hold bytes when the child exits).
    const events = s
      .json()
      .filter((m) => m.params?.processId === 'p')
      .sort((a, b) => a.params.seq - b.params.seq);
    const outputs = events.filter((m) => m.method === 'process/output');
    assert.deepEqual(
      events.map((m) => m.params.seq),
      events.map((_, i) => i + 1),
    );
    assert.deepEqual(Buffer.concat(outputs.map((m) => Buffer.from(m.params.chunk, 'base64'))), SMALL);
    assert.equal(events.filter((m) => m.method === 'process/exited').length, 1);
    assert.deepEqual(events.at(-1)!.method, 'process/closed');
    assert.equal(events.length, outputs.length + 2);
    s.ws.terminate();
  });

  test('a client that asks gets binary frames: exact bytes, seqs in order, exited/closed after them', async () => {
    const s = await rawSession(server.url, { clientName: 'ours', execBridgeBinaryOutput: true });
    assert.equal(s.init.result.execBridgeBinaryOutput, true);
    s.ws.send(JSON.stringify({ id: 2, method: 'process/start', params: startParams('b', ['cat', SMALL_FILE]) }));
    await s.until(() => s.json().some((m) => m.method === 'process/closed'), 'closed');
    assert.equal(s.json().filter((m) => m.method === 'process/output').length, 0, 'no base64 output notification');
    const outputs = s.frames.filter((f) => f.binary).map((f) => decodeBinaryOutput(f.data)!);
    assert.ok(outputs.length > 0 && outputs.every((o) => o && o.processId === 'b' && o.stream === 'stdout'));
    // Output and `exited` share the seqs 1..n+1 (output may follow `exited`: the pipe can still hold bytes when the child exits).
    const exited = s.json().find((m) => m.method === 'process/exited').params.seq as number;
    assert.deepEqual(
      [...outputs.map((o) => o.seq), exited].sort((a, b) => a - b),
      [...outputs, exited].map((_, i) => i + 1),
    );
    assert.deepEqual(Buffer.concat(outputs.map((o) => o.data)), SMALL);
    // Catch-up reads stay JSON: the retained window answers in base64 as before.
    const last = outputs[outputs.length - 1]!.seq;
    s.ws.send(JSON.stringify({ id: 3, method: 'process/read', params: { processId: 'b', afterSeq: last - 1 } }));
    await s.until(() => s.json().some((m) => m.id === 3), 'read answer');
    const read = s.json().find((m) => m.id === 3).result;
    assert.deepEqual(Buffer.from(read.chunks[0].chunk, 'base64'), outputs[outputs.length - 1]!.data);
    const lastBinary = s.frames.map((f) => f.binary).lastIndexOf(true);
    const closedAt = s.frames.findIndex((f) => !f.binary && JSON.parse(f.data.toString()).method === 'process/closed');
    assert.ok(closedAt > lastBinary, 'closed is sent after the last output frame');
    s.ws.terminate();
  });

  test('fs/readFile: a codex-style client gets base64 JSON text, an opted-in one a binary result', async () => {
    const plain = await rawSession(server.url, { clientName: 'codex-style' });
    plain.ws.send(JSON.stringify({ id: 2, method: 'fs/readFile', params: { path: `file://${SMALL_FILE}` } }));
    await plain.until(() => plain.json().some((m) => m.id === 2), 'readFile answer');
    assert.ok(plain.frames.every((f) => !f.binary));
    const answer = plain.json().find((m) => m.id === 2);
    assert.deepEqual(Object.keys(answer), ['id', 'result']);
    assert.deepEqual(Buffer.from(answer.result.dataBase64, 'base64'), SMALL);
    plain.ws.terminate();
    const bin = await rawSession(server.url, { clientName: 'ours', execBridgeBinaryOutput: true });
    bin.ws.send(JSON.stringify({ id: 'r-1', method: 'fs/readFile', params: { path: `file://${SMALL_FILE}` } }));
    await bin.until(() => bin.frames.some((f) => f.binary && f.data[0] === 1), 'binary result');
    const r = decodeBinaryResult(bin.frames.find((f) => f.binary)!.data)!;
    assert.equal(r.id, 'r-1');
    assert.deepEqual(r.data, SMALL);
    bin.ws.terminate();
  });

  test('stdio carries no binary frames: the opt-in is ignored there and output stays base64', async () => {
    const child = spawn(process.execPath, [CLI_JS, 'serve', '--listen', 'stdio'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let buf = '';
    const lines: Json[] = [];
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    const waitLine = async (pred: (m: Json) => boolean) => {
      for (let i = 0; i < 3000 && !lines.some(pred); i++) await new Promise((r) => child.stdout.once('data', r));
    };
    child.stdin.write(JSON.stringify({ id: 1, method: 'initialize', params: { clientName: 'x', execBridgeBinaryOutput: true } }) + '\n');
    await waitLine((m) => m.id === 1);
    assert.equal(lines.find((m) => m.id === 1)!.result.execBridgeBinaryOutput, undefined);
    child.stdin.write('{"method":"initialized","params":{}}\n');
    child.stdin.write(
      JSON.stringify({ id: 2, method: 'process/start', params: startParams('s', ['head', '-c', '100000', SMALL_FILE]) }) + '\n',
    );
    await waitLine((m) => m.method === 'process/closed');
    const chunks = lines.filter((m) => m.method === 'process/output').map((m) => Buffer.from(m.params.chunk, 'base64'));
    assert.deepEqual(Buffer.concat(chunks), SMALL.subarray(0, 100000));
    child.kill();
    await once(child, 'exit');
  });
});

for (const kind of ['ours', 'codex'] as const) {
  test(`${kind}: a client's binary message that looks like a binary frame is malformed JSON (-32600, id -1), as before`, async () => {
    const server = await startExecServer(kind);
    try {
      const s = await rawSession(server.url, { clientName: 'x', execBridgeBinaryOutput: true });
      const frames = [Buffer.from([0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0x70, 0x41]), Buffer.from([1, 0, 0, 1, 0x37, 0x41])];
      for (const [i, frame] of frames.entries()) {
        const before = s.json().length;
        s.ws.send(frame, { binary: true });
        s.ws.send(JSON.stringify({ id: 10 + i, method: 'environment/status', params: {} }));
        await s.until(() => s.json().some((m) => m.id === 10 + i), 'status answer');
        const after = s.json().slice(before);
        assert.equal(after[0].id, -1);
        assert.equal(after[0].error.code, -32600);
        assert.deepEqual(after[1], { id: 10 + i, result: { status: 'ready' } }, 'the connection stays usable');
      }
      s.ws.terminate();
    } finally {
      await server.stop();
    }
  });

  describe(`ExecServerClient against ${kind}`, () => {
    let server: ExecServerProcess;
    before(async () => {
      server = await startExecServer(kind);
    });
    after(() => server?.stop());

    /** A connector that counts the binary frames each connection received. */
    function counting(url: string, counts: number[]) {
      const inner = websocketConnector(url);
      return async (signal: AbortSignal): Promise<Connection> => {
        const conn = await inner(signal);
        const i = counts.push(0) - 1;
        conn.onBinary?.(() => counts[i]!++);
        return conn;
      };
    }

    test(`exact bytes, ${kind === 'ours' ? 'as binary frames' : 'as base64 (codex ignores the opt-in)'}`, async () => {
      const counts: number[] = [];
      const client = await ExecServerClient.connect({ connector: counting(server.url, counts), clientName: 'test' });
      try {
        const h = await client.startProcess({ argv: ['cat', SMALL_FILE], cwd: dir });
        const got: Buffer[] = [];
        let last = 0;
        h.onEvent((e) => {
          if (e.type === 'output') {
            assert.ok(e.seq > last);
            last = e.seq;
            got.push(e.data);
          }
        });
        assert.deepEqual(await h.completion, { exitCode: 0, sandboxDenied: false });
        assert.deepEqual(Buffer.concat(got), SMALL);
        if (kind === 'ours') assert.ok(counts[0]! > 0, 'output came as binary frames');
        else assert.equal(counts[0], 0);
      } finally {
        client.dispose();
      }
    });

    test('readFile of a 70 MiB file: exact bytes', async () => {
      const counts: number[] = [];
      const client = await ExecServerClient.connect({ connector: counting(server.url, counts), clientName: 'test' });
      try {
        const data = await client.readFile(HUGE_FILE);
        assert.equal(data.length, HUGE.length);
        assert.ok(data.equals(HUGE), 'same bytes');
        assert.equal(counts[0], kind === 'ours' ? 1 : 0, 'one binary result from ours, none from codex');
      } finally {
        client.dispose();
      }
    });

    test('cuts mid-stream: the resumed connection negotiates again, output is exact', async () => {
      const proxy = await FaultProxy.forUrl(server.url);
      const counts: number[] = [];
      const client = await ExecServerClient.connect({
        connector: counting(proxy.url, counts),
        clientName: 'test',
        attemptTimeoutMs: 2000,
        backoff: { stepMs: 20, maxMs: 200 },
      });
      try {
        const h = await client.startProcess({ argv: PACED, cwd: dir });
        const got: Buffer[] = [];
        let bytes = 0;
        const marks = [2 * 1024 * 1024, 5 * 1024 * 1024];
        h.onEvent((e) => {
          if (e.type !== 'output') return;
          got.push(e.data);
          bytes += e.data.length;
          if (marks.length > 0 && bytes >= marks[0]!) {
            marks.shift();
            proxy.cut();
          }
        });
        assert.deepEqual(await h.completion, { exitCode: 0, sandboxDenied: false });
        assert.equal(marks.length, 0, 'both cuts happened mid-stream');
        assert.ok(counts.length >= 3, `reconnected twice (${counts.length} connections)`);
        assert.deepEqual(Buffer.concat(got), BIG);
        if (kind === 'ours') {
          assert.ok(
            counts.every((n) => n > 0),
            `every connection carried binary frames: ${counts}`,
          );
        }
      } finally {
        client.dispose();
        await proxy.close();
      }
    });
  });
}
