import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_FLOW_LIMITS, STATUS_REPLY, STATUS_REQUEST, TerminalFlow, type FlowLimits } from '../../../src/core/terminalFlow';
import { TerminalStreamModel, type TerminalAction } from '../../../src/core/terminalStreamModel';
import { FakeClock } from '../../helpers/fakeClock';

const LIMITS: FlowLimits = { window: 1000, requestEvery: 100, pauseAbove: 2000, resumeBelow: 500, dropAbove: 5000, requestTimeoutMs: 1000 };

/**
 * A terminal emulator that parses what it was given only when told to (`parse`), and answers each
 * status request it reaches, as xterm.js does.
 */
function harness(canPause: boolean, limits = LIMITS) {
  const clock = new FakeClock();
  const written: string[] = [];
  const holds: boolean[] = [];
  let unparsed = '';
  let shown = '';
  const toProcess: string[] = [];
  const flow = new TerminalFlow(
    {
      write: (text) => {
        written.push(text);
        unparsed += text;
      },
      hold: (p) => holds.push(p),
      skipped: (n) => `[${n} skipped]`,
    },
    canPause,
    limits,
    clock,
  );
  flow.start();
  /** Parses everything given so far; answers go back through `input` (what is left of them reaches the process). */
  const parse = () => {
    for (let round = 0; round < 10_000 && unparsed; round++) {
      const text = unparsed;
      unparsed = '';
      const answers = text.split(STATUS_REQUEST).length - 1;
      shown += text.split(STATUS_REQUEST).join('');
      for (let i = 0; i < answers; i++) {
        const rest = flow.input(STATUS_REPLY);
        if (rest) toProcess.push(rest);
      }
    }
  };
  return {
    flow,
    clock,
    written,
    holds,
    parse,
    shown: () => shown,
    toProcess,
    inTerminal: () => unparsed.split(STATUS_REQUEST).join('').length,
  };
}

test('at most a window of characters is unparsed in the terminal; every character arrives, once, in order', () => {
  const h = harness(true);
  let expected = '';
  for (let i = 0; i < 300; i++) {
    const piece = `line ${i} ${'x'.repeat(i % 37)}\n`;
    expected += piece;
    h.flow.push(piece);
    // Never more than the window waits in the terminal, however fast it comes.
    assert.ok(h.inTerminal() <= LIMITS.window, `${h.inTerminal()} chars unparsed`);
    if (i % 50 === 49) h.parse();
  }
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.parse();
  h.parse();
  assert.equal(h.shown(), expected);
  assert.equal(h.flow.backlog, 0);
  assert.deepEqual(h.toProcess, [], 'our answers do not reach the process');
});

test('by default at most 100 000 characters wait unparsed, with a status request every 16 Ki and one where the window fills (as VS Code pauses its own ptys)', () => {
  const h = harness(true, DEFAULT_FLOW_LIMITS);
  const piece = 'y\r\n'.repeat(10_000);
  for (let i = 0; i < 100; i++) h.flow.push(piece);
  assert.equal(h.inTerminal(), 100_000, 'the window is full, no more');
  assert.equal(h.written.filter((w) => w === STATUS_REQUEST).length, 7, 'a request per 16 Ki characters, and one at the end of the window');
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.parse();
  h.parse();
  assert.equal(h.shown(), piece.repeat(100));
});

test('a full window takes more only once the terminal has answered for all but refillBelow characters (its backlog swings, as behind a VS Code pty)', () => {
  const flow = (written: string[]) =>
    new TerminalFlow({ write: (text) => written.push(text), hold: () => {}, skipped: () => '' }, true, {
      ...LIMITS,
      window: 1000,
      refillBelow: 100,
      requestEvery: 300,
    });
  const written: string[] = [];
  const f = flow(written);
  f.start();
  f.push('x'.repeat(5000));
  const chars = () => written.filter((w) => w !== STATUS_REQUEST).join('').length;
  assert.equal(chars(), 1000);
  // Requests at 300, 600, 900 and where the window filled (1000).
  assert.equal(written.filter((w) => w === STATUS_REQUEST).length, 4);
  f.input(STATUS_REPLY); // answered up to 300: 700 unanswered
  f.input(STATUS_REPLY); // up to 600: 400
  assert.equal(chars(), 1000, 'nothing more while more than refillBelow is unanswered');
  f.input(STATUS_REPLY); // up to 900: 100, at refillBelow
  assert.equal(chars(), 1900, 'then the window fills again');
  assert.equal(f.unanswered, 1000);
});

