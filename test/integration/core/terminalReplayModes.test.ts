/**
 * A reopened tty terminal whose replay skips output (issue 27): against our real exec-server in
 * process and real PTY processes, through a real client, `attachNewest` as the extension uses it and
 * `TerminalRun`. The terminal is first given the modes the skipped output had set, so it ends in the
 * state a replay from the first byte would have left it in; a program on the alternate screen is made
 * to redraw (SIGWINCH), a program that is not is left alone. The tracker itself is
 * test/unit/server/terminalModes.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, websocketConnector, type ProcessHandle } from '../../../src/client';
import { attachNewest } from '../../../src/core/terminalReplayRange';
import { TerminalRun, type RunSpec } from '../../../src/core/terminalRun';
import { ExecServer } from '../../../src/server/execServer';
import { TerminalModes } from '../../../src/server/terminalModes';
import { connectInProcess } from '../../helpers/inProcessServer';
import { startExecServer, type ExecServerProcess } from '../../helpers/servers';
import { within } from '../../helpers/procs';
import { terminalText } from '../../helpers/terminalText';
import { recording } from '../clientHelpers';

const WAIT_MS = 30_000;
const ROWS = 24;
const COLS = 80;

let dir: string;
let server: ExecServer;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-bridge-replay-modes-'));
  server = new ExecServer({ sandboxPrewarmMs: 0 });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A program in a PTY: prints `enter`, then `mib` MiB of numbered lines, then `READY`; on each
 * SIGWINCH it redraws (clears, homes, says so with its size); a line `q` makes it print `leave`,
 * how many SIGWINCHes it had, and exit.
 */
const PROGRAM = `
const [enter, leave, mib] = [process.argv[1], process.argv[2], Number(process.argv[3])];
const out = process.stdout;
let winches = 0;
out.on('resize', () => { winches++; out.write('\\x1b[H\\x1b[2JREDRAWN ' + out.columns + 'x' + out.rows + '\\n'); });
out.write(enter);
const lines = [];
for (let i = 0; i < (mib * 1024 * 1024) / 64; i++) lines.push(String(i).padStart(63, '0'));
let i = 0;
(function more() {
  while (i < lines.length) { const ok = out.write(lines.slice(i, i + 256).join('\\n') + '\\n'); i += 256; if (!ok) return out.once('drain', more); }
  out.write('READY\\n');
})();
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { if (d.includes('q')) { out.write(leave + 'WINCHES ' + winches + '\\nBYE\\n'); setTimeout(() => process.exit(0), 50); } });
`;

/** `PROGRAM` started by a first client, which goes away once it printed READY; the second client (the reloaded window). */
async function detachedProgram(
  enter: string,
  leave: string,
  mib: number,
  connect = (resumeSessionId?: string) => connectInProcess(server, { outputSpool: true, ...(resumeSessionId ? { resumeSessionId } : {}) }),
) {
  const first = await connect();
  const p = await first.startProcess({
    argv: [process.execPath, '-e', PROGRAM, enter, leave, String(mib)],
    cwd: dir,
    tty: true,
    ptySize: { cols: COLS, rows: ROWS },
  });
  await printed(p, /READY\r?\n/);
  first.dispose('window reload');
  const second = await connect(first.sessionId);
  return { client: second, processId: p.processId };
}

function printed(h: ProcessHandle, pattern: RegExp): Promise<void> {
  let tail = '';
  return within(
    new Promise((resolve) => {
      h.onEvent((e) => {
        if (e.type !== 'output') return;
        tail = (tail + e.data.toString('latin1')).slice(-256);
        if (pattern.test(tail)) resolve();
      });
    }),
    `${pattern} from the program`,
    WAIT_MS,
  );
}

const spec = (): RunSpec => ({
  kind: 'shell',
  executor: 'local',
  commandLine: 'program',
  argv: [],
  cwd: dir,
  tty: true,
  pipeStdin: false,
  sandboxLabel: 'none',
});

