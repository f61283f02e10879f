import { systemClock, type Clock, type TimerHandle } from '../util';

/**
 * "Device status report" (CSI 5 n). A terminal answers CSI 0 n once its parser reaches the request,
 * that is after it has parsed everything written before it: the only acknowledgement a
 * Pseudoterminal can get (VS Code drops the acks of its own flow control for extension terminals).
 */
export const STATUS_REQUEST = '\x1b[5n';
export const STATUS_REPLY = '\x1b[0n';

export interface FlowLimits {
  /** Characters written but not yet answered for; more wait in the queue. VS Code pauses its own ptys at 100 000. */
  window: number;
  /**
   * Once `window` is full, writing waits until no more than this is unanswered (VS Code resumes its
   * own ptys below 5 000): the window's backlog swings between the two instead of staying full.
   * Unset: writing goes on as soon as anything is answered.
   */
  refillBelow?: number;
  /** A status request goes out after this many characters (below `window`, or the window never reopens). */
  requestEvery: number;
  /** Queued characters above which the process is paused, and below which it is resumed. */
  pauseAbove: number;
  resumeBelow: number;
  /** Without a pause (a codex executor): queued characters beyond this are not shown (one notice line says so). */
  dropAbove: number;
  /** An unanswered request counts as answered after this (a terminal that never answers must not stop the run). */
  requestTimeoutMs: number;
  /**
   * After this long of writing without a pause of `gapMs`, writing stops until the terminal has
   * answered for everything written, and `gapMs` more (both unset: never). VS Code sends everything a
   * terminal shows while a command runs (shell integration's OSC 633 C) back to the extension host as
   * one `$shellExecutionData` message once no data came for 50 ms (a debounce, not a throttle): a
   * flood without such a pause became one message of hundreds of MiB (seconds of the window's main
   * thread, +297 MiB in the extension host). A pause only where we write is not one where the window
   * receives (its main thread delivers late messages back to back), hence the wait for the answers.
   * Each such message also holds up the window's main thread, and keys typed into any terminal wait
   * behind it: measured, bursts of 1.5 s put sendText → `handleInput` of another terminal at p95
   * 300–420 ms, bursts of 300 ms at 70–80 ms (bench/RESULTS.md, "Floods: ours against VS Code's own").
   */
  burstMs?: number;
  gapMs?: number;
  /**
   * A burst ends in a gap only once it has also written this many characters: a shell being typed
   * into (a few characters at a time, never a message worth bounding) is never held up.
   */
  burstChars?: number;
}

/**
 * A keystroke typed into another terminal during a flood waits in the window (renderer) about as long
 * as it takes to parse the unanswered characters (measured in real VS Code: sendText → handleInput
 * p50 184 ms with 512 Ki, 68 ms with 256 Ki, same throughput; bench/RESULTS.md, "Floods into a
 * terminal"). The window and its refill are VS Code's own for its ptys (pause above 100 000
 * unacknowledged characters, resume below 5 000): status requests answered p50 82 → 36–41 ms.
 */
export const DEFAULT_FLOW_LIMITS: FlowLimits = {
  window: 100_000,
  refillBelow: 5_000,
  requestEvery: 16 * 1024,
  pauseAbove: 1024 * 1024,
  resumeBelow: 256 * 1024,
  dropAbove: 16 * 1024 * 1024,
  requestTimeoutMs: 2000,
  burstMs: 300,
  gapMs: 60,
  burstChars: 256 * 1024,
};

/**
 * The credit window a terminal asks for its process (bytes the executor may send ahead of what the
 * terminal was given). Below the executor's retained 1 MiB less a chunk, so nothing unacknowledged
 * is ever evicted across a reconnect.
 */
