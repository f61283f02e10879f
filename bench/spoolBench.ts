/**
 * The output spool's figures (issue 27 item 3), run as a child of bench/run.mjs (`--phases spool`),
 * bundled like clientBench.ts: `node bench/out/spoolBench.js <dist/cli.js> [quick]` prints one JSON
 * line. Each part starts servers of its own (`<cli> serve`):
 *   cost     a process prints N MiB with nobody attached, in a session that spools and in one that
 *            does not (alternating): server CPU and RSS growth per MiB, bytes on disk;
 *   replay   48 MiB spooled (under the 64 MiB cap), read back by a resumed client: our
 *            ExecServerClient's attachProcess and raw `process/read` pages, against reading the same
 *            bytes from the in-memory window (1 MiB, read again and again), `cat` of a file of that
 *            size through the server, and plain `cat` of it;
 *   ttl      behaviour at the edges: a resume sent 1 ms before the session's end and just after
 *            (its end as `execBridge/sessions` tells it), a TTL asked above `--max-session-ttl-ms`,
 *            and the 30 s a codex-style client (it asks nothing) gets.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ExecServerClient } from '../src/client';
import { SPOOL_DIR_PREFIX } from '../src/server/outputSpool';
import { privateDir } from '../src/util/privateDir';

const MiB = 1024 * 1024;
const CLI = process.argv[2]!;
const QUICK = process.argv[3] === 'quick';
const dir = mkdtempSync(join(tmpdir(), 'exec-bridge-spool-bench-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Server {
  url: string;
  pid: number;
  stop(): void;
}

function startServer(args: string[] = []): Promise<Server> {
  const child = spawn(process.execPath, [CLI, 'serve', '--listen', 'ws://127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  const stop = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no server URL within 20 s')), 20_000);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ws:\/\/[0-9.:]+/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[0], pid: child.pid!, stop });
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Answer = { result?: any; error?: { code: number; message: string } };

/** Just enough wire: calls (notifications are dropped), close. */
class Wire {
  private nextId = 1;
  private readonly pending = new Map<number, (m: Answer) => void>();
  closed: Promise<void>;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.id !== undefined && m.method === undefined) {
        this.pending.get(m.id)?.(m);
        this.pending.delete(m.id);
      }
    });
    this.closed = new Promise((r) =>
      ws.once('close', () => {
        for (const answer of this.pending.values()) answer({ error: { code: -1, message: 'connection closed' } });
        this.pending.clear();
        r();
      }),
    );
    ws.on('error', () => undefined);
  }
  static async open(url: string): Promise<Wire> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * MiB });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new Wire(ws);
  }
  /** Sends now; the answer (result or error) later. */
  send(method: string, params: unknown): Promise<Answer> {
    const id = this.nextId++;
    // Every wait is bounded: an answer that never comes is an error, not a hang.
    const p = new Promise<Answer>((r) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        r({ error: { code: -2, message: `no answer to ${method} within 30 s` } });
      }, 30_000);
      this.pending.set(id, (m) => {
        clearTimeout(timer);
        r(m);
      });
    });
    this.ws.send(JSON.stringify({ id, method, params }));
    return p;
  }
  async call(method: string, params: unknown) {
    const m = await this.send(method, params);
    if (m.error) throw new Error(`${method}: ${m.error.code} ${m.error.message}`);
    return m.result;
  }
  async init(extra: Record<string, unknown> = {}) {
    const r = await this.call('initialize', { clientName: 'spool-bench', ...extra });
    this.ws.send('{"method":"initialized","params":{}}');
    return r;
  }
  close(): Promise<void> {
    this.ws.terminate();
    return this.closed;
  }
}

const start = (processId: string, argv: string[]) => ({
  processId,
  argv,
  cwd: `file://${dir}`,
  env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
  tty: false,
  pipeStdin: false,
  arg0: null,
});

function procStat(pid: number): { cpuS: number; rssMiB: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuS: (Number(fields[11]) + Number(fields[12])) / 100, rssMiB: Number(rss![1]) / 1024 };
}

