/**
 * The output spool (issue 27 item 3) on our real exec-server (dist/cli.js serve): what the 1 MiB
 * window evicts goes to 0600 files in the private directory, a client that asks
 * (`execBridgeOutputSpool`) replays all of it with seqs unchanged, the caps drop the oldest bytes
 * (finished processes first), codex-style clients still see the window's gap, and nothing is left.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ExecServerClient } from '../../../src/client';
import { sandboxForPolicy } from '../../../src/protocol/sandbox';
import { SPOOL_DIR_PREFIX } from '../../../src/server/outputSpool';
import { privateDir } from '../../../src/util/privateDir';
import { isAlive, until } from '../../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

const MiB = 1024 * 1024;
const LINE = 16;
const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-spool-')));
after(() => rmSync(base, { recursive: true, force: true }));

/**
 * Node, printing `total` bytes of numbered 16-byte lines (line k: k in 15 digits and "\n"), so the
 * byte at any offset is known; it writes its pid to `pidFile` first.
 */
function generator(total: number, pidFile: string, thenSleep = false): string[] {
  const js = `
const fs = require('fs');
fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
const total = ${total};
let off = 0;
function next() {
  while (off < total) {
    const n = Math.min(65536, total - off);
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i += 16) b.write(String((off + i) / 16).padStart(15, '0') + '\\n', i, 'latin1');
    off += n;
    if (!process.stdout.write(b)) return process.stdout.once('drain', next);
  }
  ${thenSleep ? 'setInterval(() => undefined, 1000);' : ''}
}
next();`;
  return [process.execPath, '-e', js];
}