test('a shell typed into for seconds is never held up by a gap: a burst needs burstChars too (the default limits)', () => {
  const clock = new FakeClock();
  const writes: { at: number; text: string }[] = [];
  const flow = new TerminalFlow(
    { write: (text) => writes.push({ at: clock.now(), text }), hold: () => {}, skipped: () => '' },
    'credit',
    DEFAULT_FLOW_LIMITS,
    clock,
  );
  flow.start();
  // An echo every 40 ms (faster than gapMs: no pause between them) for 10 s: 250 echoes of 3 characters.
  for (let i = 0; i < 250; i++) {
    const at = clock.now();
    flow.push('ab\n');
    assert.equal(flow.backlog, 0, `echo ${i} was written at once`);
    assert.equal(writes.at(-1)?.at, at);
    clock.advance(40);
  }
  assert.equal(writes.filter((w) => w.text === STATUS_REQUEST).length, 0, 'and nothing waited for an answer');
});

test("a flood is written in bursts of at most burstMs, each answered for in full, then gapMs without writes (VS Code sends a running command's output back after 50 ms without data)", () => {
  const clock = new FakeClock();
  const writes: { at: number; text: string }[] = [];
  const flow = new TerminalFlow(
    { write: (text) => writes.push({ at: clock.now(), text }), hold: () => {}, skipped: () => '' },
    'credit',
    { ...LIMITS, window: 1_000_000, burstMs: 100, gapMs: 20 },
    clock,
  );
  flow.start();
  let expected = '';
  let answered = 0;
  // 500 ms of output arriving every 5 ms; the terminal answers each request 5 ms after it was written.
  for (let i = 0; i < 100; i++) {
    const piece = `line ${i}\n`;
    expected += piece;
    flow.push(piece);
    const requests = writes.filter((w) => w.text === STATUS_REQUEST && w.at < clock.now()).length;
    for (; answered < requests; answered++) flow.input(STATUS_REPLY);
    clock.advance(5);
  }
  for (let i = 0; i < 100; i++) {
    const requests = writes.filter((w) => w.text === STATUS_REQUEST).length;
    for (; answered < requests; answered++) flow.input(STATUS_REPLY);
    clock.advance(5);
  }
  const shown = writes.filter((w) => w.text !== STATUS_REQUEST);
  assert.equal(shown.map((w) => w.text).join(''), expected);
  let burstStart = shown[0]!.at;
  let gaps = 0;
  for (let i = 1; i < shown.length; i++) {
    if (shown[i]!.at - shown[i - 1]!.at >= 20) {
      gaps++;
      burstStart = shown[i]!.at;
      // The burst before the gap ended with a request, so the gap began once all of it was parsed.
      const before = writes.filter((w) => w.at < shown[i]!.at);
      assert.equal(before[before.length - 1]!.text, STATUS_REQUEST);
    }
    assert.ok(shown[i]!.at - burstStart <= 100, `a burst of ${shown[i]!.at - burstStart} ms at ${shown[i]!.at}`);
  }
  assert.ok(gaps >= 3, `${gaps} gaps in 500 ms`);
});

test('a long queue pauses the process; once the terminal catches up it is resumed', () => {
  const h = harness(true);
  for (let i = 0; i < 40; i++) h.flow.push('y\n'.repeat(50));
  assert.deepEqual(h.holds, [true], 'paused once, above pauseAbove');
  assert.ok(h.flow.isPaused);
  // What arrives while the pause travels is still queued, never dropped.
  for (let i = 0; i < 5; i++) h.flow.push('y\n'.repeat(50));
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.parse();
  assert.deepEqual(h.holds, [true, false]);
  assert.equal(h.shown(), 'y\n'.repeat(50 * 45));
});