async function until(what: string, check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** `head -c bytes /dev/zero` then a marker file; resolves when the marker is there. */
function printer(bytes: number, marker: string): string[] {
  return ['sh', '-c', `head -c ${bytes} /dev/zero; touch ${marker}`];
}

/** A: what spooling costs the server per MiB a detached process prints. */
async function cost(mib: number, spool: boolean, n: number) {
  const server = await startServer(['--session-ttl-ms', '600000']);
  try {
    const w = await Wire.open(server.url);
    await w.init(spool ? { execBridgeOutputSpool: true } : {});
    // Warm the output path (pools, a first spool segment) so the baseline is not a cold start.
    const warm = join(dir, `warm-${spool}-${n}`);
    await w.call('process/start', start('warm', printer(4 * MiB, warm)));
    await until('the warm-up', () => existsSync(warm), 60_000);
    await sleep(200);
    const before = procStat(server.pid);
    const marker = join(dir, `cost-${spool}-${n}`);
    const t0 = performance.now();
    await w.call('process/start', start('p', printer(mib * MiB, marker)));
    await w.close(); // detached: nobody reads
    let peak = before.rssMiB;
    await until(
      'the detached print',
      () => {
        peak = Math.max(peak, procStat(server.pid).rssMiB);
        return existsSync(marker);
      },
      300_000,
    );
    const wallS = (performance.now() - t0) / 1000;
    await sleep(100); // the last batches written
    const after = procStat(server.pid);
    const pd = privateDir();
    const diskMiB =
      readdirSync(pd)
        .filter((d) => d.startsWith(`${SPOOL_DIR_PREFIX}${server.pid}-`))
        .flatMap((d) => readdirSync(join(pd, d)).map((f) => join(pd, d, f)))
        .reduce((t, f) => t + statSync(f).size, 0) / MiB;
    return { spool, mib, wallS, cpuS: after.cpuS - before.cpuS, rssGrowthMiB: peak - before.rssMiB, diskMiB };
  } finally {
    server.stop();
  }
}

/** B: reading back what a detached process left in the spool, and the same bytes by other ways. */
async function replay(mib: number, rounds: number) {
  const server = await startServer(['--session-ttl-ms', '600000']);
  const rows: Record<string, number[]> = { attach: [], rawPages: [], window: [], catServer: [], catLocal: [] };
  try {
    const file = join(dir, 'replay.bin');
    writeFileSync(file, Buffer.alloc(mib * MiB, 'spool-bench-line\n'));
    for (let r = 0; r < rounds; r++) {
      // What a detached process left: `mib` MiB, every byte still spooled (under the 64 MiB cap).
      const a = await Wire.open(server.url);
      const { sessionId } = await a.init({ execBridgeOutputSpool: true });
      const marker = join(dir, `replay-${r}`);
      await a.call('process/start', start('p', ['sh', '-c', `cat ${file}; touch ${marker}`]));
      await a.close();
      await until('the detached print', () => existsSync(marker), 120_000);
      await sleep(100);

      // Our client, as a reopened terminal without a credit window (as fast as it can take).
      let t0 = performance.now();
      const client = await ExecServerClient.connect({
        endpoint: { kind: 'websocket', url: server.url },
        resumeSessionId: sessionId,
        outputSpool: true,
      });
      const attached = await client.attachProcess('p', { tty: false, stdinWritable: false });
      let bytes = 0;
      const exited = new Promise<void>((resolve, reject) =>
        attached.handle.onEvent((e) => {
          if (e.type === 'output') bytes += e.data.length;
          else if (e.type === 'exited') resolve();
          else if (e.type === 'failed') reject(e.error);
        }),
      );
      await exited;
      rows.attach!.push(bytes / MiB / ((performance.now() - t0) / 1000));
      if (bytes !== mib * MiB) throw new Error(`attach replayed ${bytes} bytes`);
      client.dispose();
      await sleep(200);

      // Raw `process/read` pages of at most 2 MiB, as any client that asked for the spool reads.
      const w = await Wire.open(server.url);
      await w.init({ resumeSessionId: sessionId, execBridgeOutputSpool: true });
      t0 = performance.now();
      let after = 0;
      bytes = 0;
      for (let i = 0; i < 100_000; i++) {
        const page = await w.call('process/read', { processId: 'p', afterSeq: after, execBridgeSpoolMaxBytes: 2 * MiB });
        for (const c of page.chunks) bytes += Buffer.from(c.chunk, 'base64').length;
        if (!page.execBridgeSpooled) break;
        after = page.nextSeq - 1;
      }
      rows.rawPages!.push(bytes / MiB / ((performance.now() - t0) / 1000));
      if (bytes !== mib * MiB) throw new Error(`raw pages read ${bytes} bytes`);

      // The in-memory window: a process whose whole output (1 MiB) it holds, read `mib` times.
      const wm = join(dir, `window-${r}`);
      await w.call('process/start', start('win', ['sh', '-c', `head -c ${MiB - 4096} ${file}; touch ${wm}`]));
      await until('the window process', () => existsSync(wm), 60_000);
      await sleep(100);
      t0 = performance.now();
      bytes = 0;
      for (let i = 0; i < mib; i++) {
        const page = await w.call('process/read', { processId: 'win', afterSeq: 0 });
        for (const c of page.chunks) bytes += Buffer.from(c.chunk, 'base64').length;
      }
      rows.window!.push(bytes / MiB / ((performance.now() - t0) / 1000));
      await w.close();

      // `cat` of the same file, live through the server to our client.
      const c2 = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: server.url } });
      t0 = performance.now();
      const h = await c2.startProcess({ argv: ['cat', file], cwd: dir, tty: false });
      bytes = 0;
      h.onEvent((e) => {
        if (e.type === 'output') bytes += e.data.length;
      });
      await h.completion;
      rows.catServer!.push(bytes / MiB / ((performance.now() - t0) / 1000));
      c2.dispose();

      // Plain `cat` of it, read by this process.
      t0 = performance.now();
      bytes = await new Promise<number>((resolve) => {
        let n = 0;
        const cat = spawn('cat', [file], { stdio: ['ignore', 'pipe', 'ignore'] });
        cat.stdout.on('data', (d: Buffer) => (n += d.length));
        cat.on('close', () => resolve(n));
      });
      rows.catLocal!.push(bytes / MiB / ((performance.now() - t0) / 1000));
    }
    return rows;
  } finally {
    server.stop();
  }
}

