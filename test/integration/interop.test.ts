/**
 * Interop: the same scenarios against our exec-server and the real `codex exec-server` 0.171.0,
 * asserting the same observable behaviour (docs/protocol.md, every method and error row
 * both implement; fs/* lives in fs.test.ts). Observations are normalized before comparison:
 * session ids, temp dirs, pty numbers, and chunk boundaries (output is compared concatenated per
 * stream, events as a sequence of kinds with runs of output collapsed), because chunking is not
 * part of the contract (ours coalesces up to 64 KiB, codex forwards each 8 KiB read).
 * Where ours deliberately differs (process/resize, concurrent requests, SIGTERM kills children,
 * extra capability keys) each side's own behaviour is asserted explicitly.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { isAlive } from '../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer, type WireMessage } from '../helpers/rawClient';

type Kind = 'ours' | 'codex';
const KINDS: readonly Kind[] = ['ours', 'codex'];

interface Target {
  kind: Kind;
  server: StartedServer;
  token: string;
  /** A private scratch dir, replaced by `<tmp>` in observations. */
  dir: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The servers run with a small, known environment so that `envPolicy` results are comparable. */
const SERVER_ENV: NodeJS.ProcessEnv = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: process.env.HOME ?? '/root',
  LANG: 'C.UTF-8',
  SHELL: '/bin/bash',
  INTEROP_MARKER: 'from-server',
  INTEROP_API_KEY: 'not-a-real-key',
  INTEROP_PLAIN_TOKEN: 'not-a-real-token',
};

const alive = isAlive;

async function until(what: string, pred: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (let i = 0; i < 10_000; i++) {
    if (await pred()) return;
    if (Date.now() > end) break;
    await sleep(20);
  }
  throw new Error(`${what}: not within ${ms}ms`);
}

/** Error part of an answer, or its result. */
const answer = (m: WireMessage) => (m.error ? { error: m.error } : { result: m.result });
/** Code and id only (for serde messages whose wording we do not copy). */
const codeOf = (m: WireMessage) => ({ id: m.id, code: m.error?.code ?? null });

interface Shape {
  /** Output streams in seq order with runs collapsed, then `closed`. */
  kinds: string[];
  exitCode: number | null;
  /** Seqs are exactly 1..N, one `exited`, `closed` holds N. */
  wellFormed: boolean;
}

/**
 * The event sequence of a process with chunk boundaries removed: runs of output on one stream
 * collapse into one entry. Where `exited` falls among the outputs is left out: output still in the
 * pipes when the child exits may legitimately get later seqs (§5.1), and that race goes either way.
 */
function shape(arrived: WireMessage[]): Shape {
  // By seq, not arrival: codex was seen to send a tty process's `closed` before its `exited`.
  const events = [...arrived].sort((a, b) => a.params.seq - b.params.seq);
  const kinds: string[] = [];
  for (const e of events) {
    if (e.method === 'process/exited') continue;
    const k = e.method === 'process/output' ? `output:${e.params.stream}` : e.method!.slice('process/'.length);
    if (!(k.startsWith('output') && kinds[kinds.length - 1] === k)) kinds.push(k);
  }
  const exits = events.filter((e) => e.method === 'process/exited');
  return {
    kinds,
    exitCode: exits[0]?.params.exitCode ?? null,
    wellFormed:
      events.every((e, i) => e.params.seq === i + 1) && exits.length === 1 && events[events.length - 1]?.method === 'process/closed',
  };
}

