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
 *   their end (BEL for OSC, else ESC \), so their contents never count. State is kept between
 *   output events: a sequence split across them is read as one.
 * - Cost: text without escapes is one `indexOf(ESC)` per chunk (after a short look); a colour or cursor move one short
 *   loop over its bytes (`quick`); only sequences that may set a mode, or are cut by a chunk's end,
 *   go through the byte-by-byte machine (bench/RESULTS.md "Terminal modes").
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

  /** A parse that threw: the process's output goes on unfollowed, and a question about its modes fails. */
  private failed: unknown;

  /** Output event `seq` (events in seq order). Never throws: it runs inside the server's output path. */
  feed(seq: number, data: Buffer): void {
    if (this.failed !== undefined) return;
    try {
      this.parse(seq, data);
    } catch (e) {
      this.failed = e ?? new Error('unknown');
    }
  }

  private parse(seq: number, data: Buffer): void {
    this.lastSeq = seq;
    const n = data.length;
    let i = 0;
    while (i < n) {
      const state = this.state;
      if (state === GROUND) {
        // The next ESC: a few bytes looked at here first (output with colours has one every few
        // words, and a call to indexOf costs more than that), then indexOf for the rest.
        let e = i;
        const near = Math.min(n, i + 48);
        while (e < near && data[e] !== ESC) e++;
        if (e === near) e = near < n ? data.indexOf(ESC, near) : -1;
        if (e < 0) return;
        const end = this.quick(data, e, seq);
        if (end >= 0) {
          i = end;
          continue;
        }
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

  /** The modes where the output after `afterSeq` begins (`skipBytes` into the next event), and those after all output so far. */
  query(afterSeq: number, skipBytes: number): TerminalModesResult {
    if (this.failed !== undefined) throw new Error(`this process's terminal modes are not followed: ${String(this.failed)}`);
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

  /**
   * The common sequences whole within the chunk, without the byte-by-byte machine: a CSI that sets
   * no mode (colours, cursor moves: skipped by one loop over its bytes), an OSC string, a two-byte
   * escape. Returns where reading goes on, or -1: the machine reads it (a CSI that may set a mode,
   * one cut by the chunk's end or holding a control, any other escape).
   */
  private quick(data: Buffer, e: number, seq: number): number {
    const n = data.length;
    let j = e + 1;
    if (j >= n) return -1;
    const k = data[j]!;
    if (k === 0x5b) {
      j++;
      while (j < n && data[j]! >= 0x30 && data[j]! <= 0x3f) j++;
      while (j < n && data[j]! >= 0x20 && data[j]! <= 0x2f) j++;
      if (j >= n) return -1;
      const f = data[j]!;
      if (f < 0x40 || f > 0x7e) return -1;
      if ((f === 0x68 || f === 0x6c) && data[e + 2] === 0x3f) return this.quickDecPrivate(data, e, j, seq);
      // Other h and l, r (DECSTBM), q (DECSCUSR), p (DECSTR): the machine.
      if (f === 0x68 || f === 0x6c || f === 0x72 || f === 0x71 || f === 0x70) return -1;
      return j + 1;
    }
    if (k === 0x5d) {
      this.startSeq = seq;
      this.startOff = e;
      this.state = OSC_STRING;
      return this.skipString(seq, data, j + 1);
    }
    // ESC and one final byte that sets nothing (ESC 7, ESC 8, ESC M, ESC \ ...).
    if (k >= 0x30 && k <= 0x7e && k !== 0x3d && k !== 0x3e && k !== 0x63 && k !== 0x50 && k !== 0x58 && k !== 0x5e && k !== 0x5f)
      return j + 1;
    return -1;
  }

  /** `CSI ? Pm h/l` whole in the chunk, from `e` (ESC) to `f` (its final byte): applied, or -1 when it is not plain digits and `;`. */
  private quickDecPrivate(data: Buffer, e: number, f: number, seq: number): number {
    for (let x = e + 3; x < f; x++) if (data[x]! < 0x30 || data[x]! > 0x3b || data[x] === 0x3a) return -1;
    this.startSeq = seq;
    this.startOff = e;
    const on = data[f] === 0x68;
    let p = -1;
    for (let x = e + 3; x <= f; x++) {
      const b = data[x]!;
      if (b >= 0x30 && b <= 0x39) p = Math.min(MAX_PARAM, (p < 0 ? 0 : p * 10) + (b - 0x30));
      else {
        if (p >= 0) this.decPrivate(p, on);
        p = -1;
      }
    }
    return f + 1;
  }

  /**
   * Inside a string: to its end (or the end of the chunk); returns where reading goes on. An ESC ends
   * it (ESC \, ST, is then an escape that does nothing), and BEL an OSC string. CAN and SUB, which
   * abort a string in a terminal, are not looked for: a string is skipped by `indexOf`, not byte by byte.
   */
  private skipString(seq: number, data: Buffer, from: number): number {
    const osc = this.state === OSC_STRING;
    // Most strings are short (a title, a link): looked at here first, as the next ESC in `feed`.
    const near = Math.min(data.length, from + 64);
    for (let i = from; i < near; i++) {
      const b = data[i]!;
      if (b === ESC || (b === BEL && osc)) return this.endString(seq, i, b);
    }
    if (near === data.length) return near;
    const esc = data.indexOf(ESC, near);
    // BEL only before that ESC: a search to the chunk's end for every link ended by ESC \ (OSC 8,
    // which has no BEL) made link-dense output quadratic in the chunk (14 ms/MiB in 64 KiB events).
    const bel = osc ? (esc < 0 ? data.indexOf(BEL, near) : data.subarray(near, esc).indexOf(BEL)) : -1;
    const belAt = bel >= 0 && esc >= 0 ? near + bel : bel;
    if (belAt >= 0 && (esc < 0 || belAt < esc)) {
      this.state = GROUND;
      return belAt + 1;
    }
    if (esc < 0) return data.length;
    this.escape(seq, esc);
    return esc + 1;
  }

  /** A string ends at `i` with `b` (ESC or BEL); where reading goes on. */
  private endString(seq: number, i: number, b: number): number {
    if (b === ESC) this.escape(seq, i);
    else this.state = GROUND;
    return i + 1;
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
