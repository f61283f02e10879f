/**
 * What a reopened terminal replays (core/terminalReplayRange.ts) and Open Full Output's copy
 * (core/terminalFullOutput.ts) against our real exec-server in process (spooling, capped, and a
 * connection without the spool), through a real client and `TerminalRun`. The cut as pure logic is
 * test/unit/core/terminalReplayRange.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ExecServerClient, ProcessHandle } from '../../../src/client';
import { copyFullOutput, fullOutputNote } from '../../../src/core/terminalFullOutput';
import { attachNewest, mib } from '../../../src/core/terminalReplayRange';
import { TerminalRun, type RunSpec } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import { connectInProcess } from '../../helpers/inProcessServer';
import { within } from '../../helpers/procs';
import { terminalText } from '../../helpers/terminalText';

const MiB = 1024 * 1024;
const WAIT_MS = 20_000;

let dir: string;
let server: ExecServer;
let capped: ExecServer;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-replay-range-'));
  server = new ExecServer({ sandboxPrewarmMs: 0 });
  capped = new ExecServer({ sandboxPrewarmMs: 0, spoolProcessBytes: 2 * MiB });
});
after(async () => {
  await server.close();
  await capped.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(on: ExecServer, resumeSessionId?: string, outputSpool = true): Promise<ExecServerClient> {
  return connectInProcess(on, { outputSpool, ...(resumeSessionId ? { resumeSessionId } : {}) });
}

/** Line k: k in 15 digits and "\n" (16 bytes: the byte at any offset is known). */
const line = (k: number) => String(k).padStart(15, '0') + '\n';
const LINE = 16;

function printed(h: ProcessHandle, pattern: RegExp): Promise<void> {
  let tail = '';
  return new Promise((resolve) => {
    h.onEvent((e) => {
      if (e.type !== 'output') return;
      tail = (tail + e.data.toString()).slice(-256);
      if (pattern.test(tail)) resolve();
    });
  });
}

/**
 * `lines` numbered lines (then a marker line), printed while a first client is attached, which then
 * goes away; the process waits on a gate, then prints `late` and ends. Returns the second client.
 */
async function detachedPrinter(on: ExecServer, name: string, lines: number, o: { outputSpool?: boolean; prompt?: string } = {}) {
  const first = await connect(on, undefined, o.outputSpool ?? true);
  const gate = join(dir, name);
  const p = await first.startProcess({
    argv: [
      'bash',
      '-c',
      `mkfifo ${gate}; seq -f '%015.0f' 0 ${lines - 1}; printf '${o.prompt ?? 'MARK\\n'}'; read -r _ < ${gate}; echo late`,
    ],
    cwd: dir,
    tty: false,
  });
  await printed(p, o.prompt ? /\$ $/ : /MARK\n/);
  first.dispose('window reload');
  const second = await connect(on, first.sessionId, o.outputSpool ?? true);
  return { client: second, processId: p.processId, go: () => writeFileSync(gate, 'go\n') };
}

const spec = (): RunSpec => ({
  kind: 'command',
  executor: 'local',
  commandLine: 'print',
  argv: [],
  cwd: dir,
  tty: false,
  pipeStdin: false,
  sandboxLabel: 'none',
});

/**
 * A reopened terminal of `rows` rows over `client`'s process, its output bytes (as given) and its
 * notices. `calls`: what `attachNewest` asked the client, in order (`process/read`, `attachProcess`).
 */
