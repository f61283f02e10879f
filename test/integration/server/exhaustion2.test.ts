/**
 * Exhaustion, round two (security issue 20, items 5 and 7): unauthenticated sockets must not push
 * out authenticated clients or the health check, and fs writes onto FIFOs must not stop every
 * other client's fs calls. Bounds are generous (a loaded 2-core machine); each case failed on the
 * old code (see each test).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsConstants, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { sandboxForPolicy } from '../../../src/protocol/sandbox';
import { RawClient, startParams, startServer, type StartedServer, type WireMessage } from '../../helpers/rawClient';

const uri = (p: string) => pathToFileURL(p).href;
const NOT_REGULAR = /is not a regular file \(a FIFO, socket or device\)/;

describe('exhaustion: fs writes onto FIFOs (issue 20 item 7)', () => {
  let server: StartedServer;
  let dir: string;
  before(async () => {
    server = await startServer('ours');
    dir = mkdtempSync(join(tmpdir(), 'eb-fifo-'));
    mkdirSync(join(dir, 'ws'));
    writeFileSync(join(dir, 'small.txt'), 'small file\n');
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a FIFO that has a reader is refused too (the opened descriptor is checked): nothing reaches the reader', async () => {
    const { client } = await RawClient.session(server.url);
    const fifo = join(dir, 'read-fifo');
    execFileSync('mkfifo', [fifo]);
    // A reader that never blocks: the server's open for writing then succeeds, as after a swap.
    const fd = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    try {
      const w = await client.call('fs/writeFile', { path: uri(fifo), dataBase64: Buffer.from('LEAKED').toString('base64') });
      assert.equal(w.error?.code, -32600, JSON.stringify(w));
      assert.match(w.error.message, NOT_REGULAR);
      const c = await client.call('fs/copy', { sourcePath: uri(join(dir, 'small.txt')), destinationPath: uri(fifo), recursive: false });
      assert.equal(c.error?.code, -32600, JSON.stringify(c));
      // The old code wrote into the pipe and answered {}: its bytes would be here.
      const buf = Buffer.alloc(64);
      let n = 0;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      }
      assert.equal(buf.subarray(0, n).toString(), '', 'bytes reached the FIFO reader');
    } finally {
      closeSync(fd);
    }
    client.close();
  });

  test('writeFile, copy and open(replace) onto FIFOs with no reader get an error; another client is served meanwhile', async () => {
    const { client: a } = await RawClient.session(server.url);
    const { client: b } = await RawClient.session(server.url);
    const ws = join(dir, 'ws');
    const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });
    // Some FIFOs made by a sandboxed command (as an attacker inside the sandbox would plant them).
    const planted = await a.call(
      'process/start',
      startParams('mkfifo', ['/bin/sh', '-c', 'for i in 0 1 2 3 4 5; do mkfifo "planted$i"; done; echo planted'], {
        cwd: uri(ws),
        sandbox,
      }),
    );
    assert.equal(planted.error, undefined, JSON.stringify(planted.error));
    await a.processEvents('mkfifo', 60_000);
    assert.equal(a.output('mkfifo'), 'planted\n', a.output('mkfifo', 'stderr'));
    for (let i = 0; i < 6; i++) execFileSync('mkfifo', [join(dir, `fifo${i}`)]);
    const data = Buffer.from('into the pipe').toString('base64');
    const src = uri(join(dir, 'small.txt'));
    // More than the thread pool (4 threads): on the old code each one held a thread in open(2)
    // until a reader came, and every later fs call of every client waited behind them.
    const calls: Array<[string, Record<string, unknown>]> = [
      ...[0, 1, 2].map((i): [string, Record<string, unknown>] => ['fs/writeFile', { path: uri(join(dir, `fifo${i}`)), dataBase64: data }]),
      ...[3, 4].map((i): [string, Record<string, unknown>] => [
        'fs/copy',
        { sourcePath: src, destinationPath: uri(join(dir, `fifo${i}`)), recursive: false },
      ]),
      ['fs/open', { handleId: 'h', path: uri(join(dir, 'fifo5')), mode: 'replace' }],
      ...[0, 1, 2].map((i): [string, Record<string, unknown>] => [
        'fs/writeFile',
        { path: uri(join(ws, `planted${i}`)), dataBase64: data, sandbox },
      ]),
      ...[3, 4].map((i): [string, Record<string, unknown>] => [
        'fs/copy',
        { sourcePath: src, destinationPath: uri(join(ws, `planted${i}`)), recursive: false, sandbox },
      ]),
      ['fs/open', { handleId: 'hs', path: uri(join(ws, 'planted5')), mode: 'replace', sandbox }],
    ];
    // (A call that times out is an answer too: the assertions below name it.)
    const answers = calls.map(([method, params]) =>
      a.call(method, params, undefined, 60_000).catch((e: Error): WireMessage => ({ error: { code: 0, message: e.message } })),
    );
    // The other client's small read is answered (on the old code: never, while the FIFOs had no reader).
    const read = await b.call('fs/readFile', { path: src }, undefined, 20_000);
    assert.equal(Buffer.from(read.result.dataBase64, 'base64').toString(), 'small file\n');
    const got: WireMessage[] = await Promise.all(answers);
    got.forEach((m, i) => {
      assert.equal(m.error?.code, -32600, `${calls[i]![0]} ${JSON.stringify(calls[i]![1])}: ${JSON.stringify(m)}`);
      assert.match(m.error.message, NOT_REGULAR);
    });
    a.close();
    b.close();
  });
});