describe('interop: our exec-server and codex exec-server 0.171.0 behave the same', () => {
  const targets = {} as Record<Kind, Target>;
  const clients: RawClient[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'eb-interop-'));

  before(async () => {
    const token = randomBytes(16).toString('hex');
    const tokenFile = join(scratch, 'token');
    writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
    const [ours, codex] = await Promise.all([
      startServer('ours', ['--token-file', tokenFile], SERVER_ENV),
      startServer('codex', ['--ws-auth', 'capability-token', '--ws-token-file', tokenFile], SERVER_ENV),
    ]);
    for (const [kind, server] of [
      ['ours', ours],
      ['codex', codex],
    ] as const) {
      targets[kind] = { kind, server, token, dir: mkdtempSync(join(scratch, `${kind}-`)) };
    }
  });

  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(KINDS.map((k) => targets[k]?.server.stop()));
    rmSync(scratch, { recursive: true, force: true });
  });

  const connect = async (t: Target, headers: Record<string, string> = { authorization: `Bearer ${t.token}` }) => {
    const c = await RawClient.connect(t.server.url, headers);
    clients.push(c);
    return c;
  };

  /** A connection with initialize + initialized done. */
  const session = async (t: Target): Promise<{ c: RawClient; sessionId: string; init: WireMessage }> => {
    const c = await connect(t);
    const init = await c.call('initialize', { clientName: 'interop' });
    assert.ok(init.result, `${t.kind} initialize: ${JSON.stringify(init.error)}`);
    c.notify('initialized', {});
    return { c, sessionId: init.result.sessionId as string, init };
  };

  /** Replaces what legitimately differs between the two runs (ids, dirs) with placeholders. */
  const normalize = <T>(t: Target, value: T, sessionIds: string[] = []): T => {
    let s = JSON.stringify(value);
    for (const id of sessionIds) s = s.split(id).join('<session>');
    s = s
      .split(t.dir)
      .join('<tmp>')
      .replace(/\/dev\/pts\/\d+/g, '/dev/pts/N');
    return JSON.parse(s) as T;
  };

  /**
   * Runs `scenario` against both servers at once and asserts equal observations; `expected`
   * (checked against codex, the reference) keeps a scenario honest: two equal wrong answers fail.
   */
  const interop = <T>(name: string, scenario: (t: Target) => Promise<T>, expected?: T | ((obs: T) => void)): void => {
    test(name, async () => {
      const [ours, codex] = await Promise.all(KINDS.map((k) => scenario(targets[k])));
      if (typeof expected === 'function') (expected as (obs: T) => void)(codex as T);
      else if (expected !== undefined)
        assert.deepEqual(codex, expected, 'codex (the reference) answered differently than the scenario expects');
      assert.deepEqual(ours, codex, 'ours differs from codex');
    });
  };

  /** A deliberate difference (docs/protocol-extensions.md): the same scenario, each side checked against its own answer. */
  const differs = <T>(name: string, scenario: (t: Target) => Promise<T>, expected: { ours: T; codex: T }): void => {
    test(`differs on purpose: ${name}`, async () => {
      const [ours, codex] = await Promise.all(KINDS.map((k) => scenario(targets[k])));
      assert.deepEqual(codex, expected.codex, 'codex (the reference) answered differently than the scenario expects');
      assert.deepEqual(ours, expected.ours, 'ours answered differently than documented');
    });
  };

  /** Sends frames, then reports whether the server dropped the connection and what it answered. */
  const dropObservation = async (c: RawClient, from: number) => {
    let dropped = true;
    try {
      await c.waitClosed(5000);
    } catch {
      dropped = false;
    }
    return { dropped, closeCode: c.closeCode ?? null, answers: c.received.slice(from) };
  };

  // ---------- handshake gating (§4) ----------

  interop(
    'calls before initialize are refused with the family word; the connection stays usable',
    async (t) => {
      const c = await connect(t);
      const read = await c.call('process/read', { processId: 'x' });
      const info = await c.call('environment/info', {});
      const status = await c.call('environment/status', {});
      const init = await c.call('initialize', { clientName: 'interop' });
      return { read: answer(read), info: answer(info), status: answer(status), initOk: typeof init.result?.sessionId === 'string' };
    },
    {
      read: { error: { code: -32600, message: 'client must call initialize before using exec methods' } },
      info: { error: { code: -32600, message: 'client must call initialize before using environment info methods' } },
      status: { error: { code: -32600, message: 'client must call initialize before using environment status methods' } },
      initOk: true,
    },
  );

  interop(
    'calls after initialize but before initialized are refused; then they work',
    async (t) => {
      const c = await connect(t);
      await c.call('initialize', { clientName: 'interop' });
      const early = await c.call('process/read', { processId: 'x' });
      const info = await c.call('environment/info', {});
      const status = await c.call('environment/status', {});
      c.notify('initialized'); // no params member at all is accepted
      const later = await c.call('environment/status');
      return { early: answer(early), info: answer(info), status: answer(status), later: answer(later) };
    },
    {
      early: { error: { code: -32600, message: 'client must send initialized before using exec methods' } },
      info: { error: { code: -32600, message: 'client must send initialized before using environment info methods' } },
      status: { error: { code: -32600, message: 'client must send initialized before using environment status methods' } },
      later: { result: { status: 'ready' } },
    },
  );

  interop(
    'initialize twice is refused; a missing clientName is invalid params',
    async (t) => {
      const c = await connect(t);
      const bad = await c.call('initialize', {});
      const first = await c.call('initialize', { clientName: 'interop' });
      c.notify('initialized', {});
      const second = await c.call('initialize', { clientName: 'interop' });
      return { bad: answer(bad), firstOk: !!first.result, second: answer(second), still: answer(await c.call('environment/status', {})) };
    },
    {
      bad: { error: { code: -32602, message: 'missing field `clientName`' } },
      firstOk: true,
      second: { error: { code: -32600, message: 'initialize may only be sent once per connection' } },
      still: { result: { status: 'ready' } },
    },
  );

  interop(
    'initialized before initialize drops the connection without an answer',
    async (t) => {
      const c = await connect(t);
      c.notify('initialized', {});
      return dropObservation(c, 0);
    },
    { dropped: true, closeCode: 1006, answers: [] },
  );

  interop(
    'a stray notification after the handshake drops the connection',
    async (t) => {
      const { c } = await session(t);
      const n = c.received.length;
      c.notify('some/notification', { x: 1 });
      return dropObservation(c, n);
    },
    { dropped: true, closeCode: 1006, answers: [] },
  );

  for (const [what, frame] of [
    ['result', { id: 77, result: {} }],
    ['error', { id: 78, error: { code: -32000, message: 'nope' } }],
  ] as const) {
    interop(
      `an unsolicited client ${what} drops the connection`,
      async (t) => {
        const { c } = await session(t);
        const n = c.received.length;
        c.sendRaw(JSON.stringify(frame));
        return dropObservation(c, n);
      },
      { dropped: true, closeCode: 1006, answers: [] },
    );
  }

  interop(
    'a failed initialize (unknown resume id) can be retried on the same connection',
    async (t) => {
      const c = await connect(t);
      const ghost = randomUUID();
      const bad = await c.call('initialize', { clientName: 'interop', resumeSessionId: ghost });
      const good = await c.call('initialize', { clientName: 'interop' });
      return { bad: normalize(t, answer(bad), [ghost]), goodOk: typeof good.result?.sessionId === 'string' };
    },
    { bad: { error: { code: -32600, message: 'unknown session id <session>' } }, goodOk: true },
  );

  // ---------- envelope and malformed frames (§2, §8) ----------

  interop(
    'malformed frames are answered with id -1 / -32600 and the connection stays open',
    async (t) => {
      const { c } = await session(t);
      const frames = [
        '{not json',
        '42',
        '[]',
        JSON.stringify([{ id: 1, method: 'environment/status' }]),
        '{}',
        '{"id":99.5,"method":"environment/status"}',
        '{"id":null,"method":"environment/status"}',
        '"str"',
      ];
      const out: unknown[] = [];
      for (const f of frames) {
        const n = c.received.length;
        c.sendRaw(f);
        const m = await c.waitFor((_) => c.received.length > n, 5000, `answer to ${f}`);
        out.push({ frame: f, ...codeOf(m) });
      }
      return { out, alive: answer(await c.call('environment/status', {})) };
    },
    (obs) => {
      for (const o of obs.out as Array<{ id: number; code: number }>) assert.deepEqual([o.id, o.code], [-1, -32600], JSON.stringify(o));
      assert.deepEqual(obs.alive, { result: { status: 'ready' } });
    },
  );

  interop(
    'string ids are echoed as strings; a "jsonrpc" member is tolerated and never sent back; binary frames work',
    async (t) => {
      const { c } = await session(t);
      const s = await c.call('environment/status', {}, 'str-id');
      const n = c.received.length;
      c.sendRaw(JSON.stringify({ jsonrpc: '2.0', id: 900, method: 'environment/status', params: {} }));
      const j = await c.waitFor((m) => m.id === 900);
      c.sendRaw(Buffer.from(JSON.stringify({ id: 901, method: 'environment/status' })));
      const bin = await c.waitFor((m) => m.id === 901);
      return { s, j, bin, anyJsonrpc: c.received.slice(n).some((m) => 'jsonrpc' in m) };
    },
    {
      s: { id: 'str-id', result: { status: 'ready' } },
      j: { id: 900, result: { status: 'ready' } },
      bin: { id: 901, result: { status: 'ready' } },
      anyJsonrpc: false,
    },
  );

  interop(
    'unknown methods are -32601 with the reference wording (also ones codex lacks: process/kill, fs/rename)',
    async (t) => {
      const { c } = await session(t);
      const names = ['foo/bar', 'process/kill', 'process/list', 'fs/rename'];
      const out: unknown[] = [];
      for (const m of names) out.push(answer(await c.call(m, {})));
      return out;
    },
    ['foo/bar', 'process/kill', 'process/list', 'fs/rename'].map((m) => ({
      error: { code: -32601, message: `exec-server stub does not implement \`${m}\` yet` },
    })),
  );

  interop(
    'params of the wrong type are -32602 with the request id',
    async (t) => {
      const { c } = await session(t);
      const notObject = await c.call('process/read', 'notanobject', 41);
      const wrongField = await c.call('process/start', { ...startParams('w', ['true']), tty: 'yes' }, 42);
      const badBase64 = await c.call('process/write', { processId: 'w', chunk: '*', writeId: 'x' }, 43);
      return [codeOf(notObject), codeOf(wrongField), codeOf(badBase64)];
    },
    [
      { id: 41, code: -32602 },
      { id: 42, code: -32602 },
      { id: 43, code: -32602 },
    ],
  );

  // ---------- process/start errors (§5.2) ----------

  interop(
    'process/start errors: empty argv, relative cwd, missing binary/cwd (spawnNotFound), missing tty, duplicate id',
    async (t) => {
      const { c } = await session(t);
      const r: Record<string, unknown> = {};
      r.emptyArgv = answer(await c.call('process/start', startParams('e1', [])));
      r.plainCwd = answer(await c.call('process/start', { ...startParams('e2', ['true']), cwd: '/tmp' }));
      r.relativeCwd = answer(await c.call('process/start', { ...startParams('e3', ['true']), cwd: 'file://relative/path' }));
      r.missingBinary = answer(await c.call('process/start', startParams('e5', ['no-such-binary-xyz'])));
      r.missingCwd = answer(await c.call('process/start', { ...startParams('e6', ['true']), cwd: `file://${t.dir}/no/such/dir` }));
      r.missingTty = answer(await c.call('process/start', { processId: 'e8', argv: ['true'], cwd: 'file:///tmp', env: {} }));
      // A failed start reserves nothing: the id is unknown and can be used.
      r.readFailed = answer(await c.call('process/read', { processId: 'e5' }));
      r.reuse = answer(await c.call('process/start', startParams('e5', ['true'])));
      r.dup = answer(await c.call('process/start', startParams('e5', ['true'])));
      await c.processEvents('e5');
      r.dupAfterExit = answer(await c.call('process/start', startParams('e5', ['true'])));
      return normalize(t, r);
    },
    {
      emptyArgv: { error: { code: -32602, message: 'argv must not be empty' } },
      plainCwd: { error: { code: -32602, message: 'invalid URI: relative URL without a base' } },
      relativeCwd: {
        error: {
          code: -32602,
          message: "cwd URI `file://relative/path` is not valid on this exec-server host: 'file://relative/path' is invalid on 'linux'",
        },
      },
      missingBinary: { error: { code: -32603, message: 'No such file or directory (os error 2)', data: { kind: 'spawnNotFound' } } },
      missingCwd: { error: { code: -32603, message: 'No such file or directory (os error 2)', data: { kind: 'spawnNotFound' } } },
      missingTty: { error: { code: -32602, message: 'missing field `tty`' } },
      readFailed: { error: { code: -32600, message: 'unknown process id e5' } },
      reuse: { result: { processId: 'e5', sandboxType: 'none' } },
      dup: { error: { code: -32600, message: 'process e5 already exists' } },
      dupAfterExit: { error: { code: -32600, message: 'process e5 already exists' } },
    },
  );

  // ---------- seq model, tty, exit codes (§5.1, §5.2) ----------

  /**
   * Drives a process that prints one piece of output, then waits for a line on stdin, and so on:
   * each line is sent once the piece before it was seen, so every piece is its own chunk and the
   * exit comes after the last one however loaded the machine is. (With sleeps between the pieces, a
   * busy CI machine saw codex number the exit before the last chunk, and could join two pieces.)
   */
  async function stepped(t: Target, c: RawClient, id: string, pieces: string[]): Promise<void> {
    let seen = '';
    for (const [i, piece] of pieces.entries()) {
      seen += piece;
      await until(`${t.kind}: ${id} piece ${i + 1}`, () => c.output(id) === seen);
      await c.call('process/write', { processId: id, chunk: b64('\n'), writeId: `${id}-${i}` });
    }
  }

  interop(
    'seq model: stdout and stderr share one counter, then exited, then closed; read returns the same',
    async (t) => {
      const { c } = await session(t);
      const start = await c.call(
        'process/start',
        startParams('p1', ['sh', '-c', 'echo hi; read a; echo err >&2; read b; exit 3'], { pipeStdin: true }),
      );
      await stepped(t, c, 'p1', ['hi\n', 'err\n']);
      const events = await c.processEvents('p1');
      const read = await c.call('process/read', { processId: 'p1' });
      return {
        start: answer(start),
        events: events.map((e) => ({ method: e.method, ...e.params })),
        read: answer(read),
      };
    },
    {
      start: { result: { processId: 'p1', sandboxType: 'none' } },
      events: [
        { method: 'process/output', processId: 'p1', seq: 1, stream: 'stdout', chunk: b64('hi\n') },
        { method: 'process/output', processId: 'p1', seq: 2, stream: 'stderr', chunk: b64('err\n') },
        { method: 'process/exited', processId: 'p1', seq: 3, exitCode: 3, sandboxDenied: false },
        { method: 'process/closed', processId: 'p1', seq: 4 },
      ],
      read: {
        result: {
          chunks: [
            { seq: 1, stream: 'stdout', chunk: b64('hi\n') },
            { seq: 2, stream: 'stderr', chunk: b64('err\n') },
          ],
          nextSeq: 5,
          exited: true,
          exitCode: 3,
          closed: true,
          failure: null,
          sandboxDenied: false,
        },
      },
    },
  );

  interop(
    'output still draining after the exit gets later seqs than exited; closed is last; cwd and the empty process id',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('', ['bash', '-c', '(sleep 0.2; pwd) & exit 0'], { cwd: `file://${t.dir}` }));
      const events = await c.processEvents('');
      const read = await c.call('process/read', { processId: '', afterSeq: 0 });
      return normalize(t, {
        events: events.map((e) => [e.method, e.params.seq]),
        out: c.output(''),
        readSeqs: read.result.chunks.map((x: { seq: number }) => x.seq),
      });
    },
    {
      events: [
        ['process/exited', 1],
        ['process/output', 2],
        ['process/closed', 3],
      ],
      out: '<tmp>\n',
      readSeqs: [2],
    },
  );

  interop(
    'tty: stream "pty", CRLF, stderr merged, 24x80',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('t', ['bash', '-c', 'tty; echo out; echo err >&2; stty size; exit 0'], { tty: true }));
      const events = await c.processEvents('t');
      return normalize(t, { shape: shape(events), out: c.output('t', 'pty') });
    },
    { shape: { kinds: ['output:pty', 'closed'], exitCode: 0, wellFormed: true }, out: '/dev/pts/N\r\nout\r\nerr\r\n24 80\r\n' },
  );

  interop(
    'exit codes: mod 256, and 128+N for death by signal',
    async (t) => {
      const { c } = await session(t);
      const cases: Array<[string, string]> = [
        ['x0', 'exit 0'],
        ['x300', 'exit 300'],
        ['xint', 'kill -INT $$'],
        ['xterm', 'kill -TERM $$'],
        ['xkill', 'kill -KILL $$'],
      ];
      for (const [id, script] of cases) await c.call('process/start', startParams(id, ['bash', '-c', script]));
      const codes: Record<string, number> = {};
      for (const [id] of cases) codes[id] = (await c.processEvents(id)).find((e) => e.method === 'process/exited')!.params.exitCode;
      return codes;
    },
    { x0: 0, x300: 44, xint: 130, xterm: 143, xkill: 137 },
  );

  // ---------- process/read (§5.3) ----------

  interop(
    'process/read: afterSeq, maxBytes 0/1 still return one whole chunk, nextSeq rules, unknown id',
    async (t) => {
      const { c } = await session(t);
      // Each line waits for a word on stdin, sent once the line before it was seen (see `stepped`).
      await c.call(
        'process/start',
        startParams('r1', ['sh', '-c', 'echo line1; read a; echo line2; read b; echo line3; read c'], { pipeStdin: true }),
      );
      await stepped(t, c, 'r1', ['line1\n', 'line2\n', 'line3\n']);
      await c.processEvents('r1');
      const texts = (m: WireMessage) => m.result.chunks.map((x: { seq: number; chunk: string }) => [x.seq, unb64(x.chunk)]);
      const max1 = await c.call('process/read', { processId: 'r1', maxBytes: 1 });
      const max0 = await c.call('process/read', { processId: 'r1', afterSeq: 1, maxBytes: 0 });
      const budget = await c.call('process/read', { processId: 'r1', afterSeq: 0, maxBytes: 12 });
      const rest = await c.call('process/read', { processId: 'r1', afterSeq: 1 });
      const nulls = await c.call('process/read', { processId: 'r1', afterSeq: null, maxBytes: null, waitMs: null });
      const unknown = await c.call('process/read', { processId: 'nope' });
      return {
        max1: [texts(max1), max1.result.nextSeq],
        max0: [texts(max0), max0.result.nextSeq],
        budget: [texts(budget), budget.result.nextSeq],
        rest: [texts(rest), rest.result.nextSeq],
        nulls: [nulls.result.chunks.length, nulls.result.nextSeq],
        unknown: answer(unknown),
      };
    },
    {
      max1: [[[1, 'line1\n']], 2],
      max0: [[[2, 'line2\n']], 3],
      budget: [
        [
          [1, 'line1\n'],
          [2, 'line2\n'],
        ],
        3,
      ],
      rest: [
        [
          [2, 'line2\n'],
          [3, 'line3\n'],
        ],
        6,
      ],
      nulls: [3, 6],
      unknown: { error: { code: -32600, message: 'unknown process id nope' } },
    },
  );

  interop(
    'process/read long poll: idle wait times out, new output wakes it, a closed process answers at once',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('lp', ['bash', '-c', 'sleep 0.6; echo late; sleep 0.3']));
      let t0 = Date.now();
      const idle = await c.call('process/read', { processId: 'lp', waitMs: 200 });
      const idleMs = Date.now() - t0;
      t0 = Date.now();
      const woke = await c.call('process/read', { processId: 'lp', waitMs: 5000 });
      const wokeMs = Date.now() - t0;
      await c.processEvents('lp');
      // Exited (and closed) with afterSeq below the final seq: no waiting either.
      t0 = Date.now();
      const past = await c.call('process/read', { processId: 'lp', afterSeq: 50, waitMs: 5000 });
      const pastMs = Date.now() - t0;
      return {
        idle: [idle.result.chunks.length, idle.result.exited, idleMs >= 180 && idleMs < 2000],
        woke: [woke.result.chunks.map((x: { chunk: string }) => unb64(x.chunk)), wokeMs < 3000],
        past: [past.result.chunks.length, past.result.closed, past.result.exitCode, pastMs < 1000],
      };
    },
    { idle: [0, false, true], woke: [['late\n'], true], past: [0, true, 0, true] },
  );

  interop(
    'more than 1 MiB of output: the oldest chunks are evicted, the gap shows it, maxBytes still gives one chunk',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('big', ['bash', '-c', 'head -c 3000005 /dev/zero | tr "\\0" a']));
      const events = await c.processEvents('big');
      const all = await c.call('process/read', { processId: 'big', afterSeq: 0 });
      const chunks = all.result.chunks as Array<{ seq: number; chunk: string }>;
      const bytes = chunks.reduce((n, x) => n + Buffer.from(x.chunk, 'base64').length, 0);
      const lastOutputSeq = Math.max(...events.filter((e) => e.method === 'process/output').map((e) => e.params.seq as number));
      const notOutput = new Set(events.filter((e) => e.method !== 'process/output').map((e) => e.params.seq as number));
      const one = await c.call('process/read', { processId: 'big', afterSeq: 0, maxBytes: 100 });
      return {
        liveBytes: c.output('big').length,
        gap: chunks[0]!.seq > 1,
        retainedInWindow: bytes <= 1024 * 1024 && bytes > 1024 * 1024 - 64 * 1024,
        endsAtLastOutput: chunks[chunks.length - 1]!.seq === lastOutputSeq,
        // Contiguous but for the seq of `exited`, which codex may send before the last output chunk.
        contiguous: chunks.every(
          (x, i) => i === 0 || x.seq === chunks[i - 1]!.seq + 1 || (x.seq === chunks[i - 1]!.seq + 2 && notOutput.has(x.seq - 1)),
        ),
        oneChunk:
          one.result.chunks.length === 1 && one.result.chunks[0].seq === chunks[0]!.seq && one.result.nextSeq === chunks[0]!.seq + 1,
      };
    },
    { liveBytes: 3000005, gap: true, retainedInWindow: true, endsAtLastOutput: true, contiguous: true, oneChunk: true },
  );

  // ---------- process/write (§5.4) ----------

  interop(
    'process/write: accepted, writeId dedupe, empty chunk, stdinClosed, unknownProcess, empty/missing writeId, dead stdin',
    async (t) => {
      const { c } = await session(t);
      const r: Record<string, unknown> = {};
      // sh's echo writes at once (head or cat into a pipe would buffer) and it exits after two lines.
      // Not bash: with a socket for stdin (see the stdio scenario) Debian's bash sources ~/.bashrc.
      await c.call('process/start', startParams('w1', ['sh', '-c', 'read a; echo "$a"; read b; echo "$b"'], { pipeStdin: true }));
      r.first = answer(await c.call('process/write', { processId: 'w1', chunk: b64('hello\n'), writeId: 'w-1' }));
      r.dupe = answer(await c.call('process/write', { processId: 'w1', chunk: b64('IGNORED\n'), writeId: 'w-1' }));
      r.empty = answer(await c.call('process/write', { processId: 'w1', chunk: '', writeId: 'w-e' }));
      r.emptyId = answer(await c.call('process/write', { processId: 'w1', chunk: b64('x'), writeId: '' }));
      r.missingId = answer(await c.call('process/write', { processId: 'w1', chunk: b64('x') }));
      await until(`${t.kind}: first line echoed`, () => c.output('w1') === 'hello\n');
      r.second = answer(await c.call('process/write', { processId: 'w1', chunk: b64('bye\n'), writeId: 'w-2' }));
      r.shape = shape(await c.processEvents('w1'));
      r.out = c.output('w1');
      await c.call('process/start', startParams('w3', ['cat'], { pipeStdin: true }));
      await c.call('process/terminate', { processId: 'w3' });
      await c.processEvents('w3');
      r.afterTerminate = answer(await c.call('process/write', { processId: 'w3', chunk: b64('late\n'), writeId: 'w-3' }));
      r.unknown = answer(await c.call('process/write', { processId: 'nope', chunk: b64('x'), writeId: 'w-4' }));
      await c.call('process/start', startParams('w2', ['sleep', '5']));
      r.noStdin = answer(await c.call('process/write', { processId: 'w2', chunk: b64('x'), writeId: 'w-5' }));
      await c.call('process/terminate', { processId: 'w2' });
      await c.processEvents('w2');
      r.noStdinExited = answer(await c.call('process/write', { processId: 'w2', chunk: b64('x'), writeId: 'w-6' }));
      return r;
    },
    {
      first: { result: { status: 'accepted' } },
      dupe: { result: { status: 'accepted' } },
      empty: { result: { status: 'accepted' } },
      emptyId: { error: { code: -32602, message: 'writeId must not be empty' } },
      missingId: { error: { code: -32602, message: 'missing field `writeId`' } },
      second: { result: { status: 'accepted' } },
      shape: { kinds: ['output:stdout', 'closed'], exitCode: 0, wellFormed: true },
      out: 'hello\nbye\n',
      afterTerminate: { error: { code: -32603, message: 'failed to write to process stdin' } },
      unknown: { result: { status: 'unknownProcess' } },
      noStdin: { result: { status: 'stdinClosed' } },
      noStdinExited: { result: { status: 'stdinClosed' } },
    },
  );

  differs(
    'process/write after the process exited or closed its stdin: codex accepts (and drops) the bytes, ours says they cannot be delivered',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('x1', ['sh', '-c', 'read a; echo "$a"'], { pipeStdin: true }));
      await c.call('process/write', { processId: 'x1', chunk: b64('one\n'), writeId: '1' });
      await c.processEvents('x1');
      const afterExit = [answer(await c.call('process/write', { processId: 'x1', chunk: b64('two\n'), writeId: '2' }))];
      afterExit.push(answer(await c.call('process/write', { processId: 'x1', chunk: b64('three\n'), writeId: '3' })));
      await c.call('process/start', startParams('x2', ['sh', '-c', 'exec 0<&-; echo closed; sleep 5'], { pipeStdin: true }));
      await until(`${t.kind}: stdin closed`, () => c.output('x2') === 'closed\n');
      const closedStdin = [];
      for (let i = 0; i < 3; i++)
        closedStdin.push(answer(await c.call('process/write', { processId: 'x2', chunk: b64('x\n'), writeId: `c${i}` })));
      await c.call('process/terminate', { processId: 'x2' });
      return { out: c.output('x1'), afterExit, closedStdin };
    },
    {
      // codex 0.171.0 answers `accepted` here (only a terminated process gets -32603).
      codex: {
        out: 'one\n',
        afterExit: [{ result: { status: 'accepted' } }, { result: { status: 'accepted' } }],
        closedStdin: [{ result: { status: 'accepted' } }, { result: { status: 'accepted' } }, { result: { status: 'accepted' } }],
      },
      // Ours: the reference's error for a dead pipe, as soon as the pipe is known dead (the first
      // write to a stdin the child closed is still accepted by the OS before EPIPE shows).
      ours: {
        out: 'one\n',
        afterExit: [
          { error: { code: -32603, message: 'failed to write to process stdin' } },
          { error: { code: -32603, message: 'failed to write to process stdin' } },
        ],
        closedStdin: [
          { result: { status: 'accepted' } },
          { error: { code: -32603, message: 'failed to write to process stdin' } },
          { error: { code: -32603, message: 'failed to write to process stdin' } },
        ],
      },
    },
  );

  interop(
    'child stdio: stdin, stdout and stderr are pipes (FIFOs), /dev/null without pipeStdin; /dev/stdin can be opened',
    async (t) => {
      const { c } = await session(t);
      const types = 'for f in 0 1 2; do stat -L -c %F /proc/$$/fd/$f; done';
      await c.call('process/start', startParams('f1', ['sh', '-c', types], { pipeStdin: true }));
      await c.call('process/start', startParams('f2', ['sh', '-c', types]));
      await c.call('process/start', startParams('f3', ['sh', '-c', 'head -c 3 /dev/stdin; echo " rc=$?"'], { pipeStdin: true }));
      await c.call('process/write', { processId: 'f3', chunk: b64('abc'), writeId: '1' });
      for (const id of ['f1', 'f2', 'f3']) await c.processEvents(id);
      return { piped: c.output('f1'), devNull: c.output('f2'), devStdin: c.output('f3') };
    },
    { piped: 'fifo\nfifo\nfifo\n', devNull: 'character special file\nfifo\nfifo\n', devStdin: 'abc rc=0\n' },
  );

  interop(
    'tty write: input is echoed by the line discipline; ^C interrupts',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('tw', ['cat'], { tty: true }));
      const w = answer(await c.call('process/write', { processId: 'tw', chunk: b64('abc\n'), writeId: '1' }));
      await until(`${t.kind}: cat echoed`, () => c.output('tw') === 'abc\r\nabc\r\n');
      await c.call('process/write', { processId: 'tw', chunk: b64('\x03'), writeId: '2' });
      const events = await c.processEvents('tw');
      // The exit code of a signalled tty process is compared in its own scenario below.
      const { kinds, wellFormed } = shape(events);
      return { w, kinds, wellFormed, out: c.output('tw') };
    },
    { w: { result: { status: 'accepted' } }, kinds: ['output:pty', 'closed'], wellFormed: true, out: 'abc\r\nabc\r\n^C' },
  );

  differs(
    'tty exit codes: a normal exit keeps its code; death by a signal is 128+N in ours (as for pipes), 1 in codex',
    async (t) => {
      const { c } = await session(t);
      const cases: Array<[string, string]> = [
        ['x7', 'exit 7'],
        ['xint', 'kill -INT $$'],
        ['xterm', 'kill -TERM $$'],
        ['xkill', 'kill -KILL $$'],
      ];
      for (const [id, script] of cases) await c.call('process/start', startParams(id, ['bash', '-c', script], { tty: true }));
      await c.call('process/start', startParams('xterminate', ['bash', '-c', 'echo ready; sleep 30'], { tty: true }));
      await until(`${t.kind}: ready`, () => c.output('xterminate').includes('ready'));
      await c.call('process/terminate', { processId: 'xterminate' });
      const codes: Record<string, number> = {};
      for (const id of [...cases.map((x) => x[0]), 'xterminate'])
        codes[id] = (await c.processEvents(id)).find((e) => e.method === 'process/exited')!.params.exitCode;
      return codes;
    },
    {
      // codex 0.171.0 reports 1 for any tty process killed by a signal (pipes get 128+N).
      codex: { x7: 7, xint: 1, xterm: 1, xkill: 1, xterminate: 1 },
      ours: { x7: 7, xint: 130, xterm: 143, xkill: 137, xterminate: 137 },
    },
  );

  // ---------- process/signal, process/terminate (§5.5, §5.6) ----------

  interop(
    'process/signal interrupt runs a trap; unknown ids answer {}; other signal names are invalid params',
    async (t) => {
      const { c } = await session(t);
      await c.call(
        'process/start',
        startParams('s1', ['bash', '-c', 'trap "echo got-int; exit 42" INT; echo ready; while true; do sleep 0.05; done']),
      );
      await until(`${t.kind}: ready`, () => c.output('s1') === 'ready\n');
      const sig = answer(await c.call('process/signal', { processId: 's1', signal: 'interrupt' }));
      const events = await c.processEvents('s1');
      return {
        sig,
        shape: shape(events),
        out: c.output('s1'),
        unknown: answer(await c.call('process/signal', { processId: 'nope', signal: 'interrupt' })),
        exited: answer(await c.call('process/signal', { processId: 's1', signal: 'interrupt' })),
        terminate: answer(await c.call('process/signal', { processId: 's1', signal: 'terminate' })),
      };
    },
    {
      sig: { result: {} },
      shape: { kinds: ['output:stdout', 'closed'], exitCode: 42, wellFormed: true },
      out: 'ready\ngot-int\n',
      unknown: { result: {} },
      exited: { result: {} },
      terminate: { error: { code: -32602, message: 'unknown variant `terminate`, expected `interrupt`' } },
    },
  );

  interop(
    'process/terminate: SIGKILL to the group (TERM ignored, background child dies); running true then false',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('k1', ['bash', '-c', 'trap "" TERM; sleep 30 & echo $!; wait']));
      await until(`${t.kind}: child pid`, () => /^\d+\n$/.test(c.output('k1')));
      const child = Number(c.output('k1'));
      const aliveBefore = alive(child);
      const first = answer(await c.call('process/terminate', { processId: 'k1' }));
      const events = await c.processEvents('k1');
      await until(`${t.kind}: background child dies`, () => !alive(child), 3000).catch(() => undefined);
      return {
        aliveBefore,
        first,
        shape: shape(events),
        childDead: !alive(child),
        again: answer(await c.call('process/terminate', { processId: 'k1' })),
        unknown: answer(await c.call('process/terminate', { processId: 'nope' })),
      };
    },
    {
      aliveBefore: true,
      first: { result: { running: true } },
      shape: { kinds: ['output:stdout', 'closed'], exitCode: 137, wellFormed: true },
      childDead: true,
      again: { result: { running: false } },
      unknown: { result: { running: false } },
    },
  );

  // ---------- environment of the child: env, envPolicy, arg0 (§5.2) ----------

  const envLines = (text: string) =>
    Object.fromEntries(
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  const policy = (inherit: string, extra: Record<string, unknown> = {}) => ({
    inherit,
    ignoreDefaultExcludes: false,
    exclude: [],
    set: {},
    includeOnly: [],
    ...extra,
  });

  interop(
    'env without envPolicy is the whole environment; envPolicy none/core/all overlay set then env; a missing policy field is invalid',
    async (t) => {
      const { c } = await session(t);
      const run = async (id: string, extra: Record<string, unknown>) => {
        await c.call('process/start', { processId: id, argv: ['/usr/bin/env'], cwd: 'file:///tmp', tty: false, arg0: null, ...extra });
        await c.processEvents(id);
        return envLines(c.output(id));
      };
      const exact = await run('exact', { env: { ONLY: 'me' } });
      const none = await run('none', { env: { B: 'env', A: 'env' }, envPolicy: policy('none', { set: { A: 'set', C: 'set' } }) });
      const core = await run('core', { env: { X: 'env' }, envPolicy: policy('core', { set: { X: 'set', Y: 'set' } }) });
      const all = await run('all', { env: {}, envPolicy: policy('all') });
      const allRaw = await run('allRaw', {
        env: {},
        envPolicy: policy('all', { ignoreDefaultExcludes: true, exclude: ['INTEROP_MARKER'] }),
      });
      const missing = answer(await c.call('process/start', { ...startParams('m', ['true']), envPolicy: { inherit: 'core' } }));
      // PATH may be prefixed with the server's helper dirs (codex does); it must end with the server's PATH.
      const pathOk = (e: Record<string, string>) => e.PATH === undefined || e.PATH.endsWith(SERVER_ENV.PATH!);
      const strip = (e: Record<string, string>) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== 'PATH'));
      return {
        exact,
        none: strip(none),
        core: strip(core),
        corePath: core.PATH !== undefined && pathOk(core),
        all: {
          marker: all.INTEROP_MARKER,
          apiKey: all.INTEROP_API_KEY ?? null,
          token: all.INTEROP_PLAIN_TOKEN ?? null,
          home: all.HOME === SERVER_ENV.HOME,
          pathOk: pathOk(all),
        },
        allRaw: {
          marker: allRaw.INTEROP_MARKER ?? null,
          apiKey: allRaw.INTEROP_API_KEY ?? null,
          token: allRaw.INTEROP_PLAIN_TOKEN ?? null,
        },
        missing: missing.error?.code ?? null,
      };
    },
    (obs) => {
      assert.deepEqual(obs.exact, { ONLY: 'me' });
      assert.deepEqual(obs.none, { A: 'env', B: 'env', C: 'set' });
      assert.equal(obs.core.X, 'env');
      assert.equal(obs.core.Y, 'set');
      assert.equal(obs.core.HOME, SERVER_ENV.HOME);
      assert.equal(obs.core.INTEROP_MARKER, undefined);
      assert.equal(obs.corePath, true);
      assert.deepEqual(obs.all, { marker: 'from-server', apiKey: null, token: null, home: true, pathOk: true });
      assert.deepEqual(obs.allRaw, { marker: null, apiKey: 'not-a-real-key', token: 'not-a-real-token' });
      assert.equal(obs.missing, -32602);
    },
  );

  interop(
    'arg0 replaces argv[0] as the child sees it (pipes and tty); null keeps it',
    async (t) => {
      const { c } = await session(t);
      const script = 'tr "\\0" " " < /proc/$$/cmdline';
      await c.call('process/start', startParams('a1', ['bash', '-c', script], { arg0: 'custom-name' }));
      await c.call('process/start', startParams('a2', ['bash', '-c', script], { arg0: null }));
      await c.call('process/start', startParams('a3', ['bash', '-c', script], { arg0: 'tty-name', tty: true }));
      for (const id of ['a1', 'a2', 'a3']) await c.processEvents(id);
      return { a1: c.output('a1'), a2: c.output('a2'), a3: c.output('a3').replace(/\r\n$/, '') };
    },
    {
      a1: `custom-name -c ${'tr "\\0" " " < /proc/$$/cmdline'} `,
      a2: `bash -c ${'tr "\\0" " " < /proc/$$/cmdline'} `,
      a3: `tty-name -c ${'tr "\\0" " " < /proc/$$/cmdline'} `,
    },
  );

  // ---------- environment/* (§9) ----------

  interop(
    'environment/info has the reference shape (also without params and inside initialize); environment/status is ready',
    async (t) => {
      const { c, init } = await session(t);
      const info = (await c.call('environment/info', {})).result;
      const noParams = (await c.call('environment/info')).result;
      const status = answer(await c.call('environment/status', {}));
      const typeMap = (o: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v]));
      const { capabilities, ...rest } = info as Record<string, unknown> & { capabilities: Record<string, unknown> };
      const caps = typeMap(capabilities);
      if (t.kind === 'ours') {
        // Ours announces its extensions (docs: protocol extensions); everything else matches codex.
        for (const k of [
          'processResize',
          'concurrentRequests',
          'execBridgeSandbox',
          'execBridgeBinaryOutput',
          'execBridgeProcessPause',
          'execBridgeProcessCredit',
          'execBridgeSessionTakeover',
          'execBridgeHttpCancel',
          'execBridgeTerminalModes',
        ]) {
          assert.equal(typeof caps[k], 'string', `ours announces ${k}`);
          delete caps[k];
        }
      }
      return {
        types: typeMap(rest),
        caps,
        shell: Object.keys(info.shell).sort(),
        uris: ['cwd', 'userHomeDir', 'tempDir'].map((k) => String(info[k]).startsWith('file:///')),
        home: info.userHomeDir === `file://${SERVER_ENV.HOME}`,
        sameAsInit: JSON.stringify(Object.keys(init.result.environmentInfo).sort()) === JSON.stringify(Object.keys(info).sort()),
        noParamsSameKeys: JSON.stringify(Object.keys(noParams).sort()) === JSON.stringify(Object.keys(info).sort()),
        status,
      };
    },
    (obs) => {
      assert.deepEqual(obs.shell, ['name', 'path']);
      assert.equal(obs.types.executorVersion, 'string');
      assert.deepEqual(obs.uris, [true, true, true]);
      assert.equal(obs.home, true);
      assert.equal(obs.sameAsInit, true);
      assert.equal(obs.noParamsSameKeys, true);
      assert.deepEqual(obs.status, { result: { status: 'ready' } });
    },
  );

  // ---------- sessions and resume (§10) ----------

  interop(
    'resume: -32010 while attached, then the same session after the drop, with a catch-up read',
    async (t) => {
      const { c: a, sessionId } = await session(t);
      await a.call('process/start', startParams('rp', ['bash', '-c', 'for i in $(seq 1 25); do echo tick$i; sleep 0.03; done']));
      await until(`${t.kind}: first ticks`, () => a.output('rp').includes('tick2\n'));
      const b = await connect(t);
      const attached = normalize(t, answer(await b.call('initialize', { clientName: 'b', resumeSessionId: sessionId })), [sessionId]);
      const lastSeenByA = Math.max(
        ...a.received.filter((m) => m.method === 'process/output' && m.params.processId === 'rp').map((m) => m.params.seq as number),
      );
      a.close();
      let resumed: WireMessage | undefined;
      for (let i = 0; i < 100; i++) {
        resumed = await b.call('initialize', { clientName: 'b', resumeSessionId: sessionId });
        if (resumed.error?.code !== -32010) break;
        await sleep(50);
      }
      b.notify('initialized', {});
      // Catch up from what A saw, merging reads and live notifications by seq.
      const bySeq = new Map<number, string>();
      for (const m of a.received)
        if (m.method === 'process/output' && m.params.processId === 'rp' && m.params.seq <= lastSeenByA)
          bySeq.set(m.params.seq, unb64(m.params.chunk));
      let after = lastSeenByA;
      let closed = false;
      for (let i = 0; i < 100 && !closed; i++) {
        const r = await b.call('process/read', { processId: 'rp', afterSeq: after, waitMs: 1000 });
        for (const x of r.result.chunks) bySeq.set(x.seq, unb64(x.chunk));
        after = r.result.nextSeq - 1;
        closed = r.result.closed;
      }
      for (const m of b.received)
        if (m.method === 'process/output' && m.params.processId === 'rp') bySeq.set(m.params.seq, unb64(m.params.chunk));
      const text = [...bySeq.entries()]
        .sort((x, y) => x[0] - y[0])
        .map((e) => e[1])
        .join('');
      return { attached, sameSession: resumed?.result?.sessionId === sessionId, closed, text };
    },
    {
      attached: { error: { code: -32010, message: 'session <session> is already attached to another connection' } },
      sameSession: true,
      closed: true,
      text: Array.from({ length: 25 }, (_, i) => `tick${i + 1}\n`).join(''),
    },
  );

  // ---------- WebSocket auth and HTTP (§1, §11) ----------

  interface HttpAnswer {
    status: number;
    body: string;
  }
  const httpProbe = (t: Target, path: string, headers: Record<string, string>, upgrade: boolean): Promise<HttpAnswer> => {
    const url = new URL(t.server.url);
    return new Promise((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: Number(url.port),
        path,
        headers: upgrade
          ? {
              connection: 'Upgrade',
              upgrade: 'websocket',
              'sec-websocket-version': '13',
              'sec-websocket-key': randomBytes(16).toString('base64'),
              ...headers,
            }
          : headers,
        timeout: 5000,
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: '' });
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.trim() }));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
  };

  interop(
    'auth: 401 texts for a missing/wrong/non-Bearer token; query tokens are ignored; any-case Bearer with spaces works; /readyz needs none',
    async (t) => ({
      none: await httpProbe(t, '/', {}, true),
      query: await httpProbe(t, `/?token=${t.token}`, {}, true),
      wrong: await httpProbe(t, '/', { authorization: 'Bearer wrong' }, true),
      basic: await httpProbe(t, '/', { authorization: `Basic ${t.token}` }, true),
      good: await httpProbe(t, '/', { authorization: `Bearer ${t.token}` }, true),
      spaced: await httpProbe(t, '/', { authorization: `  bearer   ${t.token}  ` }, true),
      readyz: (await httpProbe(t, '/readyz', {}, false)).status,
      plainGet: await httpProbe(t, '/', {}, false),
    }),
    {
      none: { status: 401, body: 'missing websocket bearer token' },
      query: { status: 401, body: 'missing websocket bearer token' },
      wrong: { status: 401, body: 'invalid websocket bearer token' },
      basic: { status: 401, body: 'invalid authorization header' },
      good: { status: 101, body: '' },
      spaced: { status: 101, body: '' },
      readyz: 200,
      plainGet: { status: 400, body: "Connection header did not include 'upgrade'" },
    },
  );

  // Codex 0.171 refuses every Origin (it has no --allow-origin); ours does too unless told otherwise.
  const ORIGINS = ['http://evil.example', 'http://127.0.0.1:8080', 'http://localhost', 'vscode-file://vscode-app', 'null'];
  interop(
    'an upgrade carrying any browser Origin is refused with 403, even with the right token',
    async (t) => {
      const out: Record<string, number> = {};
      for (const origin of ORIGINS) out[origin] = (await httpProbe(t, '/', { authorization: `Bearer ${t.token}`, origin }, true)).status;
      return out;
    },
    Object.fromEntries(ORIGINS.map((o) => [o, 403])),
  );

  test('without auth too (codex without --ws-auth, ours without a token), every browser Origin gets 403', async () => {
    const open = await Promise.all(KINDS.map((k) => startServer(k, [], SERVER_ENV)));
    try {
      for (const server of open) {
        const t: Target = { kind: server.kind, server, token: '', dir: scratch };
        const seen: Record<string, number> = { none: (await httpProbe(t, '/', {}, true)).status };
        for (const origin of ORIGINS) seen[origin] = (await httpProbe(t, '/', { origin }, true)).status;
        assert.deepEqual(seen, { none: 101, ...Object.fromEntries(ORIGINS.map((o) => [o, 403])) }, server.kind);
      }
    } finally {
      await Promise.all(open.map((s) => s.stop()));
    }
  });

  // ---------- deliberate differences: each side's own behaviour ----------

  test('differs on purpose: process/resize and ptySize exist only in ours', async () => {
    const [ours, codex] = await Promise.all([session(targets.ours), session(targets.codex)]);
    for (const [t, { c }] of [
      [targets.ours, ours],
      [targets.codex, codex],
    ] as const) {
      await c.call(
        'process/start',
        startParams('rz', ['bash', '-c', 'stty size; read x; stty size'], { tty: true, ptySize: { cols: 120, rows: 40 } }),
      );
      await until(`${t.kind}: first size`, () => c.output('rz').endsWith('\r\n'));
      const rz = await c.call('process/resize', { processId: 'rz', cols: 100, rows: 30 });
      await c.call('process/write', { processId: 'rz', chunk: b64('go\r'), writeId: '1' });
      await c.processEvents('rz');
      const sizes = c.output('rz').match(/\d+ \d+\r\n/g);
      if (t.kind === 'ours') {
        assert.deepEqual(rz.result, {});
        assert.deepEqual(sizes, ['40 120\r\n', '30 100\r\n']);
      } else {
        assert.deepEqual(rz.error, { code: -32601, message: 'exec-server stub does not implement `process/resize` yet' });
        assert.deepEqual(sizes, ['24 80\r\n', '24 80\r\n']);
      }
    }
  });

  test('differs on purpose: execBridge/terminalModes (the modes of a tty at an output position) exists only in ours', async () => {
    const [ours, codex] = await Promise.all([session(targets.ours), session(targets.codex)]);
    for (const [t, { c }] of [
      [targets.ours, ours],
      [targets.codex, codex],
    ] as const) {
      await c.call('process/start', startParams('tm', ['bash', '-c', "printf '\\033[?1049h\\033[?2004hdrawn'; read x"], { tty: true }));
      await until(`${t.kind}: drawn`, () => c.output('tm').endsWith('drawn'));
      const tm = await c.call('execBridge/terminalModes', { processId: 'tm', afterSeq: 0 });
      await c.call('process/terminate', { processId: 'tm' });
      if (t.kind === 'ours') {
        const fresh = { set: [], reset: [], keypad: false, scrollRegion: null, cursorStyle: 0 };
        const r = tm.result as { at: unknown; now: unknown; exact: boolean };
        assert.deepEqual([r.at, r.now, r.exact], [fresh, { ...fresh, set: [1049, 2004] }, true]);
      } else {
        assert.deepEqual(tm.error, { code: -32601, message: 'exec-server stub does not implement `execBridge/terminalModes` yet' });
      }
    }
  });

  test('differs on purpose: ours answers other calls during a long poll; codex (concurrency 1) queues them', async () => {
    await Promise.all(
      KINDS.map(async (k) => {
        const { c } = await session(targets[k]);
        await c.call('process/start', startParams('cc', ['sleep', '5']));
        // Which answer comes first: an order of events, not a time (a loaded machine stretches both).
        const order: string[] = [];
        const poll = c.call('process/read', { processId: 'cc', waitMs: 1500 }).then((r) => {
          order.push('poll');
          return r;
        });
        await c.call('environment/status', {}).then(() => order.push('status'));
        await poll;
        if (k === 'ours') assert.deepEqual(order, ['status', 'poll'], 'ours answers beside a long poll');
        else assert.deepEqual(order, ['poll', 'status'], 'codex answers after the long poll (expected to wait for it)');
        assert.deepEqual((await poll).result.chunks, []);
        await c.call('process/terminate', { processId: 'cc' });
      }),
    );
  });

  // Last: stops both servers. The protocol notes (§12) say codex leaves children running on SIGTERM;
  // 0.171.0 as installed here kills the child and its process group, as ours does.
  interop(
    'server SIGTERM: the running child and its background grandchild die with the server',
    async (t) => {
      const { c } = await session(t);
      await c.call('process/start', startParams('orphan', ['bash', '-c', 'sleep 60 & echo $$ $!; wait']));
      await until(`${t.kind}: pids`, () => /^\d+ \d+\n$/.test(c.output('orphan')));
      const pids = c.output('orphan').trim().split(' ').map(Number);
      try {
        const aliveBefore = pids.every(alive);
        await t.server.stop();
        await until(`${t.kind}: children gone after SIGTERM`, () => !pids.some(alive), 3000).catch(() => undefined);
        return { aliveBefore, childDead: !alive(pids[0]!), grandchildDead: !alive(pids[1]!) };
      } finally {
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    },
    { aliveBefore: true, childDead: true, grandchildDead: true },
  );
});