function reopen(
  client: ExecServerClient,
  processId: string,
  o: { scrollback: unknown; rows: number; maxBytes?: number; calls?: string[] },
) {
  const calls = o.calls;
  const via: Pick<ExecServerClient, 'call' | 'attachProcess' | 'capabilities'> = calls
    ? {
        capabilities: client.capabilities,
        call: ((method: string, params: unknown) => {
          calls.push(method);
          return (client.call as (m: string, p: unknown) => Promise<unknown>)(method, params);
        }) as ExecServerClient['call'],
        attachProcess: (id, a) => {
          calls.push('attachProcess');
          return client.attachProcess(id, a);
        },
      }
    : client;
  const run = new TerminalRun(spec(), {
    start: () => Promise.reject(new Error('a reopened terminal starts nothing')),
    attach: ({ rows }) =>
      attachNewest(via, processId, {
        tty: false,
        stdinWritable: false,
        creditWindow: 256 * 1024,
        scrollback: o.scrollback,
        rows,
        ...(o.maxBytes !== undefined ? { maxBytes: o.maxBytes } : {}),
      }),
    approve: () => Promise.reject(new Error('no approvals here')),
    beforeRun: () => Promise.reject(new Error('a reopened terminal asks nothing')),
    onConnectionState: client.onDidChangeState,
    canResize: () => false,
  });
  const given: Buffer[] = [];
  run.onProcessEvent(({ event }) => {
    if (event.type === 'output') given.push(event.data);
  });
  const { text, until } = terminalText(run, WAIT_MS);
  run.model.open({ cols: 80, rows: o.rows });
  run.start();
  return { run, text, until, output: () => Buffer.concat(given).toString('latin1') };
}

const notice = (text: string) => /↻ reopened after the window reload[^\n]*/.exec(text)?.[0] ?? '';