export const TERMINAL_CREDIT_WINDOW = 512 * 1024;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Raw process output waits in the queue as bytes (a Buffer outside the JS heap, not a string that
 * lives long enough to be promoted to V8's old generation) and becomes text only when written.
 * `decoder` is what the sink decodes it with (one per stream and process, so pieces decode in order).
 */
export interface RawOutput<D = unknown> {
  data: Buffer;
  decoder: D;
  /** The stream ended after `data`: the decoder gives out what it still holds. */
  end?: boolean;
}

type Item = { text: string; tag: boolean; raw?: undefined } | { raw: RawOutput; tag: false; text?: undefined };

/** An outstanding status request: ours (written at character `at`) or the process's own (its answer is the process's). */
type Request = { ours: true; at: number; expired: boolean; sentAt: number } | { ours: false };

export interface FlowSink {
  /** Text for the terminal; `tag` is what `push` was given with it. */
  write(text: string, tag: boolean): void;
  /** Pause (true) or resume (false) the process behind the terminal. */
  hold(paused: boolean): void;
  /** The line that stands for `chars` characters that were not shown. */
  skipped(chars: number): string;
  /** Text for a piece of raw output (`bytes` undefined: the end of its stream), at the moment it is written. */
  decode?(raw: RawOutput, bytes: Buffer | undefined): string;
  /** `bytes` of raw output were given to the terminal (the process's credit may be acknowledged). */
  consumed?(bytes: number): void;
}

/**
 * How the process behind the terminal is held back: `credit` (the server reads only what the
 * consumer acknowledged: the queue is bounded by the credit window, nothing to do here), `pause`
 * (pause and resume it around the queue's limits), `drop` (it cannot be held: a codex executor).
 */
export type FlowMode = 'credit' | 'pause' | 'drop';

/**
 * Flow control between a process and a terminal emulator, in plain TS (no `vscode`):
 * - at most `window` characters are in the terminal unanswered for; a status request goes out every
 *   `requestEvery` characters and its answer (taken out of the terminal's input) reopens the window;
 * - text beyond that waits in a queue; above `pauseAbove` queued characters the process is paused
 *   (its server stops reading it, so it blocks; nothing is lost), below `resumeBelow` it resumes;
 * - a process that cannot be paused (a codex executor) has text beyond `dropAbove` queued
 *   characters dropped until the queue drains, and one line says how much;
 * - a process under a credit window is neither paused nor cut: its server sends only what was
 *   acknowledged, and raw output is acknowledged (`consumed`) as it is given to the terminal.
 * Requests the process itself writes are tracked in order, so their answers still reach it.
 */
export class TerminalFlow {
  private queue: Item[] = [];
  private queued = 0;
  private drainWaiters: (() => void)[] = [];
  private written = 0;
  private acked = 0;
  private sinceRequest = 0;
  private requests: Request[] = [];
  /** The last characters written, to find a request the process splits across two writes. */
  private carry = '';
  private paused = false;
  /** Characters not shown since the queue overflowed (codex executors only); undefined while showing all. */
  private dropped: number | undefined;
  private open = false;
  private timer: TimerHandle | undefined;
  /** Since when the terminal was written without a gap, and when last; the timer that ends a gap. */
  private burstStart: number | undefined;
  /** `written` when the burst started. */
  private burstFrom = 0;
  private lastWriteAt = 0;
  private gapTimer: TimerHandle | undefined;
  /** A burst ended: waiting for the terminal to answer for all of it before the gap starts. */
  private draining = false;
  /** The window filled up and has not drained to `refillBelow` yet. */
  private full = false;

  constructor(
    private readonly sink: FlowSink,
    canPause: boolean | FlowMode,
    private readonly limits: FlowLimits = DEFAULT_FLOW_LIMITS,
    private readonly clock: Clock = systemClock,
  ) {
    this.mode = typeof canPause === 'string' ? canPause : canPause ? 'pause' : 'drop';
  }

  private mode: FlowMode;

  /** Characters (and bytes of raw output) queued here, not yet given to the terminal. */
  get backlog(): number {
    return this.queued;
  }
  /** Characters given to the terminal and not yet answered for. */
  get unanswered(): number {
    return this.written - this.acked;
  }
  get isPaused(): boolean {
    return this.paused;
  }

  /** The terminal is there: start writing. */
  start(): void {
    this.open = true;
    this.pump();
  }

  /** A new process feeds the terminal: the old one's pause ended with it. */
  newProcess(canPause: boolean | FlowMode): void {
    this.mode = typeof canPause === 'string' ? canPause : canPause ? 'pause' : 'drop';
    this.paused = false;
    this.pump();
  }

  push(text: string, tag = false): void {
    if (!text) return;
    this.enqueue({ text, tag }, text.length);
  }

  /** Raw process output, decoded (`sink.decode`) when it is written. An `end` with no bytes is queued too. */
  pushRaw(raw: RawOutput): void {
    if (raw.data.length === 0 && !raw.end) return;
    this.enqueue({ raw, tag: false }, raw.data.length);
  }

  private enqueue(item: Item, size: number): void {
    if (this.mode === 'drop' && this.dropped === undefined && this.queued + size > this.limits.dropAbove) this.dropped = 0;
    if (this.dropped !== undefined && !item.raw?.end) {
      this.dropped += size;
      this.pump();
      return;
    }
    this.queue.push(item);
    this.queued += size;
    this.pump();
  }

  /**
   * Keys from the terminal: answers to our requests are taken out, the rest (answers to the
   * process's own requests included) is returned for the process.
   */
  input(data: string): string {
    if (this.requests.length === 0 || !data.includes(STATUS_REPLY)) return data;
    let rest = '';
    let from = 0;
    for (let i = data.indexOf(STATUS_REPLY); i >= 0; i = data.indexOf(STATUS_REPLY, from)) {
      const req = this.requests.shift();
      rest += data.slice(from, i);
      from = i + STATUS_REPLY.length;
      if (!req || !req.ours) rest += STATUS_REPLY;
      else if (!req.expired) this.acked = Math.max(this.acked, req.at);
    }
    this.armTimer();
    this.pump();
    return rest + data.slice(from);
  }

  /** Resolves once nothing waits in the queue (everything pushed was given to the terminal), or it closed. */
  whenDrained(): Promise<void> {
    if (this.queue.length === 0 || !this.open) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private settleDrained(): void {
    if (this.drainWaiters.length === 0 || (this.queue.length > 0 && this.open)) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  /** Nothing more is shown (the terminal closed). */
  dispose(): void {
    this.open = false;
    this.queue = [];
    this.queued = 0;
    this.settleDrained();
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.gapTimer) this.clock.clearTimeout(this.gapTimer);
    this.gapTimer = undefined;
  }

  /** Whether the window takes more characters now (with `refillBelow`: not from full until it drained that far). */
  private windowOpen(): boolean {
    const { window, refillBelow } = this.limits;
    if (refillBelow === undefined) return this.unanswered < window;
    if (this.full && this.unanswered <= refillBelow) this.full = false;
    if (!this.full && this.unanswered >= window) {
      this.full = true;
      // The characters since the last request need an answer too, or the window never drains that far.
      if (this.sinceRequest > 0) this.request(this.queue[0]?.tag ?? false);
    }
    return !this.full;
  }

  /** Whether writing must wait for a gap to end (starting one when the burst is long enough). */
  private inGap(): boolean {
    const { burstMs, gapMs } = this.limits;
    if (burstMs === undefined || gapMs === undefined) return false;
    if (this.gapTimer) return true;
    const now = this.clock.now();
    if (!this.draining) {
      // Only a pause after which the terminal had answered for everything is one the window saw.
      if (this.burstStart === undefined || (this.unanswered === 0 && now - this.lastWriteAt >= gapMs)) {
        this.burstStart = now;
        this.burstFrom = this.written;
      }
      if (now - this.burstStart < burstMs || this.written - this.burstFrom < (this.limits.burstChars ?? 0)) return false;
      this.draining = true;
      // The last characters need an answer too (requests otherwise come every `requestEvery`).
      if (this.sinceRequest > 0) this.request(this.queue[0]?.tag ?? false);
    }
    // Answers (or their timeout) call pump again.
    if (this.unanswered > 0) return true;
    this.gapTimer = this.clock.setTimeout(() => {
      this.gapTimer = undefined;
      this.draining = false;
      this.burstStart = undefined;
      this.pump();
    }, gapMs);
    // Not unref'd: output still waits for this gap to end (a run is not done until it was written).
    return true;
  }

  private pump(): void {
    if (!this.open) return;
    while (this.queue.length > 0 && this.windowOpen() && !this.inGap()) {
      // Consecutive pieces with the same tag go out as one write that ends where the next request is due.
      const tag = this.queue[0]!.tag;
      const parts: string[] = [];
      let rawBytes = 0;
      let budget = Math.min(this.limits.requestEvery - this.sinceRequest, this.limits.window - this.unanswered);
      while (budget > 0 && this.queue.length > 0 && this.queue[0]!.tag === tag) {
        const item = this.queue[0]!;
        if (item.raw) {
          // Bytes for characters: the decoded text may be shorter (UTF-8) or longer (`\n` → `\r\n`); the window counts the text.
          const raw = item.raw;
          const take = Math.min(raw.data.length, budget);
          const whole = take === raw.data.length;
          const piece = whole ? raw.data : raw.data.subarray(0, take);
          if (whole) this.queue.shift();
          else raw.data = raw.data.subarray(take);
          if (take > 0) parts.push(this.sink.decode?.(raw, piece) ?? piece.toString('utf8'));
          if (whole && raw.end) parts.push(this.sink.decode?.(raw, undefined) ?? '');
          budget -= Math.max(take, 1);
          this.queued -= take;
          rawBytes += take;
          continue;
        }
        let take = Math.min(item.text.length, budget);
        // Never between the two halves of a surrogate pair.
        if (take < item.text.length && isLowSurrogate(item.text.charCodeAt(take)) && take > 1) take--;
        if (take === item.text.length) {
          this.queue.shift();
          parts.push(item.text);
        } else {
          parts.push(item.text.slice(0, take));
          item.text = item.text.slice(take);
        }
        budget -= take;
        this.queued -= take;
      }
      const text = parts.length === 1 ? parts[0]! : parts.join('');
      if (text) this.write(text, tag);
      if (rawBytes > 0) this.sink.consumed?.(rawBytes);
    }
    this.settleDrained();
    if (this.dropped !== undefined && this.queued < this.limits.resumeBelow) {
      const notice = this.sink.skipped(this.dropped);
      this.dropped = undefined;
      this.queue.push({ text: notice, tag: false });
      this.queued += notice.length;
      this.pump();
      return;
    }
    if (this.mode === 'pause' && !this.paused && this.queued > this.limits.pauseAbove) {
      this.paused = true;
      this.sink.hold(true);
    } else if (this.paused && this.queued < this.limits.resumeBelow) {
      this.paused = false;
      this.sink.hold(false);
    }
  }

  private write(text: string, tag: boolean): void {
    // The process's own status requests, in order with ours (a request split across writes counts once).
    const scan = this.carry + text;
    for (let i = scan.indexOf(STATUS_REQUEST); i >= 0; i = scan.indexOf(STATUS_REQUEST, i + 1)) this.requests.push({ ours: false });
    this.carry = scan.slice(-(STATUS_REQUEST.length - 1));
    this.sink.write(text, tag);
    this.lastWriteAt = this.clock.now();
    this.written += text.length;
    this.sinceRequest += text.length;
    if (this.sinceRequest >= this.limits.requestEvery) this.request(tag);
  }

  private request(tag: boolean): void {
    this.sinceRequest = 0;
    this.carry = '';
    this.requests.push({ ours: true, at: this.written, expired: false, sentAt: this.clock.now() });
    this.sink.write(STATUS_REQUEST, tag);
    this.armTimer();
  }

  /** One timer, for the oldest live request of ours: unanswered in time, it counts as answered. */
  private armTimer(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const oldest = this.requests.find((r) => r.ours && !r.expired);
    if (!oldest || !oldest.ours || !this.open) return;
    const due = oldest.sentAt + this.limits.requestTimeoutMs - this.clock.now();
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        oldest.expired = true;
        this.acked = Math.max(this.acked, oldest.at);
        // Its late answer is still taken out; a terminal that never answers leaves a bounded trail.
        if (this.requests.length > 1024) this.requests.splice(0, this.requests.length - 1024);
        this.armTimer();
        this.pump();
      },
      Math.max(0, due),
    );
  }
}