/** The generator's bytes at [offset, offset + length). */
function expected(offset: number, length: number): Buffer {
  const first = Math.floor(offset / LINE);
  const lines = Math.ceil((offset + length) / LINE) - first;
  const b = Buffer.allocUnsafe(lines * LINE);
  for (let i = 0; i < lines; i++) b.write(String(first + i).padStart(15, '0') + '\n', i * LINE, 'latin1');
  return b.subarray(offset - first * LINE, offset - first * LINE + length);
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** The server's spool directories (`spool-<server pid>-*`) in the private directory. */
function spoolDirs(server: StartedServer): string[] {
  return readdirSync(privateDir())
    .filter((n) => n.startsWith(`${SPOOL_DIR_PREFIX}${server.child.pid}-`))
    .map((n) => join(privateDir(), n));
}
const spoolFiles = (server: StartedServer) => spoolDirs(server).flatMap((d) => readdirSync(d).map((f) => join(d, f)));

async function session(url: string, spool: boolean, resumeSessionId?: string) {
  const client = await RawClient.connect(url);
  const init = await client.call('initialize', {
    clientName: spool ? 'exec-bridge-test' : 'codex-style',
    ...(resumeSessionId ? { resumeSessionId } : {}),
    ...(spool ? { execBridgeOutputSpool: true } : {}),
  });
  assert.equal(init.error, undefined, JSON.stringify(init.error));
  client.notify('initialized', {});
  return { client, sessionId: init.result.sessionId as string, init: init.result };
}

/** Waits until the process that wrote `pidFile` is gone. */
async function waitGone(pidFile: string, ms: number): Promise<void> {
  const pid = Number(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8'), ms, 'the generator to start'));
  await until(() => !isAlive(pid), ms, `generator ${pid} to finish`);
}

/** Every chunk of a raw `process/read` replay from seq 0, page by page (bounded by the seqs). */
async function rawReplay(client: RawClient, processId: string) {
  const pages = [];
  let after = 0;
  for (let i = 0; i < 100_000; i++) {
    const r = (await client.call('process/read', { processId, afterSeq: after })).result;
    pages.push(r);
    if (!r.execBridgeSpooled) break;
    after = r.nextSeq - 1;
  }
  return pages;
}

describe('output spool', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  test('200 MiB printed detached: a resumed client replays the last 64 MiB byte-exact plus the dropped count; the server stays flat', async () => {
    const server = await startServer('ours', ['--session-ttl-ms', '600000']);
    try {
      const total = 200 * MiB;
      const pidFile = join(base, 'big.pid');
      const a = await session(server.url, true);
      assert.deepEqual(a.init.execBridgeOutputSpool, { processBytes: 64 * MiB, totalBytes: 1024 * MiB });
      // Warm the server's output path (pools, slabs, a first spool) so the baseline is not its cold start.
      const warm = join(base, 'warm.pid');
      assert.equal((await a.client.call('process/start', startParams('warm', generator(4 * MiB, warm)))).error, undefined);
      await a.client.processEvents('warm', 60_000);
      const baseline = rssBytes(server.child.pid!);
      const res = await a.client.call('process/start', startParams('big', generator(total, pidFile)));
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      a.client.close(); // detached: nobody reads
      let peak = baseline;
      const sampler = setInterval(() => {
        try {
          peak = Math.max(peak, rssBytes(server.child.pid!));
        } catch {
          // the server is gone: the test fails below
        }
      }, 25);
      try {
        await waitGone(pidFile, 300_000);
      } finally {
        clearInterval(sampler);
      }
      peak = Math.max(peak, rssBytes(server.child.pid!));
      const growth = peak - baseline;
      // 32 MiB is the target; the window (1 MiB), the spool's unwritten batches (<= 4.25 MiB) and the pooled slabs are far below it.
      assert.ok(growth <= 32 * MiB, `server RSS grew ${(growth / MiB).toFixed(1)} MiB (baseline ${(baseline / MiB).toFixed(1)} MiB)`);
      console.log(
        `# detached 200 MiB: server RSS baseline ${(baseline / MiB).toFixed(1)} MiB, peak growth ${(growth / MiB).toFixed(1)} MiB`,
      );
      // On disk: at most the cap plus one segment, 0600 files in a 0700 directory of the private directory.
      const [dir] = spoolDirs(server);
      assert.ok(dir, 'a spool directory');
      assert.equal(statSync(dir).mode & 0o777, 0o700);
      const files = spoolFiles(server);
      for (const f of files) assert.equal(statSync(f).mode & 0o777, 0o600, f);
      // The big process's files (the warm-up's are `1-*`): its cap, plus at most the one segment (4 MiB) the start is in, plus record headers.
      const big = files.filter((f) => !f.split('/').at(-1)!.startsWith('1-'));
      const onDisk = big.reduce((t, f) => t + statSync(f).size, 0);
      assert.ok(
        onDisk <= 64 * MiB + 4 * MiB + 64 * 1024,
        `${onDisk} bytes spooled: ${big.map((f) => `${f} ${statSync(f).size}`).join(', ')}`,
      );

      // A new client (a reloaded window) resumes the session and attaches to the process.
      const b = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: server.url },
        resumeSessionId: a.sessionId,
        outputSpool: true,
      });
      try {
        const t0 = Date.now();
        const attached = await b.attachProcess('big', { tty: false, stdinWritable: false });
        const received: Buffer[] = [];
        let bytes = 0;
        const done = new Promise<number>((resolve, reject) =>
          attached.handle.onEvent((e) => {
            if (e.type === 'output') {
              received.push(e.data);
              bytes += e.data.length;
            } else if (e.type === 'exited') resolve(e.exitCode);
            else if (e.type === 'failed') reject(e.error);
          }),
        );
        assert.equal(await done, 0);
        await attached.handle.completion;
        const secs = (Date.now() - t0) / 1000;
        console.log(`# replayed ${(bytes / MiB).toFixed(2)} MiB in ${secs.toFixed(2)} s: ${(bytes / MiB / secs).toFixed(0)} MiB/s`);
        // The last 64 MiB (to the cap's granularity: whole chunks, one index entry), byte-exact, and the count of the rest.
        assert.ok(bytes <= 64 * MiB && bytes > 64 * MiB - 256 * 1024, `${bytes} bytes replayed`);
        assert.equal(attached.droppedBytes, total - bytes);
        assert.equal(attached.spoolCapBytes, 64 * MiB);
        assert.ok(attached.evictedBefore > 1);
        let off = total - bytes;
        for (const d of received) {
          assert.ok(d.equals(expected(off, d.length)), `bytes at ${off} differ`);
          off += d.length;
        }
        assert.equal(off, total);
      } finally {
        b.dispose();
      }
    } finally {
      await server.stop();
    }
    assert.deepEqual(spoolDirs(server), [], 'the spool directory is gone after the server stopped');
  });

  test("a client's own per-process cap (execBridgeOutputSpool {processBytes}, the setting execBridge.outputSpoolMiB): kept to it, up to the server's total", async () => {
    const server = await startServer('ours', ['--session-ttl-ms', '600000', '--spool-total-bytes', String(16 * MiB)]);
    try {
      const raw = await RawClient.connect(server.url);
      const init = await raw.call('initialize', { clientName: 'exec-bridge-test', execBridgeOutputSpool: { processBytes: 3 * MiB } });
      assert.deepEqual(init.result.execBridgeOutputSpool, { processBytes: 3 * MiB, totalBytes: 16 * MiB });
      raw.notify('initialized', {});
      const total = 10 * MiB;
      const pidFile = join(base, 'own-cap.pid');
      assert.equal((await raw.call('process/start', startParams('small', generator(total, pidFile)))).error, undefined);
      raw.close(); // detached: the window evicts into the spool
      await waitGone(pidFile, 120_000);
      const b = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: server.url },
        resumeSessionId: init.result.sessionId,
        outputSpool: { processBytes: 3 * MiB },
      });
      try {
        const attached = await b.attachProcess('small', { tty: false, stdinWritable: false });
        const received: Buffer[] = [];
        attached.handle.onEvent((e) => e.type === 'output' && received.push(e.data));
        assert.equal((await attached.handle.completion).exitCode, 0);
        const bytes = received.reduce((n, d) => n + d.length, 0);
        assert.equal(attached.spoolCapBytes, 3 * MiB);
        // Said on a failure: what the server reported of the process (a miss in CI replayed all 10 MiB once).
        const seen = `${bytes} bytes replayed in ${received.length} events; server: dropped ${attached.droppedBytes}, cap ${attached.spoolCapBytes}`;
        assert.ok(bytes <= 3 * MiB && bytes > 3 * MiB - 256 * 1024, seen);
        assert.equal(attached.droppedBytes, total - bytes);
        assert.ok(Buffer.concat(received).equals(expected(total - bytes, bytes)), 'the newest bytes, byte-exact');
      } finally {
        b.dispose();
      }
      // Asking more than the server's total gets the total.
      const big = await RawClient.connect(server.url);
      const bigInit = await big.call('initialize', { clientName: 'exec-bridge-test', execBridgeOutputSpool: { processBytes: 64 * MiB } });
      assert.deepEqual(bigInit.result.execBridgeOutputSpool, { processBytes: 16 * MiB, totalBytes: 16 * MiB });
      big.close();
      // Not a valid ask: nothing asked (as codex ignores fields it does not know).
      const odd = await RawClient.connect(server.url);
      const oddInit = await odd.call('initialize', { clientName: 'exec-bridge-test', execBridgeOutputSpool: { processBytes: -1 } });
      assert.equal(oddInit.result.execBridgeOutputSpool, undefined);
      odd.close();
    } finally {
      await server.stop();
    }
  });

  test('a credit window (a terminal) does not hold a detached process of a spooling session: it runs on, and all of it replays', async () => {
    const server = await startServer('ours', ['--session-ttl-ms', '600000']);
    try {
      const total = 8 * MiB;
      const pidFile = join(base, 'credit.pid');
      const a = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: server.url }, outputSpool: true });
      // Nothing is consumed: attached, the process blocks at its 512 KiB window.
      await a.startProcess({ processId: 'term', argv: generator(total, pidFile), cwd: base, creditWindow: 512 * 1024 });
      const pid = Number(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8'), 60_000, 'the generator to start'));
      a.dispose('window reload');
      await until(() => !isAlive(pid), 120_000, 'the detached process to print everything and exit');
      const b = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: server.url },
        resumeSessionId: a.sessionId,
        outputSpool: true,
      });
      try {
        const attached = await b.attachProcess('term', { tty: false, stdinWritable: false, creditWindow: 512 * 1024 });
        let off = 0;
        const done = new Promise<number>((resolve, reject) =>
          attached.handle.onEvent((e) => {
            if (e.type === 'output') {
              if (!e.data.equals(expected(off, e.data.length))) reject(new Error(`bytes at ${off} differ`));
              off += e.data.length;
              attached.handle.outputConsumed(e.data.length);
            } else if (e.type === 'exited') resolve(e.exitCode);
            else if (e.type === 'failed') reject(e.error);
          }),
        );
        assert.equal(await done, 0);
        assert.equal(off, total);
        assert.equal(attached.droppedBytes, 0);
        assert.equal(attached.evictedBefore, 0);
      } finally {
        b.dispose();
      }
    } finally {
      await server.stop();
    }
  });

  test('a replay that takes longer than the server default TTL is not cut: an exited process is kept while it is read', async () => {
    // The daemon's default is 30 s, a terminal draws a 64 MiB replay in about as long; here 1.5 s and a slow reader.
    const server = await startServer('ours', ['--session-ttl-ms', '1500']);
    try {
      const total = 4 * MiB;
      const pidFile = join(base, 'slow.pid');
      const a = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: server.url },
        outputSpool: true,
        sessionTtlMs: 600_000,
      });
      await a.startProcess({ processId: 'done', argv: generator(total, pidFile), cwd: base });
      a.dispose('window reload');
      await waitGone(pidFile, 60_000);
      // Two windows one after the other (a reload during the first replay's aftermath): each replays it all.
      for (const window of ['first', 'second']) {
        const b = await ExecServerClient.connect({
          endpoint: { kind: 'websocket', url: server.url },
          resumeSessionId: a.sessionId,
          outputSpool: true,
          sessionTtlMs: 600_000,
        });
        try {
          const attached = await b.attachProcess('done', { tty: false, stdinWritable: false, creditWindow: 128 * 1024 });
          let off = 0;
          let drawn = Promise.resolve();
          const t0 = Date.now();
          const done = new Promise<number>((resolve, reject) =>
            attached.handle.onEvent((e) => {
              if (e.type === 'output') {
                if (!e.data.equals(expected(off, e.data.length))) reject(new Error(`bytes at ${off} differ`));
                off += e.data.length;
                // A terminal that draws 1 MiB/s, one piece after the other: the replay lasts ~4 s, more than twice the TTL.
                const n = e.data.length;
                drawn = drawn
                  .then(() => new Promise<void>((r) => setTimeout(r, Math.ceil(n / 1024))))
                  .then(() => attached.handle.outputConsumed(n));
              } else if (e.type === 'exited') resolve(e.exitCode);
              else if (e.type === 'failed') reject(e.error);
            }),
          );
          assert.equal(await done, 0, `${window} window`);
          assert.equal(off, total, `${window} window`);
          assert.ok(Date.now() - t0 > 3000, `${window} window: the replay took ${Date.now() - t0} ms: not slower than the TTL`);
        } finally {
          b.dispose('window reload');
        }
      }
    } finally {
      await server.stop();
    }
  });

  test('a codex-style client (no opt-in) sees the 1 MiB window and its seq gap; nothing of it is spooled', async () => {
    const server = await startServer('ours');
    try {
      const c = await session(server.url, false);
      assert.equal(c.init.execBridgeOutputSpool, undefined);
      assert.equal((await c.client.call('process/start', startParams('p', generator(3 * MiB, join(base, 'codex.pid'))))).error, undefined);
      await c.client.processEvents('p', 60_000);
      const r = (await c.client.call('process/read', { processId: 'p', afterSeq: 0 })).result;
      assert.ok(r.chunks[0].seq > 1, 'the oldest output was evicted: a gap');
      const kept = r.chunks.reduce((t: number, x: { chunk: string }) => t + Buffer.from(x.chunk, 'base64').length, 0);
      assert.ok(kept <= MiB, `${kept}`);
      for (const k of ['execBridgeSpooled', 'execBridgeDroppedBytes', 'execBridgeExitSeq']) assert.equal(k in r, false, k);
      assert.deepEqual(spoolFiles(server), []);
      c.client.close();

      // A session that spools, read by a codex-style connection: still the window and its gap.
      const s = await session(server.url, true);
      assert.equal((await s.client.call('process/start', startParams('q', generator(3 * MiB, join(base, 'q.pid'))))).error, undefined);
      await s.client.processEvents('q', 60_000);
      const pages = await rawReplay(s.client, 'q');
      const spooledBytes = pages
        .flatMap((p) => p.chunks)
        .reduce((t: number, x: { chunk: string }) => t + Buffer.from(x.chunk, 'base64').length, 0);
      assert.equal(spooledBytes, 3 * MiB, 'the opted-in connection replays every byte');
      assert.equal(pages[0].chunks[0].seq, 1);
      assert.equal(pages.at(-1).execBridgeDroppedBytes, 0);
      s.client.close();
      const codex = await session(server.url, false, s.sessionId);
      const w = (await codex.client.call('process/read', { processId: 'q', afterSeq: 0 })).result;
      assert.ok(w.chunks[0].seq > 1);
      assert.equal(w.execBridgeSpooled, undefined);
      codex.client.close();
    } finally {
      await server.stop();
    }
  });

  test('over the per-server cap, the oldest bytes of the process that finished first go first', async () => {
    // 8 MiB per process, 12 MiB for the server: three 6 MiB outputs spool ~5 MiB each (1 MiB stays in memory).
    const server = await startServer('ours', ['--spool-process-bytes', String(8 * MiB), '--spool-total-bytes', String(12 * MiB)]);
    try {
      const s = await session(server.url, true);
      const run = async (id: string, sleep: boolean) => {
        const pidFile = join(base, `${id}.pid`);
        assert.equal((await s.client.call('process/start', startParams(id, generator(6 * MiB, pidFile, sleep)))).error, undefined);
        if (sleep) {
          // Printed everything and still runs: wait until its last line is out (the window ends with it).
          const last = expected(6 * MiB - LINE, LINE).toString();
          await until(() => s.client.output(id).endsWith(last), 60_000, `${id}'s output`);
        } else await s.client.processEvents(id, 60_000);
      };
      await run('first', false);
      await run('second', false);
      await run('running', true);
      const dropped: Record<string, number> = {};
      for (const id of ['first', 'second', 'running']) {
        const pages = await rawReplay(s.client, id);
        dropped[id] = pages.at(-1).execBridgeDroppedBytes;
        const got = pages
          .flatMap((p) => p.chunks)
          .reduce((t: number, x: { chunk: string }) => t + Buffer.from(x.chunk, 'base64').length, 0);
        assert.equal(got + dropped[id]!, 6 * MiB, `${id}: what is replayed and what was dropped make the whole output`);
      }
      // ~15 MiB spooled against 12: ~3 MiB of "first"'s oldest went; the others kept everything.
      assert.ok(dropped.first! >= 3 * MiB - 128 * 1024 && dropped.first! <= 3 * MiB + 128 * 1024, JSON.stringify(dropped));
      assert.equal(dropped.second, 0);
      assert.equal(dropped.running, 0);
      await s.client.call('process/terminate', { processId: 'running' });
      s.client.close();
    } finally {
      await server.stop();
    }
  });

  test('spool files are 0600 in a 0700 directory of the private directory, and a sandboxed command cannot see them', async () => {
    const server = await startServer('ours', ['--session-ttl-ms', '600000']);
    try {
      const s = await session(server.url, true);
      assert.equal((await s.client.call('process/start', startParams('p', generator(3 * MiB, join(base, 'peek.pid'))))).error, undefined);
      await s.client.processEvents('p', 60_000);
      const files = spoolFiles(server);
      assert.ok(files.length > 0);
      const dir = spoolDirs(server)[0]!;
      assert.equal(join(dir, '..'), privateDir());
      assert.equal(statSync(dir).mode & 0o777, 0o700);
      for (const f of files) assert.equal(statSync(f).mode & 0o777, 0o600);

      // A sandboxed command looks for the spool directory and its files by path.
      const ws = join(base, 'ws');
      mkdirSync(ws, { recursive: true });
      const script = `ls -a ${dir} 2>&1; echo ls=$?; cat ${files[0]} >/dev/null 2>&1; echo cat=$?; ls ${privateDir()} 2>&1 | grep -c ${SPOOL_DIR_PREFIX}`;
      const res = await s.client.call(
        'process/start',
        startParams('peek', ['sh', '-c', script], {
          cwd: pathToFileURL(ws).href,
          sandbox: sandboxForPolicy({ policy: 'workspace-write', network: false, cwd: pathToFileURL(ws).href }),
        }),
      );
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      await s.client.processEvents('peek', 60_000);
      const out = s.client.output('peek');
      assert.match(out, /ls=[12]\n/, out);
      assert.match(out, /cat=1\n/, out);
      assert.match(out, /\n0\n$/, out);
      // They were there all along: the sandbox hides them.
      assert.deepEqual(spoolFiles(server), files);
      s.client.close();
    } finally {
      await server.stop();
    }
  });

  test('spool files go once the process record is released, and when a detached session expires', async () => {
    // Exited processes are released a TTL after `closed` while their session is attached.
    const server = await startServer('ours', ['--session-ttl-ms', '3000']);
    try {
      const s = await session(server.url, true);
      assert.equal((await s.client.call('process/start', startParams('p', generator(3 * MiB, join(base, 'rel.pid'))))).error, undefined);
      await s.client.processEvents('p', 60_000);
      assert.ok(spoolFiles(server).length > 0);
      await until(
        async () => (await s.client.call('process/read', { processId: 'p', afterSeq: 0 })).error,
        60_000,
        'the process record to be released',
      );
      await until(() => spoolFiles(server).length === 0, 30_000, 'the spool files of the released process to go');
      s.client.close();

      // A detached session that expires (its TTL, 3 s here) takes its processes' spool files along.
      const d = await session(server.url, true);
      const pidFile = join(base, 'exp.pid');
      assert.equal((await d.client.call('process/start', startParams('q', generator(3 * MiB, pidFile, true)))).error, undefined);
      await until(() => d.client.output('q').length >= 3 * MiB, 60_000, 'its output');
      assert.ok(spoolFiles(server).length > 0);
      d.client.close();
      await until(() => spoolFiles(server).length === 0, 30_000, 'the spool files of the expired session to go');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await until(() => !isAlive(pid), 10_000, 'its process to be killed with the session');
    } finally {
      await server.stop();
    }
  });

  test('a server start removes the spool directory a killed server left', async () => {
    const first = await startServer('ours');
    let dirs: string[];
    try {
      const s = await session(first.url, true);
      assert.equal((await s.client.call('process/start', startParams('p', generator(3 * MiB, join(base, 'kill.pid'))))).error, undefined);
      await s.client.processEvents('p', 60_000);
      dirs = spoolDirs(first);
      assert.equal(dirs.length, 1);
      s.client.close();
      process.kill(first.child.pid!, 'SIGKILL');
      await until(() => !isAlive(first.child.pid!), 10_000, 'the server to die');
      assert.equal(existsSync(dirs[0]!), true, 'a killed server leaves its spool');
    } finally {
      await first.stop();
    }
    const second = await startServer('ours');
    try {
      // The sweep runs as the server starts, before it listens.
      assert.equal(existsSync(dirs[0]!), false);
    } finally {
      await second.stop();
    }
  });
});