test('status requests the process writes itself (even split across writes) get their answers', () => {
  const h = harness(true);
  h.flow.push('abc\x1b[');
  h.flow.push('5nde');
  h.flow.push('f'.repeat(200));
  h.parse();
  assert.deepEqual(h.toProcess, [STATUS_REPLY], 'one answer for the process, ours are taken out');
  // A reply nobody asked for (or typed) passes through untouched, with the keys around it.
  assert.equal(h.flow.input(`a${STATUS_REPLY}b`), `a${STATUS_REPLY}b`);
});

test('a terminal that never answers slows the run down but does not stop it', () => {
  const h = harness(true);
  for (let i = 0; i < 30; i++) h.flow.push('z'.repeat(100));
  assert.ok(h.flow.unanswered <= LIMITS.window);
  const before = h.written.join('').length;
  h.clock.advance(LIMITS.requestTimeoutMs);
  assert.ok(h.written.join('').length > before, 'the window reopened after the timeout');
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.clock.advance(LIMITS.requestTimeoutMs);
  assert.equal(h.flow.backlog, 0);
  assert.equal(h.written.join('').split(STATUS_REQUEST).join(''), 'z'.repeat(3000));
  // Late answers are still taken out of the input.
  assert.equal(h.flow.input(STATUS_REPLY), '');
});

test('without a pause (codex), the queue stays bounded: the overflow is not shown, and a line says how much', () => {
  const h = harness(false);
  for (let i = 0; i < 100; i++) {
    h.flow.push('q'.repeat(100));
    assert.ok(h.flow.backlog <= LIMITS.dropAbove, `backlog ${h.flow.backlog}`);
  }
  assert.deepEqual(h.holds, [], 'nothing to pause');
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.parse();
  const shown = h.shown();
  const m = /\[(\d+) skipped\]/.exec(shown);
  assert.ok(m, 'the notice');
  assert.equal(shown.replace(m[0], '').length + Number(m[1]), 100 * 100, 'shown + skipped = all');
});