/**
 * C1: a resume sent `offsetMs` from the detached session's end (`expiresAt` from
 * `execBridge/sessions`, the server's clock; the same machine's). The socket is opened just before;
 * the last 60 ms are waited for busily. What was really sent when is in the result (`sentLateMs`).
 */
async function resumeAt(server: Server, ttlMs: number, offsetMs: number, ask: boolean) {
  const a = await Wire.open(server.url);
  const init = await a.init(ask ? { execBridgeSessionTtlMs: ttlMs, execBridgeOutputSpool: true } : {});
  await a.call('process/start', start('sleeper', ['sleep', '60']));
  await a.close();
  const probe = await Wire.open(server.url);
  await probe.init();
  let expiresAt: number | null = null;
  for (let i = 0; i < 200 && expiresAt === null; i++) {
    const { sessions } = await probe.call('execBridge/sessions', {});
    expiresAt = sessions.find((s: { sessionId: string }) => s.sessionId === init.sessionId)?.expiresAt ?? null;
    if (expiresAt === null) await sleep(5);
  }
  await probe.close();
  if (expiresAt === null) throw new Error('the session was not listed as detached');
  const target = expiresAt + offsetMs;
  // The socket opens shortly before (a server closes a connection that does not initialize in time).
  while (Date.now() < target - 500) await sleep(Math.min(100, target - 500 - Date.now()));
  const b = await Wire.open(server.url);
  while (Date.now() < target - 60) await sleep(Math.min(10, target - 60 - Date.now()));
  while (Date.now() < target) {
    // the last 60 ms, spinning: a timer that fires late on a loaded machine would overshoot
  }
  const sentAt = Date.now();
  const m = await b.send('initialize', { clientName: 'spool-bench', resumeSessionId: init.sessionId });
  let outcome: string;
  if (m.error) outcome = /unknown session/.test(m.error.message) ? 'expired' : `failed (${m.error.message})`;
  else {
    b.ws.send('{"method":"initialized","params":{}}');
    const read = await b.send('process/read', { processId: 'sleeper', afterSeq: 0 });
    outcome = read.error ? `resumed, process gone (${read.error.message})` : 'resumed';
    await b.send('process/terminate', { processId: 'sleeper' });
  }
  await b.close();
  return { offsetMs, sentLateMs: sentAt - target, outcome, ttlAnswered: init.execBridgeSessionTtlMs ?? null };
}

async function ttl(quick: boolean) {
  const out: Record<string, unknown> = {};
  // 1 ms before / after the end of a 1 s TTL the client asked for.
  const server = await startServer();
  try {
    const trials = quick ? 3 : 8;
    const edge: Array<Awaited<ReturnType<typeof resumeAt>>> = [];
    for (let i = 0; i < trials; i++) {
      for (const off of [-1, 1, 5, 20]) edge.push(await resumeAt(server, 1000, off, true));
      process.stderr.write(` ttl trial ${i + 1}/${trials}…`);
    }
    out.edge = edge;
  } finally {
    server.stop();
  }
  // A TTL asked above the cap: the answer says the cap, and the session ends then.
  const capped = await startServer(['--max-session-ttl-ms', '1500']);
  try {
    out.cap = [await resumeAt(capped, 600_000, -50, true), await resumeAt(capped, 600_000, 50, true)];
  } finally {
    capped.stop();
  }
  // A codex-style client asks nothing: the server's default, 30 s (both trials at once).
  if (!quick) {
    const codex = await startServer();
    try {
      out.codexStyle = await Promise.all([resumeAt(codex, 0, -100, false), resumeAt(codex, 0, 100, false)]);
    } finally {
      codex.stop();
    }
  }
  return out;
}

async function main() {
  const mib = QUICK ? 32 : 128;
  const n = QUICK ? 1 : 3;
  const costs = [];
  for (let i = 0; i < n; i++) for (const spool of [true, false]) costs.push(await cost(mib, spool, i));
  process.stderr.write(' replay…');
  const replays = await replay(48, QUICK ? 1 : 3);
  process.stderr.write(' ttl…');
  const ttls = await ttl(QUICK);
  process.stdout.write(JSON.stringify({ costs, replays, ttls }) + '\n');
}

main().then(
  () => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  },
  (e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`spool bench failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
