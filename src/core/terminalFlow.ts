import { systemClock, type Clock, type TimerHandle } from '../util/clock';

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
  /** A status request goes out after this many characters (below `window`, or the window never reopens). */
  requestEvery: number;
  /** Queued characters above which the process is paused, and below which it is resumed. */
  pauseAbove: number;
  resumeBelow: number;
  /** Without a pause (a codex executor): queued characters beyond this are not shown (one notice line says so). */
  dropAbove: number;
  /** An unanswered request counts as answered after this (a terminal that never answers must not stop the run). */
  requestTimeoutMs: number;
}

export const DEFAULT_FLOW_LIMITS: FlowLimits = {
  window: 512 * 1024,
  requestEvery: 64 * 1024,
  pauseAbove: 1024 * 1024,
  resumeBelow: 256 * 1024,
  dropAbove: 16 * 1024 * 1024,
  requestTimeoutMs: 2000,
};

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** An outstanding status request: ours (written at character `at`) or the process's own (its answer is the process's). */
type Request = { ours: true; at: number; expired: boolean; sentAt: number } | { ours: false };

export interface FlowSink {
  /** Text for the terminal; `tag` is what `push` was given with it. */
  write(text: string, tag: boolean): void;
  /** Pause (true) or resume (false) the process behind the terminal. */
  hold(paused: boolean): void;
  /** The line that stands for `chars` characters that were not shown. */
  skipped(chars: number): string;
}

/**
 * Flow control between a process and a terminal emulator, in plain TS (no `vscode`):
 * - at most `window` characters are in the terminal unanswered for; a status request goes out every
 *   `requestEvery` characters and its answer (taken out of the terminal's input) reopens the window;
 * - text beyond that waits in a queue; above `pauseAbove` queued characters the process is paused
 *   (its server stops reading it, so it blocks; nothing is lost), below `resumeBelow` it resumes;
 * - a process that cannot be paused (a codex executor) has text beyond `dropAbove` queued
 *   characters dropped until the queue drains, and one line says how much.
 * Requests the process itself writes are tracked in order, so their answers still reach it.
 */
export class TerminalFlow {
  private queue: Array<{ text: string; tag: boolean }> = [];
  private queued = 0;
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

  constructor(
    private readonly sink: FlowSink,
    private canPause: boolean,
    private readonly limits: FlowLimits = DEFAULT_FLOW_LIMITS,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Characters queued here, not yet given to the terminal. */
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
  newProcess(canPause: boolean): void {
    this.canPause = canPause;
    this.paused = false;
    this.pump();
  }

  push(text: string, tag = false): void {
    if (!text) return;
    if (!this.canPause && this.dropped === undefined && this.queued + text.length > this.limits.dropAbove) this.dropped = 0;
    if (this.dropped !== undefined) {
      this.dropped += text.length;
      this.pump();
      return;
    }
    this.queue.push({ text, tag });
    this.queued += text.length;
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

  /** Nothing more is shown (the terminal closed). */
  dispose(): void {
    this.open = false;
    this.queue = [];
    this.queued = 0;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private pump(): void {
    if (!this.open) return;
    while (this.queue.length > 0 && this.unanswered < this.limits.window) {
      // Consecutive pieces with the same tag go out as one write that ends where the next request is due.
      const tag = this.queue[0]!.tag;
      const parts: string[] = [];
      let budget = Math.min(this.limits.requestEvery - this.sinceRequest, this.limits.window - this.unanswered);
      while (budget > 0 && this.queue.length > 0 && this.queue[0]!.tag === tag) {
        const item = this.queue[0]!;
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
      this.write(parts.length === 1 ? parts[0]! : parts.join(''), tag);
    }
    if (this.dropped !== undefined && this.queued < this.limits.resumeBelow) {
      const notice = this.sink.skipped(this.dropped);
      this.dropped = undefined;
      this.queue.push({ text: notice, tag: false });
      this.queued += notice.length;
      this.pump();
      return;
    }
    if (this.canPause && !this.paused && this.queued > this.limits.pauseAbove) {
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
    this.written += text.length;
    this.sinceRequest += text.length;
    if (this.sinceRequest >= this.limits.requestEvery) {
      this.sinceRequest = 0;
      this.carry = '';
      this.requests.push({ ours: true, at: this.written, expired: false, sentAt: this.clock.now() });
      this.sink.write(STATUS_REQUEST, tag);
      this.armTimer();
    }
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
    this.timer.unref?.();
  }
}
