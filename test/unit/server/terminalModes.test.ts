/**
 * The server's terminal-mode tracker (src/server/terminalModes.ts) and the restore text a reopened
 * terminal is given (src/core/terminalModes.ts): sequences split across output events, strings whose
 * contents look like modes, toggles in bounded memory, and answers by output position.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { modeRestoreText } from '../../../src/core/terminalModes';
import type { TerminalModeState } from '../../../src/protocol';
import { KEEP, TerminalModes } from '../../../src/server/terminalModes';

const NEW: TerminalModeState = { set: [], reset: [], keypad: false, scrollRegion: null, cursorStyle: 0 };

/** A tracker fed `events` as output events 1, 2, … */
function fed(...events: string[]): TerminalModes {
  const t = new TerminalModes();
  events.forEach((e, i) => t.feed(i + 1, Buffer.from(e, 'latin1')));
  return t;
}
const now = (t: TerminalModes) => t.query(Number.MAX_SAFE_INTEGER - 1, 0).now;

describe('TerminalModes', () => {
  test('a full-screen program: alternate screen, mouse, bracketed paste, cursor keys, keypad, hidden cursor; a new tracker is the default', () => {
    assert.deepEqual(now(fed('plain text\r\n')), NEW);
    const t = fed('$ vim\r\n', '\x1b[?1049h\x1b[?1h\x1b=\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?25l\x1b[?1004h drawing');
    assert.deepEqual(now(t), { set: [1049, 1000, 1006, 1, 1004, 2004], reset: [25], keypad: true, scrollRegion: null, cursorStyle: 0 });
    // Before event 2: nothing yet; after it all of it.
    assert.deepEqual(t.query(1, 0).at, NEW);
    assert.deepEqual(t.query(2, 0).at, now(t));
    // And back out (what vim does on :q).
    t.feed(3, Buffer.from('\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[?25h\x1b[?1004l\x1b[?1049l'));
    assert.deepEqual(now(t), NEW);
  });

  test('a sequence split across output events, even byte by byte, is read as one, at the position of its ESC', () => {
    const seq = '\x1b[?1049;2004h';
    const t = fed('abc', ...seq.split(''), 'xyz');
    assert.deepEqual(now(t).set, [1049, 2004]);
    // The ESC is event 2's first byte: a replay from there replays the sequence itself; one byte later, it is restored.
    assert.deepEqual(t.query(1, 0).at.set, []);
    assert.deepEqual(t.query(2, 0).at.set, [1049, 2004]);
    const u = fed('ab\x1b[?10', '49h cd');
    assert.deepEqual(u.query(0, 2).at.set, []);
    assert.deepEqual(u.query(0, 3).at.set, [1049]);
  });

  test('bytes inside OSC, DCS, APC, PM and SOS strings are not modes, also when the string is split; the string ends where a terminal ends it', () => {
    const strings = [
      '\x1b]0;title \x1b[?1049h\x07',
      '\x1b]0;[?2004h [?1000h\x07',
      '\x1b]8;;http://x/[?25l\x1b\\link\x1b]8;;\x1b\\',
      '\x1bP1$r[?1049h=\x1b\\',
      '\x1bPq#0;2;0;0;0[?2004h\x07[?1000h\x1b\\',
      '\x1b_Ga=T;[?1049h\x1b\\',
      '\x1b^[?1h\x1b\\',
      '\x1bX[?1h\x1b\\',
    ];
    for (const s of strings.slice(1)) {
      assert.deepEqual(now(fed(s)), NEW, JSON.stringify(s));
      const mid = Math.floor(s.length / 2);
      assert.deepEqual(now(fed(s.slice(0, mid), s.slice(mid))), NEW, JSON.stringify(s));
    }
    // An ESC ends an OSC string (as in xterm.js): what follows it is a sequence again.
    assert.deepEqual(now(fed(strings[0]!)).set, [1049]);
    // After a string, modes count again (also after one cut by the chunk's end); CAN and SUB abort a sequence.
    assert.deepEqual(now(fed('\x1b]0;x\x07\x1b[?2004h')).set, [2004]);
    assert.deepEqual(now(fed('\x1b]0;x', 'y\x07\x1b[?2004h', '\x1bP', 'q[?1h\x1b', '\\\x1b[?1049h')).set, [1049, 2004]);
    assert.deepEqual(now(fed('\x1b[?10\x1849h', '\x1b[?20\x1a04h')), NEW);
    // Colours and other sequences (even with sub-parameters) change nothing here.
    assert.deepEqual(now(fed('\x1b[38:2::1:2:3m\x1b[1;31m\x1b[2J\x1b[H\x1b(B\x1b[>4;1m\x1b[?1049$p')), NEW);
    // A C0 control inside a sequence is executed without ending it.
    assert.deepEqual(now(fed('\x1b[?\r2004h')).set, [2004]);
  });

  test('mouse tracking and encoding are one mode each; scroll region, cursor style, soft and full reset', () => {
    const t = fed('\x1b[?1000h\x1b[?1003h\x1b[?1005h\x1b[?1006h');
    assert.deepEqual(now(t).set, [1003, 1006]);
    t.feed(2, Buffer.from('\x1b[?1000l'));
    assert.deepEqual(now(t).set, [1006]);
    t.feed(3, Buffer.from('\x1b[2;20r\x1b[5 q\x1b[?66h\x1b[?7l'));
    assert.deepEqual(now(t), { set: [1006], reset: [7], keypad: true, scrollRegion: { top: 2, bottom: 20 }, cursorStyle: 5 });
    t.feed(4, Buffer.from('\x1b[5;3r\x1b[9 q')); // a region a terminal refuses, a style it does not know
    assert.deepEqual(now(t).scrollRegion, { top: 2, bottom: 20 });
    assert.equal(now(t).cursorStyle, 5);
    t.feed(5, Buffer.from('\x1b[!p'));
    assert.deepEqual(now(t), { set: [1006], reset: [], keypad: false, scrollRegion: null, cursorStyle: 5 });
    t.feed(6, Buffer.from('\x1b[3r\x1b[?1049h\x1b[?25lx\x1bc'));
    assert.deepEqual(now(t), NEW);
    assert.deepEqual(t.query(5, 0).at.scrollRegion, null);
    assert.deepEqual(t.query(5, 4).at.scrollRegion, { top: 3, bottom: 0 });
  });

  test('a cursor hidden and shown every frame: bounded history, exact answers within it, the right state at the end', () => {
    const t = new TerminalModes();
    t.feed(1, Buffer.from('\x1b[?1049h'));
    const frames = 100_000;
    for (let f = 0; f < frames; f++) t.feed(2 + f, Buffer.from(`\x1b[?25l frame ${f} \x1b[?25h`));
    assert.ok(t.keptTransitions <= 2 * KEEP + 1, `${t.keptTransitions} transitions kept`);
    // A recent frame: exact, the cursor shown there (between frames).
    const recent = t.query(1 + frames - 3, 0);
    assert.equal(recent.exact, true);
    assert.deepEqual(recent.at.set, [1049]);
    assert.deepEqual(recent.at.reset, []);
    // Inside a recent frame (after its hide): hidden.
    assert.deepEqual(t.query(frames - 2, 3).at.reset, [25]);
    // An old frame: the history no longer reaches it; said so. The alternate screen is still exact.
    const old = t.query(10, 0);
    assert.equal(old.exact, false);
    assert.deepEqual(old.at.set, [1049]);
    assert.deepEqual(old.now, { ...NEW, set: [1049] });
  });

  test('replaying from any cut after the restore text ends where the whole output ends (random output, seeded)', () => {
    let seed = 27;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pieces = [
      '\x1b[?1049h',
      '\x1b[?1049l',
      '\x1b[?47h',
      '\x1b[?1047l',
      '\x1b[?25l',
      '\x1b[?25h',
      '\x1b[?1000h',
      '\x1b[?1002h',
      '\x1b[?1000l',
      '\x1b[?1006h',
      '\x1b[?1006l',
      '\x1b[?2004h',
      '\x1b[?2004l',
      '\x1b=',
      '\x1b>',
      '\x1b[?1h',
      '\x1b[?1l',
      '\x1b[?7l',
      '\x1b[?7h',
      '\x1b[3;9r',
      '\x1b[r',
      '\x1b[2 q',
      '\x1b[0 q',
      '\x1b[?6h',
      '\x1b[?6l',
      '\x1b]0;t[?1h\x07',
      'text\r\n',
      '\x1b[31mred\x1b[m',
    ];
    for (let round = 0; round < 200; round++) {
      const bytes = Buffer.from(Array.from({ length: 40 + rand(200) }, () => pieces[rand(pieces.length)]).join(''), 'latin1');
      // Cut into events at random places, the way coalesced PTY reads cut it.
      const events: Buffer[] = [];
      for (let i = 0; i < bytes.length;) {
        const n = 1 + rand(40);
        events.push(bytes.subarray(i, i + n));
        i += n;
      }
      const whole = new TerminalModes();
      events.forEach((e, i) => whole.feed(i + 1, e));
      const cut = rand(events.length);
      const skip = rand(events[cut]!.length);
      const r = whole.query(cut, skip);
      const replayed = new TerminalModes();
      replayed.feed(1, Buffer.from(modeRestoreText(r.at), 'latin1'));
      replayed.feed(2, events[cut]!.subarray(skip));
      events.slice(cut + 1).forEach((e, i) => replayed.feed(3 + i, e));
      assert.deepEqual(r.now, now(whole));
      // A cut inside a sequence replays its tail as text: the sequence itself is in the restore text.
      assert.deepEqual(now(replayed), r.now, `round ${round}: cut ${cut}+${skip}`);
    }
  });
});

describe('modeRestoreText', () => {
  test('a new terminal restores nothing; the scroll region keeps the cursor; the alternate screen first, origin mode last', () => {
    assert.equal(modeRestoreText(NEW), '');
    assert.equal(
      modeRestoreText({
        set: [1049, 1002, 1006, 6, 2004],
        reset: [25, 7],
        keypad: true,
        scrollRegion: { top: 2, bottom: 0 },
        cursorStyle: 6,
      }),
      '\x1b7\x1b[2r\x1b8\x1b[?1049h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?25l\x1b[?7l\x1b=\x1b[6 q\x1b[?6h',
    );
    assert.equal(modeRestoreText({ ...NEW, scrollRegion: { top: 1, bottom: 20 } }), '\x1b7\x1b[1;20r\x1b8');
  });
});
