/** The terminal side of the credit window: raw output queued as bytes, decoded when written, and reported as consumed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STATUS_REPLY, STATUS_REQUEST, TerminalFlow, type FlowLimits, type RawOutput } from '../../../src/core/terminalFlow';
import { TerminalStreamModel, type TerminalAction } from '../../../src/core/terminalStreamModel';

const LIMITS: FlowLimits = { window: 1000, requestEvery: 100, pauseAbove: 2000, resumeBelow: 500, dropAbove: 5000, requestTimeoutMs: 1000 };

/** A terminal that parses (and answers) only when told to. */
function terminal(model: TerminalStreamModel) {
  let unparsed = '';
  let shown = '';
  model.onWrite((t) => (unparsed += t));
  return {
    parse() {
      for (let round = 0; round < 10_000 && unparsed; round++) {
        const text = unparsed;
        unparsed = '';
        const parts = text.split(STATUS_REQUEST);
        shown += parts.join('');
        for (let i = 1; i < parts.length; i++) model.handleInput(STATUS_REPLY);
      }
    },
    shown: () => shown,
  };
}

test('flow: raw output is decoded only when written, never paused nor cut under credit, and every byte is reported consumed', () => {
  const decoded: number[] = [];
  const holds: boolean[] = [];
  let consumed = 0;
  let unparsed = '';
  let shown = '';
  const flow = new TerminalFlow(
    {
      write: (t) => (unparsed += t),
      hold: (p) => holds.push(p),
      skipped: () => '[skipped]',
      decode: (_raw: RawOutput, bytes) => {
        decoded.push(bytes?.length ?? 0);
        return bytes ? bytes.toString('latin1') : '';
      },
      consumed: (n) => (consumed += n),
    },
    'credit',
    LIMITS,
  );
  flow.start();
  const total = 20_000; // far beyond pauseAbove and dropAbove
  const data = Buffer.from(Array.from({ length: total }, (_, i) => 97 + (i % 26)));
  for (let off = 0; off < total; off += 700) flow.pushRaw({ data: data.subarray(off, off + 700), decoder: undefined });
  // Only the window was decoded; the rest waits as bytes.
  assert.ok(decoded.reduce((a, b) => a + b, 0) <= LIMITS.window + LIMITS.requestEvery, `decoded ${decoded.join('+')}`);
  assert.equal(
    consumed,
    decoded.reduce((a, b) => a + b, 0),
  );
  assert.ok(flow.backlog > total - 2 * LIMITS.window);
  for (let i = 0; i < 1000 && (unparsed || flow.backlog); i++) {
    const parts = unparsed.split(STATUS_REQUEST);
    unparsed = '';
    shown += parts.join('');
    for (let j = 1; j < parts.length; j++) flow.input(STATUS_REPLY);
  }
  assert.equal(shown, data.toString('latin1'));
  assert.equal(consumed, total);
  assert.deepEqual(holds, [], 'a credited process is never paused');
});

test('model with credit: UTF-8 and CR LF split across chunks decode as before; consumed adds up to the bytes; a status line after queued output starts on its own line', () => {
  const model = new TerminalStreamModel(LIMITS);
  const actions: TerminalAction[] = [];
  model.onAction((a) => actions.push(a));
  const term = terminal(model);
  model.open({ cols: 80, rows: 24 });
  model.attach({ tty: false, stdinWritable: false, canPause: true, credit: true });
  const text = 'é€😀 line\r\nnext\nlast';
  const bytes = Buffer.from(text.repeat(300));
  let seq = 1;
  for (let off = 0; off < bytes.length; off += 7) {
    model.processEvent({ type: 'output', seq: seq++, stream: 'stdout', data: bytes.subarray(off, off + 7) });
  }
  // Queued (the terminal has not parsed): a notice must still start on a new line after "last".
  model.notice('note');
  for (let i = 0; i < 1000; i++) term.parse();
  const expected = text.repeat(300).replace(/(?<!\r)\n/g, '\r\n');
  assert.equal(term.shown(), `${expected}\r\n\x1b[2mnote\x1b[0m\r\n`);
  const consumed = actions.filter((a) => a.kind === 'consumed').reduce((n, a) => n + (a.kind === 'consumed' ? a.bytes : 0), 0);
  assert.equal(consumed, bytes.length);
  assert.ok(!actions.some((a) => a.kind === 'pause'), 'no pause under credit');
});

test('model without credit: no consumed actions; a long queue still pauses', () => {
  const model = new TerminalStreamModel(LIMITS);
  const actions: TerminalAction[] = [];
  model.onAction((a) => actions.push(a));
  model.onWrite(() => undefined);
  model.open();
  model.attach({ tty: true, stdinWritable: true, canPause: true });
  model.processEvent({ type: 'output', seq: 1, stream: 'pty', data: Buffer.alloc(5000, 0x79) });
  assert.ok(!actions.some((a) => a.kind === 'consumed'));
  assert.ok(actions.some((a) => a.kind === 'pause'));
});