describe('a reopened terminal gets the newest lines it can hold', () => {
  test('3 MiB spooled: exactly scrollback + rows lines, ending at the last, then live output, nothing twice or skipped', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(server, 'g1', N);
    try {
      const t = reopen(client, processId, { scrollback: 100, rows: 24 });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      // 124 lines: the marker and the 123 numbered lines before it.
      assert.equal(t.output(), Array.from({ length: 123 }, (_, i) => line(N - 123 + i)).join('') + 'MARK\nlate\n');
      const held = N * LINE + 'MARK\n'.length;
      const shown = 123 * LINE + 'MARK\n'.length;
      assert.equal(
        notice(t.text()),
        `↻ reopened after the window reload; ${mib(held - shown)} of earlier output is not shown here (more than the terminal's 100 lines of scrollback): Exec Bridge: Open Full Output`,
      );
      assert.equal(t.run.model.exitCode, 0);
    } finally {
      client.dispose();
    }
  });

  test('a prompt without its newline is shown on top of the lines; a short output is replayed whole without a notice', async () => {
    const { client, processId, go } = await detachedPrinter(server, 'g2', 3000, { prompt: '$ ' });
    try {
      const t = reopen(client, processId, { scrollback: 10, rows: 5 });
      await t.until(/\$ $/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.equal(t.output(), Array.from({ length: 15 }, (_, i) => line(3000 - 15 + i)).join('') + '$ late\n');
    } finally {
      client.dispose();
    }
    const short = await detachedPrinter(server, 'g3', 20);
    try {
      const t = reopen(short.client, short.processId, { scrollback: 1000, rows: 24 });
      await t.until(/MARK\n/);
      short.go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.equal(t.output(), Array.from({ length: 20 }, (_, i) => line(i)).join('') + 'MARK\nlate\n');
      assert.equal(notice(t.text()), '↻ reopened after the window reload');
    } finally {
      short.client.dispose();
    }
  });

  test('scrollback larger than the byte cap: the newest maxBytes, from a line boundary', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(server, 'g4', N);
    try {
      const t = reopen(client, processId, { scrollback: 1_000_000, rows: 24, maxBytes: 64 * 1024 });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      const out = t.output();
      // Within 64 KiB of the end at a line boundary: 4095 whole lines and the marker.
      assert.equal(out, Array.from({ length: 4095 }, (_, i) => line(N - 4095 + i)).join('') + 'MARK\nlate\n');
      assert.match(notice(t.text()), /not shown here \(the terminal is given at most the newest 64 KiB\): Exec Bridge: Open Full Output$/);
    } finally {
      client.dispose();
    }
  });

  test('a spool cap: the notice says both what is not shown and what was dropped', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(capped, 'g5', N);
    try {
      // What the cap dropped (whole events, ~16 KiB granularity): the process waits on its gate meanwhile.
      const end = await client.call('process/read', { processId, afterSeq: Number.MAX_SAFE_INTEGER });
      const dropped = end.execBridgeDroppedBytes!;
      assert.ok(dropped > 0.9 * MiB && dropped < 1.2 * MiB, `${dropped} dropped`);
      const t = reopen(client, processId, { scrollback: 50, rows: 10 });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.equal(t.output(), Array.from({ length: 59 }, (_, i) => line(N - 59 + i)).join('') + 'MARK\nlate\n');
      const held = N * LINE + 'MARK\n'.length - dropped;
      const shown = 59 * LINE + 'MARK\n'.length;
      assert.equal(
        notice(t.text()),
        `↻ reopened after the window reload; ${mib(held - shown)} of earlier output is not shown here (more than the terminal's 50 lines of scrollback): Exec Bridge: Open Full Output; ${mib(dropped)} before that was dropped (spool cap 2 MiB)`,
      );
    } finally {
      client.dispose();
    }
  });

  test('a process held to a credit window (as a terminal starts it): what is not replayed is acknowledged, so it prints on live', async () => {
    const first = await connect(server);
    const gate0 = join(dir, 'c0');
    const gate = join(dir, 'c1');
    const done = join(dir, 'c-done');
    const N = (3 * MiB) / LINE;
    const p = await first.startProcess({
      argv: [
        'bash',
        '-c',
        `mkfifo ${gate0} ${gate}; echo armed; read -r _ < ${gate0}; seq -f '%015.0f' 0 ${N - 1}; touch ${done}; read -r _ < ${gate}; seq -f '%015.0f' ${N} ${N + 99999}`,
      ],
      cwd: dir,
      tty: false,
      creditWindow: 256 * 1024,
    });
    await printed(p, /armed\n/);
    first.dispose('window reload');
    // Detached: the credit window does not hold it, the spool takes 3 MiB.
    writeFileSync(gate0, 'go\n');
    for (let i = 0; i < 400 && !existsSync(done); i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(existsSync(done), 'the detached command printed everything');
    const client = await connect(server, first.sessionId);
    try {
      const t = reopen(client, p.processId, { scrollback: 100, rows: 24 });
      await t.until(new RegExp(`${line(N - 1)}`));
      // 1.6 MiB more, live: more than the credit window, so it is acknowledged as the terminal takes it.
      writeFileSync(gate, 'go\n');
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.equal(t.run.model.exitCode, 0);
      const out = t.output();
      const lines = out.split('\n').slice(0, -1);
      assert.equal(lines.at(-1), line(N + 99999).slice(0, -1), 'the live output to its last line');
      const firstShown = Number(lines[0]);
      assert.ok(firstShown >= N - 124 && firstShown < N, `the replay started at line ${firstShown}`);
      assert.equal(
        out,
        Array.from({ length: N + 100000 - firstShown }, (_, i) => line(firstShown + i)).join(''),
        'every line once, in order',
      );
    } finally {
      client.dispose();
    }
  });

  test('a connection without the spool (codex-style): the newest lines of the 1 MiB window, and the old note', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(server, 'g6', N, { outputSpool: false });
    try {
      const t = reopen(client, processId, { scrollback: 30, rows: 10 });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.equal(t.output(), Array.from({ length: 39 }, (_, i) => line(N - 39 + i)).join('') + 'MARK\nlate\n');
      assert.match(notice(t.text()), /not shown here .*; the executor no longer holds its oldest output \(it keeps the newest 1 MiB\)$/);
    } finally {
      client.dispose();
    }
  });
});