test('model: answers to status requests never reach the process nor close a finished terminal; the exit line is marked', () => {
  const model = new TerminalStreamModel(LIMITS);
  const actions: TerminalAction[] = [];
  const writes: Array<{ text: string; finished: boolean }> = [];
  let closed = false;
  model.onAction((a) => actions.push(a));
  model.onWrite((text) => writes.push({ text, finished: model.writingFinished }));
  model.onClose(() => (closed = true));
  model.open({ cols: 80, rows: 24 });
  model.attach({ tty: true, stdinWritable: true, canPause: true });
  for (let seq = 1; seq <= 40; seq++) model.processEvent({ type: 'output', seq, stream: 'pty', data: Buffer.from('y\r\n'.repeat(40)) });
  assert.deepEqual(
    actions.map((a) => a.kind),
    ['pause'],
  );
  model.processEvent({ type: 'exited', seq: 41, exitCode: 0, sandboxDenied: false });
  model.processEvent({ type: 'closed', seq: 42 });
  model.finish(0);
  const requests = () =>
    writes
      .map((w) => w.text)
      .join('')
      .split(STATUS_REQUEST).length - 1;
  // The terminal parses and answers, one reply per request, until everything is shown.
  for (let answered = 0, i = 0; i < 1000 && answered < requests(); i++, answered++) model.handleInput(STATUS_REPLY);
  assert.equal(closed, false, 'the answers are not keys');
  assert.deepEqual(
    actions.map((a) => a.kind),
    ['pause', 'resume'],
  );
  const text = writes.map((w) => w.text).join('');
  assert.equal(
    text
      .split(STATUS_REQUEST)
      .join('')
      .replace(/\x1b\[[0-9;]*m/g, ''),
    `${'y\r\n'.repeat(1600)}[exit code 0 — press any key to close]`,
  );
  assert.ok(
    writes.filter((w) => w.finished).every((w) => !w.text.includes('y\r\n')),
    'only the exit line is marked finished',
  );
  assert.ok(writes.some((w) => w.finished && w.text.includes('exit code 0')));
  model.handleInput('x');
  assert.equal(closed, true, 'a real key closes it');
});

test('whenDrained resolves only once everything pushed was given to the terminal (or it closed)', async () => {
  const h = harness(true);
  h.flow.push('x'.repeat(3 * LIMITS.window));
  let drained = false;
  const waiting = h.flow.whenDrained().then(() => (drained = true));
  await Promise.resolve();
  assert.equal(drained, false, 'a tail still waits in the queue');
  for (let i = 0; i < 100 && h.flow.backlog > 0; i++) h.parse();
  await waiting;
  assert.equal(h.shown().length, 3 * LIMITS.window);
  // Empty: at once. Closed with a tail: at once too (nothing more will be shown).
  await h.flow.whenDrained();
  h.flow.push('y'.repeat(3 * LIMITS.window));
  const closed = h.flow.whenDrained();
  h.flow.dispose();
  await closed;
});

test("a task's last lines queued when the process ends are written as output, not as the exit line", () => {
  const model = new TerminalStreamModel({ ...DEFAULT_FLOW_LIMITS, window: 100, requestEvery: 50 });
  const out: { text: string; finished: boolean }[] = [];
  let unanswered = 0;
  model.onWrite((text) => {
    if (text === STATUS_REQUEST) unanswered++;
    else out.push({ text, finished: model.writingFinished });
  });
  model.open({ cols: 80, rows: 24 });
  model.attach({ tty: false, stdinWritable: false, canPause: true });
  model.processEvent({ type: 'output', seq: 1, stream: 'stdout', data: Buffer.from('a'.repeat(400) + '\nlast line\n') });
  model.finish(0);
  assert.ok(!out.some((w) => w.text.includes('last line')), 'the tail waits in the flow when the run finishes');
  // The terminal answers its status requests, one by one: the queue drains.
  for (let i = 0; i < 100 && unanswered > 0; i++) {
    unanswered--;
    model.handleInput(STATUS_REPLY);
  }
  const asOutput = out
    .filter((w) => !w.finished)
    .map((w) => w.text)
    .join('');
  assert.match(asOutput, /last line/, 'the tail is output (a task shows it and its matchers see it)');
  const asExitLine = out
    .filter((w) => w.finished)
    .map((w) => w.text)
    .join('');
  assert.doesNotMatch(asExitLine, /last line/, 'only the exit line is marked finished');
  assert.match(asExitLine, /press any key/);
});

test('the timers output waits for (the gap after a burst, an unanswered request) keep Node running: a run is done only once its output was written', () => {
  // Real timers, never fired: what matters is whether each holds the event loop. An unref'd gap
  // timer let a test's process end with a 3 MiB replay still queued (terminalReattach, ci22).
  const timers: NodeJS.Timeout[] = [];
  const clock = {
    now: () => Date.now(),
    setTimeout: (fn: () => void, ms: number) => {
      const t = setTimeout(fn, ms);
      timers.push(t);
      return t;
    },
    clearTimeout: (t: unknown) => clearTimeout(t as NodeJS.Timeout),
  };
  const flow = new TerminalFlow(
    { write: () => undefined, hold: () => undefined, skipped: (n) => `[${n}]` },
    true,
    { ...LIMITS, burstMs: 0, gapMs: 60_000 },
    clock,
  );
  flow.start();
  try {
    flow.push('x'.repeat(50)); // burstMs 0: the gap starts at once, before anything is written
    assert.equal(flow.backlog, 50, 'the output waits for the gap');
    assert.equal(timers.length, 1);
    assert.equal(timers[0]!.hasRef(), true, 'the gap timer holds the loop while output waits for it');
  } finally {
    flow.dispose();
  }
  const requests = new TerminalFlow(
    { write: () => undefined, hold: () => undefined, skipped: (n) => `[${n}]` },
    true,
    { ...LIMITS, requestTimeoutMs: 60_000 },
    clock,
  );
  requests.start();
  try {
    requests.push('y'.repeat(150)); // past requestEvery: a request goes out, and its timeout is armed
    assert.equal(timers.length, 2);
    assert.equal(timers[1]!.hasRef(), true, 'the timeout of an unanswered request holds the loop too');
  } finally {
    requests.dispose();
  }
  for (const t of timers) clearTimeout(t);
});