/**
 * fs/* with a `sandbox` field (security issue 9): codex runs such a call in a sandboxed helper,
 * ours checks the paths against the same layout. Each server gets its own identical tree; the
 * policy writes only to `ws` (explicit path entries, no /tmp), denies `ws/denied` and `out/s.txt`.
 */
describe('interop: fs/* with a sandbox field, same answers (code and message) as codex', () => {
  const servers = {} as Record<Kind, { server: StartedServer; client: RawClient; root: string }>;
  const scratch = mkdtempSync(join(tmpdir(), 'eb-fs-sandbox-'));

  before(async () => {
    await Promise.all(
      KINDS.map(async (kind) => {
        const root = mkdtempSync(join(scratch, `${kind}-`));
        for (const d of ['ws/.git', 'ws/sub', 'ws/denied', 'out']) mkdirSync(join(root, d), { recursive: true });
        writeFileSync(join(root, 'ws/a.txt'), 'in\n');
        writeFileSync(join(root, 'ws/.git/config'), 'cfg\n');
        writeFileSync(join(root, 'ws/denied/x'), 'denied\n');
        writeFileSync(join(root, 'out/s.txt'), 'secret\n');
        writeFileSync(join(root, 'out/o.txt'), 'outside\n');
        symlinkSync(join(root, 'out'), join(root, 'ws/linkout'));
        symlinkSync(join(root, 'out/o.txt'), join(root, 'ws/linkfile'));
        symlinkSync('../out/new.txt', join(root, 'ws/dangling'));
        const server = await startServer(kind, [], SERVER_ENV);
        const { client } = await RawClient.session(server.url);
        servers[kind] = { server, client, root };
      }),
    );
  });

  after(async () => {
    for (const k of KINDS) {
      servers[k]?.client.close();
      await servers[k]?.server.stop();
    }
    rmSync(scratch, { recursive: true, force: true });
    rmSync('/etc/eb-fs-sandbox-probe', { force: true }); // only there if a server failed to refuse it
  });

  const uri = (root: string, rel: string) => `file://${root}${rel ? `/${rel}` : ''}`;
  /** Root readable, `ws` writable (its .git a carve-out), `ws/denied` and `out/s.txt` denied. */
  const policy = (root: string) => ({
    cwd: uri(root, 'ws'),
    windowsSandboxLevel: 'disabled',
    permissions: {
      type: 'managed',
      network: 'restricted',
      file_system: {
        type: 'restricted',
        entries: [
          { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
          { path: { type: 'path', path: uri(root, 'ws') }, access: 'write' },
          { path: { type: 'path', path: uri(root, 'ws/denied') }, access: 'deny' },
          { path: { type: 'path', path: uri(root, 'out/s.txt') }, access: 'deny' },
        ],
      },
    },
  });
  type FsStep = [method: string, params: (root: string) => Record<string, unknown>];
  const d = b64('new\n');
  const steps: FsStep[] = [
    // The issue's case: /etc under read-only and workspace-write.
    [
      'fs/writeFile',
      (r) => ({
        path: 'file:///etc/eb-fs-sandbox-probe',
        dataBase64: d,
        sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(r, 'ws') }),
      }),
    ],
    [
      'fs/writeFile',
      (r) => ({
        path: 'file:///etc/eb-fs-sandbox-probe',
        dataBase64: d,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(r, 'ws') }),
      }),
    ],
    [
      'fs/writeFile',
      (r) => ({ path: uri(r, 'ws/ro.txt'), dataBase64: d, sandbox: sandboxForPolicy({ policy: 'read-only', cwd: uri(r, 'ws') }) }),
    ],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/new.txt'), dataBase64: d, sandbox: policy(r) })],
    ['fs/readFile', (r) => ({ path: uri(r, 'ws/new.txt'), sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'out/new.txt'), dataBase64: d, sandbox: policy(r) })],
    // Carve-out, symlinks out of the root (directory, file, dangling), `..` and %2e%2e.
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/.git/config'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/.git/hook'), dataBase64: d, sandbox: policy(r) })],
    ['fs/remove', (r) => ({ path: uri(r, 'ws/.git'), sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/linkout/new.txt'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/linkfile'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/dangling'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/../out/dots.txt'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/sub/%2e%2e/%2e%2e/out/dots.txt'), dataBase64: d, sandbox: policy(r) })],
    // Missing parents: ENOENT first, inside and outside.
    ['fs/writeFile', (r) => ({ path: uri(r, 'ws/nodir/x'), dataBase64: d, sandbox: policy(r) })],
    ['fs/writeFile', (r) => ({ path: uri(r, 'out/nodir/x'), dataBase64: d, sandbox: policy(r) })],
    ['fs/createDirectory', (r) => ({ path: uri(r, 'ws/c1/c2'), sandbox: policy(r) })],
    ['fs/createDirectory', (r) => ({ path: uri(r, 'out/c1/c2'), sandbox: policy(r) })],
    ['fs/createDirectory', (r) => ({ path: uri(r, 'out'), sandbox: policy(r) })],
    ['fs/createDirectory', (r) => ({ path: uri(r, 'out'), recursive: false, sandbox: policy(r) })],
    ['fs/remove', (r) => ({ path: uri(r, 'out/o.txt'), sandbox: policy(r) })],
    ['fs/remove', (r) => ({ path: uri(r, 'out/s.txt'), sandbox: policy(r) })],
    ['fs/remove', (r) => ({ path: uri(r, 'out/missing'), sandbox: policy(r) })],
    ['fs/remove', (r) => ({ path: uri(r, 'out/missing'), force: false, sandbox: policy(r) })],
    ['fs/copy', (r) => ({ sourcePath: uri(r, 'ws/a.txt'), destinationPath: uri(r, 'out/c.txt'), recursive: false, sandbox: policy(r) })],
    ['fs/copy', (r) => ({ sourcePath: uri(r, 'out/s.txt'), destinationPath: uri(r, 'ws/c.txt'), recursive: false, sandbox: policy(r) })],
    [
      'fs/copy',
      (r) => ({ sourcePath: uri(r, 'ws/a.txt'), destinationPath: uri(r, 'ws/.git/c.txt'), recursive: false, sandbox: policy(r) }),
    ],
    ['fs/open', (r) => ({ handleId: 'w1', path: uri(r, 'out/w.txt'), mode: 'replace', sandbox: policy(r) })],
    // Denied reads.
    ['fs/readFile', (r) => ({ path: uri(r, 'out/s.txt'), sandbox: policy(r) })],
    ['fs/readFile', (r) => ({ path: uri(r, 'ws/denied/x'), sandbox: policy(r) })],
    ['fs/readDirectory', (r) => ({ path: uri(r, 'ws/denied'), sandbox: policy(r) })],
    ['fs/canonicalize', (r) => ({ path: uri(r, 'ws/denied/x'), sandbox: policy(r) })],
    ['fs/open', (r) => ({ handleId: 'r1', path: uri(r, 'ws/denied/x'), sandbox: policy(r) })],
    ['fs/readFile', (r) => ({ path: uri(r, 'out/o.txt'), sandbox: policy(r) })],
    // Invalid sandbox values.
    ['fs/readFile', (r) => ({ path: uri(r, 'ws/a.txt'), sandbox: {} })],
    [
      'fs/readFile',
      (r) => ({
        path: uri(r, 'ws/a.txt'),
        sandbox: {
          ...policy(r),
          cwd: undefined,
          permissions: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(r, 'ws') }).permissions,
        },
      }),
    ],
  ];

  test('writes outside writable roots, carve-outs, symlinks out, dot tricks, missing parents, denied reads', async () => {
    const seen = {} as Record<Kind, unknown[]>;
    await Promise.all(
      KINDS.map(async (kind) => {
        const { client, root } = servers[kind];
        const out: unknown[] = [];
        for (const [method, params] of steps) {
          const m = await client.call(method, params(root));
          out.push(JSON.parse(JSON.stringify(answer(m)).split(root).join('<root>')));
        }
        seen[kind] = out;
      }),
    );
    const mismatches = steps.flatMap(([method], i) =>
      isDeepStrictEqual(seen.ours[i], seen.codex[i])
        ? []
        : [`#${i} ${method}\n  ours:  ${JSON.stringify(seen.ours[i])}\n  codex: ${JSON.stringify(seen.codex[i])}`],
    );
    assert.deepEqual(mismatches, [], mismatches.join('\n'));
    // Not a vacuous agreement: codex refused the writes it should refuse.
    assert.deepEqual(seen.codex[0], { error: { code: -32603, message: 'Read-only file system (os error 30)' } });
    assert.deepEqual(seen.codex[3], { result: {} });
    assert.deepEqual(seen.codex[28], { error: { code: -32600, message: 'Permission denied (os error 13)' } });
    // And nothing was written outside `ws` on either side.
    for (const kind of KINDS) {
      const { root } = servers[kind];
      assert.equal(existsSync('/etc/eb-fs-sandbox-probe'), false);
      assert.deepEqual(readdirSync(join(root, 'out')).sort(), ['o.txt', 's.txt'], kind);
      assert.equal(readFileSync(join(root, 'out/o.txt'), 'utf8'), 'outside\n', kind);
      assert.deepEqual(readdirSync(join(root, 'ws/.git')), ['config'], kind);
    }
  });
});