describe('execBridge.reopenedTerminalReplayMiB: more than the default', () => {
  const N = (3 * MiB) / LINE;
  /** Everything printed: the numbered lines, then the marker. */
  const all = () => Array.from({ length: N }, (_, i) => line(i)).join('') + 'MARK\n';

  test('everything (0 → Infinity): what the cap kept from its oldest byte, whatever the scrollback; nothing read before the replay', async () => {
    const { client, processId, go } = await detachedPrinter(capped, 'g7', N);
    try {
      const end = await client.call('process/read', { processId, afterSeq: Number.MAX_SAFE_INTEGER });
      const dropped = end.execBridgeDroppedBytes!;
      assert.ok(dropped > 0.9 * MiB && dropped < 1.2 * MiB, `${dropped} dropped`);
      const calls: string[] = [];
      const t = reopen(client, processId, { scrollback: 50, rows: 10, maxBytes: Number.POSITIVE_INFINITY, calls });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      // Not a byte looked at first: the attach replays from seq 0, page by page as the terminal takes it.
      assert.deepEqual(calls, ['attachProcess']);
      assert.ok(t.output() === all().slice(dropped) + 'late\n', `given ${t.output().length} bytes from ${t.output().slice(0, 16)}`);
      assert.equal(notice(t.text()), `↻ reopened after the window reload; ${mib(dropped)} of earlier output was dropped (spool cap 2 MiB)`);
      assert.equal(t.run.replay?.limit, 'none');
      assert.equal(t.run.replay?.maxBytes, Number.POSITIVE_INFINITY);
      assert.equal(t.run.model.exitCode, 0);
    } finally {
      client.dispose();
    }
  });

  test('everything on a process the executor holds whole: from its first byte, the notice only says it reopened', async () => {
    const { client, processId, go } = await detachedPrinter(server, 'g8', N);
    try {
      const t = reopen(client, processId, { scrollback: 50, rows: 10, maxBytes: Number.POSITIVE_INFINITY });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.ok(t.output() === all() + 'late\n', `given ${t.output().length} bytes from ${t.output().slice(0, 16)}`);
      assert.equal(notice(t.text()), '↻ reopened after the window reload');
    } finally {
      client.dispose();
    }
  });

  test('everything without the spool (codex-style): the 1 MiB window from its oldest event, and the note that older output is gone', async () => {
    const { client, processId, go } = await detachedPrinter(server, 'g10', N, { outputSpool: false });
    try {
      const t = reopen(client, processId, { scrollback: 50, rows: 10, maxBytes: Number.POSITIVE_INFINITY });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      const out = t.output();
      assert.ok(out.length > 0.9 * MiB && out.length <= MiB + 'late\n'.length, `${out.length} bytes given`);
      assert.ok(all().endsWith(out.slice(0, -'late\n'.length)) && out.endsWith('MARK\nlate\n'), 'the newest bytes held, in order');
      assert.equal(
        notice(t.text()),
        '↻ reopened after the window reload; the executor no longer holds its oldest output (it keeps the newest 1 MiB)',
      );
    } finally {
      client.dispose();
    }
  });

  test('a cap above what is held and a scrollback that holds it: all of it from the oldest held byte, as everything', async () => {
    const { client, processId, go } = await detachedPrinter(capped, 'g9', N);
    try {
      const end = await client.call('process/read', { processId, afterSeq: Number.MAX_SAFE_INTEGER });
      const dropped = end.execBridgeDroppedBytes!;
      const t = reopen(client, processId, { scrollback: 1_000_000, rows: 10, maxBytes: 64 * MiB });
      await t.until(/MARK\n/);
      go();
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.ok(t.output() === all().slice(dropped) + 'late\n', `given ${t.output().length} bytes from ${t.output().slice(0, 16)}`);
      assert.equal(notice(t.text()), `↻ reopened after the window reload; ${mib(dropped)} of earlier output was dropped (spool cap 2 MiB)`);
      assert.equal(t.run.replay?.limit, 'none');
    } finally {
      client.dispose();
    }
  });
});

