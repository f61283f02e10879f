import type { ProcessReadResult } from '../protocol';
import type { ProcessEvent } from './types';

export type SeqEvent = Exclude<ProcessEvent, { type: 'failed' }>;

export interface MergeOutcome {
  /** Events that became publishable, in seq order. */
  events: SeqEvent[];
  /** Seqs the server no longer holds (evicted), inclusive; publishing stops before them. */
  lost?: { fromSeq: number; toSeq: number };
}

/**
 * Per-process ordering: output, exited and closed share one seq (1, 2, …; `closed` is last).
 * Events are published strictly in seq order; early ones wait in `pending` until the gap before
 * them fills; duplicates (the same seq by notification and by `process/read`) are dropped.
 */
export class SeqOrderer {
  private last = 0;
  private readonly pending = new Map<number, SeqEvent>();
  private exitKnown = false;
  private closedKnown = false;

  /** Highest seq published so far (0 before any). */
  get lastPublished(): number {
    return this.last;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Seq for a `closed` that came without one (older servers): after everything seen. */
  seqForUnnumberedClosed(): number {
    let max = this.last;
    for (const s of this.pending.keys()) max = Math.max(max, s);
    return max + 1;
  }

  /** Publishing starts after `seq` (an attach that finds older output evicted): nothing up to it is awaited. */
  skipTo(seq: number): void {
    if (seq <= this.last) return;
    this.last = seq;
    for (const s of [...this.pending.keys()]) if (s <= seq) this.pending.delete(s);
  }

  /** Adds one event; returns the events now publishable in order (often just this one). */
  push(event: SeqEvent): SeqEvent[] {
    this.add(event);
    return this.drain();
  }

  /**
   * Merges a catch-up `process/read {afterSeq: lastPublished}` answer (no `maxBytes`) with what
   * live notifications already delivered. `nextSeq - 1` is the last seq the server assigned; exit
   * and close events are not in `chunks`, so they are rebuilt: `closed` is that last seq, `exited`
   * is the highest seq otherwise unaccounted for. Any other missing seq was evicted.
   */
  mergeRead(read: ProcessReadResult): MergeOutcome {
    for (const c of read.chunks) {
      if (c.seq > this.last) this.add({ type: 'output', seq: c.seq, stream: c.stream, data: Buffer.from(c.chunk, 'base64') });
    }
    const lastAssigned = read.nextSeq - 1;
    const missing: number[] = [];
    for (let s = this.last + 1; s <= lastAssigned; s++) if (!this.pending.has(s)) missing.push(s);
    if (read.closed && !this.closedKnown && missing[missing.length - 1] === lastAssigned) {
      missing.pop();
      this.add({ type: 'closed', seq: lastAssigned });
    }
    if (read.exited && !this.exitKnown && missing.length > 0) {
      const seq = missing.pop()!;
      this.add({ type: 'exited', seq, exitCode: read.exitCode ?? -1, sandboxDenied: read.sandboxDenied });
    }
    const events = this.drain();
    if (missing.length === 0) return { events };
    return { events, lost: { fromSeq: missing[0]!, toSeq: missing[missing.length - 1]! } };
  }

  /**
   * Merges an answer of a server that spools (`execBridgeOutputSpool`, docs/protocol-extensions.md):
   * a spool page (`execBridgeSpooled`: every seq from its first chunk to `nextSeq - 1` is a chunk or
   * `execBridgeExitSeq`), or the last answer of a replay (then as `mergeRead`). Seqs before the
   * first chunk that were never published are output the server's cap dropped: with `skipDropped`
   * (an attach) publishing goes on after them, else (a catch-up) they are `lost`.
   */
  mergeSpooled(read: ProcessReadResult, skipDropped: boolean): MergeOutcome {
    const first = read.chunks[0]?.seq;
    const events: SeqEvent[] = [];
    const exitSeq = read.execBridgeExitSeq;
    const exited = (seq: number): SeqEvent => ({ type: 'exited', seq, exitCode: read.exitCode ?? -1, sandboxDenied: read.sandboxDenied });
    const gap = first !== undefined && first > this.last + 1 && !this.pending.has(this.last + 1);
    if (gap && !skipDropped && read.execBridgeSpooled && !(first === this.last + 2 && exitSeq === this.last + 1))
      return { events, lost: { fromSeq: this.last + 1, toSeq: first - 1 } };
    if (gap && skipDropped) {
      if (exitSeq !== undefined && exitSeq > this.last && exitSeq < first && !this.exitKnown) {
        this.skipTo(exitSeq - 1);
        this.add(exited(exitSeq));
        events.push(...this.drain());
      }
      this.skipTo(first - 1);
    }
    if (!read.execBridgeSpooled) {
      const rest = this.mergeRead(read);
      return { ...rest, events: [...events, ...rest.events] };
    }
    for (const c of read.chunks) {
      if (c.seq > this.last) this.add({ type: 'output', seq: c.seq, stream: c.stream, data: Buffer.from(c.chunk, 'base64') });
    }
    if (exitSeq !== undefined && exitSeq > this.last && exitSeq < read.nextSeq && !this.exitKnown) this.add(exited(exitSeq));
    events.push(...this.drain());
    return { events };
  }

  private add(event: SeqEvent): void {
    if (event.seq <= this.last || this.pending.has(event.seq)) return;
    this.pending.set(event.seq, event);
    if (event.type === 'exited') this.exitKnown = true;
    if (event.type === 'closed') this.closedKnown = true;
  }

  private drain(): SeqEvent[] {
    const out: SeqEvent[] = [];
    for (;;) {
      const next = this.pending.get(this.last + 1);
      if (!next) break;
      this.pending.delete(next.seq);
      this.last = next.seq;
      out.push(next);
    }
    return out;
  }
}
