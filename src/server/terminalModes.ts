import type { TerminalModeState, TerminalModesResult } from '../protocol';

/**
 * The terminal modes a tty process's output sets, followed as the output passes (every byte, also
 * what the spool later drops), so that a reopened terminal that replays only the newest part can be
 * put first in the state a replay from the first byte would have left it in
 * (`execBridge/terminalModes`, docs/protocol-extensions.md "Terminal modes").
 *
 * - The parser is the usual VT500-style state machine, cut down to what sets a mode: CSI sequences
 *   (DECSET/DECRST `CSI ? Pm h/l`, DECSTBM `CSI Pt;Pb r`, DECSCUSR `CSI Ps SP q`, DECSTR `CSI ! p`),
 *   ESC = / ESC > (keypad), ESC c (full reset); OSC, DCS, SOS, PM and APC strings are skipped to
 *   their end (BEL for OSC, else ESC \; CAN/SUB abort), so their contents never count. State is
 *   kept between output events: a sequence split across them is read as one.
 * - In the ground state a chunk costs one `indexOf(ESC)`: text without escapes is not looked at.
 * - Each mode keeps its newest transitions (at most 2 × KEEP, then the oldest KEEP go), by the output
 *   position of the ESC that began the sequence: a program that hides and shows its cursor every
 *   frame holds a bounded list. Colours (SGR) are not followed: docs/architecture.md "Output spool" says why.
 */

/** Transitions kept per mode after a trim (a trim happens at twice this). */
export const KEEP = 64;

/** DEC private modes followed one by one, with a new terminal's value. */
const FLAGS: ReadonlyArray<readonly [mode: number, on: boolean]> = [
  [1, false],
  [5, false],
  [6, false],
  [7, true],
  [12, false],
  [25, true],
  [1004, false],
  [1007, false],
  [2004, false],
];
/** Slots that hold one of several modes (or a number): which switched, 0 when none. */
const ALT = 0;
const MOUSE = 1;
const ENCODING = 2;
const KEYPAD = 3;
const REGION = 4;
const CURSOR = 5;
const FIRST_FLAG = 6;
const DEFAULTS = [0, 0, 0, 0, 0, 0, ...FLAGS.map(([, on]) => (on ? 1 : 0))];
const FLAG_SLOT = new Map(FLAGS.map(([mode], i) => [mode, FIRST_FLAG + i]));

// Parser states.
const GROUND = 0;
const ESCAPE = 1;
const ESCAPE_INTERMEDIATE = 2;
const CSI = 3;
const CSI_IGNORE = 4;
/** A string ended by ST (ESC \) only: DCS, SOS, PM, APC. */
const STRING = 5;
/** An OSC string: BEL ends it too. */
const OSC_STRING = 6;

const ESC = 0x1b;
const BEL = 0x07;
const CAN = 0x18;
const SUB = 0x1a;
const MAX_PARAMS = 16;
const MAX_PARAM = 65_535;

/** One mode's value and its newest transitions, by output position (seq, byte offset in that event). */
class Slot {
  value: number;
  private seqs: number[] = [];
  private offs: number[] = [];
  private vals: number[] = [];
  /** The value before the oldest kept transition. */
  private base: number;
  /** The position of the newest transition let go (seq -1: none). */
  private goneSeq = -1;
  private goneOff = 0;

  constructor(initial: number) {
    this.value = initial;
    this.base = initial;
  }

  get kept(): number {
    return this.seqs.length;
  }

  set(v: number, seq: number, off: number): void {
    if (v === this.value) return;
    this.value = v;
    this.seqs.push(seq);
    this.offs.push(off);
    this.vals.push(v);
    if (this.seqs.length < 2 * KEEP) return;
    const drop = this.seqs.length - KEEP;
    this.base = this.vals[drop - 1]!;
    this.goneSeq = this.seqs[drop - 1]!;
    this.goneOff = this.offs[drop - 1]!;
    this.seqs.splice(0, drop);
    this.offs.splice(0, drop);
    this.vals.splice(0, drop);
  }