/** A reopened terminal of ROWS rows over the process, as the extension reopens it; `raw()`: everything written to it. */
function reopen(client: ExecServerClient, processId: string, o: { sized?: boolean } = {}) {
  const run = new TerminalRun(spec(), {
    start: () => Promise.reject(new Error('a reopened terminal starts nothing')),
    attach: ({ rows }) =>
      attachNewest(client, processId, { tty: true, stdinWritable: true, creditWindow: 256 * 1024, scrollback: 1000, rows }),
    approve: () => Promise.reject(new Error('no approvals here')),
    beforeRun: () => Promise.reject(new Error('a reopened terminal asks nothing')),
    onConnectionState: client.onDidChangeState,
    canResize: () => client.capabilities.processResize === true,
  });
  let raw = '';
  run.model.onWrite((t) => (raw += t));
  const { text, until } = terminalText(run, WAIT_MS);
  // A terminal that opens hidden gets its size later (VS Code's setDimensions).
  run.model.open(o.sized === false ? undefined : { cols: COLS, rows: ROWS });
  run.start();
  return { run, text, until, raw: () => raw };
}

/** The modes a terminal given `text` ends in (the server's tracker, fed it as one output). */
function modesOf(text: string) {
  const t = new TerminalModes();
  t.feed(1, Buffer.from(text, 'utf8'));
  return t.query(Number.MAX_SAFE_INTEGER - 1, 0).now;
}

const FULL_SCREEN = '\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1h\x1b=\x1b[?25l';
const FULL_SCREEN_OFF = '\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[?25h\x1b[?1049l';