describe('Open Full Output: every byte the executor holds', () => {
  /** The hash of what the printer printed (N lines, then `tail`) from byte `offset` on. */
  const digestFrom = (n: number, tail: string, offset = 0) => {
    const all = Buffer.from(Array.from({ length: n }, (_, k) => line(k)).join('') + tail, 'latin1');
    return createHash('sha256').update(all.subarray(offset)).digest('hex');
  };

  async function copy(client: ExecServerClient, processId: string, signal?: AbortSignal) {
    const h = createHash('sha256');
    let bytes = 0;
    let progressCalls = 0;
    const r = await copyFullOutput(
      (afterSeq, maxBytes) => client.call('process/read', { processId, afterSeq, ...(maxBytes !== undefined ? { maxBytes } : {}) }),
      async (data) => {
        h.update(data);
        bytes += data.length;
      },
      { ...(signal ? { signal } : {}), onProgress: () => progressCalls++ },
    );
    return { r, digest: h.digest('hex'), bytes, progressCalls };
  }

  test('3 MiB spooled, process still running: the copy is all of it, byte-exact, in pages', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(server, 'f1', N);
    try {
      const c = await copy(client, processId);
      assert.equal(c.bytes, N * LINE + 5);
      assert.equal(c.digest, digestFrom(N, 'MARK\n'));
      assert.deepEqual({ ...c.r, bytes: 0 }, { bytes: 0, spooled: true, droppedBytes: 0, evicted: false, gap: false, cancelled: false });
      assert.ok(c.progressCalls >= 3, `${c.progressCalls} progress reports`);
      assert.equal(fullOutputNote(c.r), undefined);
      go();
    } finally {
      client.dispose();
    }
  });

  test('an ended process over a spool cap: what the cap kept, and the note says what it dropped', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(capped, 'f2', N);
    try {
      go();
      // The process ends: its output is still there to copy.
      for (let i = 0; i < 100; i++) {
        const r = await client.call('process/read', { processId, afterSeq: Number.MAX_SAFE_INTEGER, waitMs: 200 });
        if (r.closed) break;
      }
      const c = await copy(client, processId);
      const dropped = c.r.droppedBytes!;
      assert.ok(dropped > 0.9 * MiB && dropped < 1.1 * MiB, `${dropped} dropped`);
      assert.equal(c.bytes + dropped, N * LINE + 'MARK\nlate\n'.length);
      assert.equal(c.digest, digestFrom(N, 'MARK\nlate\n', dropped));
      assert.match(fullOutputNote(c.r) ?? '', /^The executor's spool cap had dropped the oldest [\d.]+ MiB/);
    } finally {
      client.dispose();
    }
  });

  test('without the spool: the window only, said so; cancel stops at once', async () => {
    const N = (3 * MiB) / LINE;
    const { client, processId, go } = await detachedPrinter(server, 'f3', N, { outputSpool: false });
    try {
      const c = await copy(client, processId);
      assert.equal(c.r.spooled, false);
      assert.equal(c.r.evicted, true);
      assert.ok(c.bytes > 0 && c.bytes <= MiB, `${c.bytes} bytes`);
      assert.match(fullOutputNote(c.r) ?? '', /keeps only the newest 1 MiB/);
      go();
    } finally {
      client.dispose();
    }
    const again = await detachedPrinter(server, 'f4', N);
    try {
      const abort = new AbortController();
      abort.abort();
      const c = await copy(again.client, again.processId, abort.signal);
      assert.equal(c.r.cancelled, true);
      assert.equal(c.bytes, 0);
      assert.match(fullOutputNote(c.r) ?? '', /^Copy cancelled/);
      again.go();
    } finally {
      again.client.dispose();
    }
  });
});