  /** The value where output position (seq, off) begins: after every transition before it. */
  at(seq: number, off: number): { value: number; exact: boolean } {
    for (let i = this.seqs.length - 1; i >= 0; i--) {
      const s = this.seqs[i]!;
      if (s < seq || (s === seq && this.offs[i]! < off)) return { value: this.vals[i]!, exact: true };
    }
    const exact = this.goneSeq < seq || (this.goneSeq === seq && this.goneOff < off);
    return { value: this.base, exact };
  }
}

/** Modes of one tty process's output (see the file's comment). */
export class TerminalModes {
  private readonly slots = DEFAULTS.map((v) => new Slot(v));
  private state = GROUND;
  /** Where the sequence being read began (its ESC). */
  private startSeq = 0;
  private startOff = 0;
  private priv = 0;
  private intermediate = 0;
  private params: number[] = [];
  private param = -1;
  private lastSeq = 0;

  /** Output event `seq` (events in seq order). */
  feed(seq: number, data: Buffer): void {
    this.lastSeq = seq;
    const n = data.length;
    let i = 0;
    while (i < n) {
      const state = this.state;
      if (state === GROUND) {
        const e = data.indexOf(ESC, i);
        if (e < 0) return;
        this.escape(seq, e);
        i = e + 1;
      } else if (state === STRING || state === OSC_STRING) {
        i = this.skipString(seq, data, i);
      } else {
        this.step(data[i]!, seq, i);
        i++;
      }
    }
  }

  /** The modes where output position (seq, off) begins, and those after all output so far. */
  query(afterSeq: number, skipBytes: number): TerminalModesResult {
    let exact = true;
    const at = this.toState((slot) => {
      const v = slot.at(afterSeq + 1, skipBytes);
      exact &&= v.exact;
      return v.value;
    });
    return { at, now: this.toState((slot) => slot.value), nowSeq: this.lastSeq, exact };
  }

  /** The transitions held (for the bound's test). */
  get keptTransitions(): number {
    let n = 0;
    for (const s of this.slots) n += s.kept;
    return n;
  }

  private toState(value: (slot: Slot) => number): TerminalModeState {
    const v = this.slots.map(value);
    const set: number[] = [];
    const reset: number[] = [];
    for (const slot of [ALT, MOUSE, ENCODING]) if (v[slot]! > 0) set.push(v[slot]!);
    FLAGS.forEach(([mode, on], i) => {
      const now = v[FIRST_FLAG + i] === 1;
      if (now !== on) (now ? set : reset).push(mode);
    });
    const region = v[REGION]!;
    return {
      set,
      reset,
      keypad: v[KEYPAD] === 1,
      scrollRegion: region > 0 ? { top: Math.floor(region / 65_536), bottom: region % 65_536 } : null,
      cursorStyle: v[CURSOR]!,
    };
  }

  private escape(seq: number, off: number): void {
    this.state = ESCAPE;
    this.startSeq = seq;
    this.startOff = off;
  }

  /** Inside a string: to its end (or the end of the chunk); returns where reading goes on. */
  private skipString(seq: number, data: Buffer, from: number): number {
    const bel = this.state === OSC_STRING;
    for (let i = from; i < data.length; i++) {
      const b = data[i]!;
      if (b === ESC) {
        // Ends the string; ESC \ (ST) is then an escape sequence that does nothing.
        this.escape(seq, i);
        return i + 1;
      }
      if ((b === BEL && bel) || b === CAN || b === SUB) {
        this.state = GROUND;
        return i + 1;
      }
    }
    return data.length;
  }

  /** One byte in an escape or control sequence. */
  private step(b: number, seq: number, off: number): void {
    if (b === ESC) return this.escape(seq, off);
    if (b === CAN || b === SUB) {
      this.state = GROUND;
      return;
    }
    // Other C0 controls are executed by a terminal without ending the sequence; DEL is ignored.
    if (b < 0x20 || b === 0x7f) return;
    switch (this.state) {
      case ESCAPE:
        return this.escapeByte(b);
      case ESCAPE_INTERMEDIATE:
        if (b >= 0x30) this.state = GROUND;
        return;
      case CSI:
        return this.csiByte(b);
      default:
        // CSI_IGNORE: to the final byte.
        if (b >= 0x40 && b <= 0x7e) this.state = GROUND;
    }
  }