describe('a reopened tty terminal comes back in the modes its program left it in', () => {
  test('a full-screen program (alternate screen, mouse, bracketed paste, cursor keys, keypad, hidden cursor) and 3 MiB: the modes before the replay, then a whole redraw', async () => {
    const { client, processId } = await detachedProgram(FULL_SCREEN, FULL_SCREEN_OFF, 3);
    try {
      const t = reopen(client, processId);
      await t.until(/READY\n/);
      // The replay was cut: the modes were set 3 MiB before it.
      assert.equal(t.run.replay?.limit, 'lines');
      assert.ok(t.run.replay!.afterSeq > 1, `the replay starts after seq ${t.run.replay!.afterSeq}`);
      // The reopened notice, then the modes (nothing shown), then the replay's first line.
      const text = t.text();
      const notice = /↻ reopened after the window reload[^\n]*\n/.exec(text);
      assert.ok(notice, text.slice(0, 500));
      const after = text.slice(notice.index + notice[0].length);
      const prefix = '\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?1h\x1b[?2004h\x1b[?25l\x1b=';
      assert.equal(after.slice(0, prefix.length), prefix);
      assert.match(after.slice(prefix.length), /^[0-9]{63}\n/);
      // As a replay from the first byte would: the same modes at the end.
      assert.deepEqual(modesOf(t.raw()), {
        set: [1049, 1000, 1006, 1, 2004],
        reset: [25],
        keypad: true,
        scrollRegion: null,
        cursorStyle: 0,
      });
      // The size nudge: the program redraws at the terminal's size, after the replay.
      await t.until(new RegExp(`REDRAWN ${COLS}x${ROWS}\\n`));
      assert.ok(t.text().lastIndexOf(`REDRAWN ${COLS}x${ROWS}`) > t.text().indexOf('READY'));
      await t.run.process!.write('q\n');
      await t.until(/BYE\n/);
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.match(t.text(), /WINCHES [12]\n/);
      assert.deepEqual(modesOf(t.raw()), { set: [], reset: [], keypad: false, scrollRegion: null, cursorStyle: 0 });
    } finally {
      client.dispose();
    }
  });

  test('a program at a prompt (bracketed paste only, the normal screen): its mode restored, no size nudge, no redraw', async () => {
    const { client, processId } = await detachedProgram('\x1b[?2004h', '', 3);
    try {
      const t = reopen(client, processId);
      await t.until(/READY\n/);
      assert.ok((t.run.replay?.afterSeq ?? 0) > 1);
      const after = t.text().slice(t.text().indexOf('↻ reopened'));
      assert.match(after, /^↻ reopened after the window reload[^\n]*\n\x1b\[\?2004h0+[0-9]+\n/);
      assert.deepEqual(modesOf(t.raw()).set, [2004]);
      await t.run.process!.write('q\n');
      await t.until(/BYE\n/);
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.match(t.text(), /WINCHES 0\n/);
      assert.doesNotMatch(t.text(), /REDRAWN/);
    } finally {
      client.dispose();
    }
  });

  test('a terminal that opened without a size: the nudge comes with the first size it is given (the size the PTY has already)', async () => {
    const { client, processId } = await detachedProgram(FULL_SCREEN, FULL_SCREEN_OFF, 3);
    try {
      const t = reopen(client, processId, { sized: false });
      await t.until(/READY\n/);
      assert.ok(t.run.replay!.afterSeq > 1);
      assert.doesNotMatch(t.text(), /REDRAWN/);
      t.run.model.setDimensions(COLS, ROWS);
      await t.until(new RegExp(`REDRAWN ${COLS}x${ROWS}\\n`));
      assert.match(t.text(), new RegExp(`READY\\n[^]*REDRAWN ${COLS}x${ROWS}\\n$`));
      await t.run.process!.write('q\n');
      await within(t.run.done, 'the run to end', WAIT_MS);
    } finally {
      client.dispose();
    }
  });

  test('a short output is replayed from its first byte: nothing is added before it', async () => {
    const { client, processId } = await detachedProgram(FULL_SCREEN, FULL_SCREEN_OFF, 0.01);
    try {
      const t = reopen(client, processId);
      await t.until(/READY\n/);
      assert.equal(t.run.replay?.afterSeq, 0);
      const after = t.text().slice(t.text().indexOf('↻ reopened'));
      // The program's own sequences, once: from the replay.
      assert.match(
        after,
        /^↻ reopened after the window reload\n\x1b\[\?1049h\x1b\[\?1000h\x1b\[\?1006h\x1b\[\?2004h\x1b\[\?1h\x1b=\x1b\[\?25l0+\n/,
      );
      await t.run.process!.write('q\n');
      await t.until(/BYE\n/);
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.match(t.text(), /WINCHES 0\n/);
    } finally {
      client.dispose();
    }
  });
});

describe('against codex (no execBridgeTerminalModes): reopened as before', () => {
  let codex: ExecServerProcess;
  before(async () => {
    codex = await startExecServer('codex');
  });
  after(async () => {
    await codex?.stop();
  });

  test('a full-screen program whose window no longer holds its start: nothing is asked nor added, the replay and the run go on', async () => {
    const sent: string[] = [];
    const connect = (resumeSessionId?: string) =>
      ExecServerClient.connect({
        connector: recording(websocketConnector(codex.url), sent),
        ...(resumeSessionId ? { resumeSessionId } : {}),
      });
    const { client, processId } = await detachedProgram(FULL_SCREEN, FULL_SCREEN_OFF, 3, connect);
    try {
      const t = reopen(client, processId);
      await t.until(/READY\n/);
      assert.ok((t.run.replay?.afterSeq ?? 0) > 1, 'the window dropped the start');
      const after = t.text().slice(t.text().indexOf('↻ reopened'));
      assert.match(after, /^↻ reopened after the window reload[^\n]*\n[0-9]{63}\n/);
      await t.run.process!.write('q\n');
      await t.until(/BYE\n/);
      await within(t.run.done, 'the run to end', WAIT_MS);
      assert.deepEqual(
        sent.filter((m) => m.includes('execBridge/terminalModes')),
        [],
      );
    } finally {
      client.dispose();
    }
  });
});