  private escapeByte(b: number): void {
    this.state = GROUND;
    if (b === 0x5b) {
      this.state = CSI;
      this.priv = 0;
      this.intermediate = 0;
      this.params = [];
      this.param = -1;
    } else if (b === 0x5d) this.state = OSC_STRING;
    else if (b === 0x50 || b === 0x58 || b === 0x5e || b === 0x5f) this.state = STRING;
    else if (b >= 0x20 && b <= 0x2f) this.state = ESCAPE_INTERMEDIATE;
    else if (b === 0x3d) this.change(KEYPAD, 1);
    else if (b === 0x3e) this.change(KEYPAD, 0);
    else if (b === 0x63) this.slots.forEach((_, i) => this.change(i, DEFAULTS[i]!));
  }

  private csiByte(b: number): void {
    if (b >= 0x30 && b <= 0x39) {
      if (this.intermediate !== 0) this.state = CSI_IGNORE;
      else this.param = Math.min(MAX_PARAM, (this.param < 0 ? 0 : this.param * 10) + (b - 0x30));
    } else if (b === 0x3b) {
      if (this.intermediate !== 0) this.state = CSI_IGNORE;
      else if (this.params.length < MAX_PARAMS) this.params.push(this.param);
      this.param = -1;
    } else if (b >= 0x3c && b <= 0x3f) {
      // A private marker only before any parameter.
      if (this.priv === 0 && this.param < 0 && this.params.length === 0 && this.intermediate === 0) this.priv = b;
      else this.state = CSI_IGNORE;
    } else if (b >= 0x20 && b <= 0x2f) this.intermediate = this.intermediate === 0 ? b : -1;
    else if (b >= 0x40 && b <= 0x7e) {
      this.state = GROUND;
      if (this.params.length < MAX_PARAMS) this.params.push(this.param);
      this.dispatch(b);
    } else this.state = CSI_IGNORE; // ':' (sub-parameters, SGR only) and bytes above 0x7e
  }

  /** A whole CSI sequence with final byte `f`; parameters -1: omitted. */
  private dispatch(f: number): void {
    const { priv, intermediate: inter, params } = this;
    if (priv === 0x3f && inter === 0 && (f === 0x68 || f === 0x6c)) {
      for (const p of params) this.decPrivate(p, f === 0x68);
    } else if (priv === 0 && inter === 0 && f === 0x72) {
      const top = Math.max(1, params[0] ?? 1);
      const bottom = Math.max(0, params[1] ?? 0);
      // A region a terminal refuses (top not above bottom) changes nothing.
      if (bottom !== 0 && top >= bottom) return;
      this.change(REGION, top === 1 && bottom === 0 ? 0 : top * 65_536 + bottom);
    } else if (priv === 0 && inter === 0x20 && f === 0x71) {
      const style = Math.max(0, params[0] ?? 0);
      if (style <= 6) this.change(CURSOR, style);
    } else if (priv === 0 && inter === 0x21 && f === 0x70) {
      // DECSTR (soft reset), as xterm.js does it for the modes followed here.
      for (const [slot, v] of [
        [FLAG_SLOT.get(25)!, 1],
        [FLAG_SLOT.get(1)!, 0],
        [FLAG_SLOT.get(6)!, 0],
        [FLAG_SLOT.get(7)!, 1],
        [KEYPAD, 0],
        [REGION, 0],
      ] as const)
        this.change(slot, v);
    }
  }

  /** DECSET (`on`) / DECRST of private mode `p`. */
  private decPrivate(p: number, on: boolean): void {
    if (p === 47 || p === 1047 || p === 1049) this.change(ALT, on ? p : 0);
    else if (p === 9 || p === 1000 || p === 1002 || p === 1003) this.change(MOUSE, on ? p : 0);
    else if (p === 1005 || p === 1006 || p === 1015 || p === 1016) this.change(ENCODING, on ? p : 0);
    else if (p === 66) this.change(KEYPAD, on ? 1 : 0);
    else {
      const slot = FLAG_SLOT.get(p);
      if (slot !== undefined) this.change(slot, on ? 1 : 0);
    }
  }

  private change(slot: number, value: number): void {
    this.slots[slot]!.set(value, this.startSeq, this.startOff);
  }
}
