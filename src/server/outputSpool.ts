import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { OutputStream } from '../protocol';
import type { SpoolStore } from './spoolStore';

/*
 * Output spooled to disk (docs/architecture.md "Output spool"). What a process's in-memory window
 * (./outputWindow.ts, the newest 1 MiB) evicts is appended to segment files in a directory of the
 * private directory (`spool-<pid>-XXXXXX/`, 0700; files 0600), so a client that asks for it
 * (`execBridgeOutputSpool`, docs/protocol-extensions.md) can read every byte still spooled, with
 * its original seq. Bounded per process and per server; the oldest bytes go first.
 */

/** `<private dir>/spool-<pid>-XXXXXX/`: one per server; a server start removes those of dead pids. */
export const SPOOL_DIR_PREFIX = 'spool-';
export const DEFAULT_SPOOL_PROCESS_BYTES = 64 * 1024 * 1024;
export const DEFAULT_SPOOL_TOTAL_BYTES = 1024 * 1024 * 1024;
/** A spool page carries at most this much when the reader gives no `maxBytes`. */
export const SPOOL_PAGE_BYTES = 1024 * 1024;

/** Record header: seq (f64), stream (u8), 3 spare bytes, payload length (u32), little-endian. */
/** A record's header: seq, stream and length. */
export const SPOOL_RECORD_HEADER = 16;
const HEADER = SPOOL_RECORD_HEADER;
const STREAMS: OutputStream[] = ['stdout', 'stderr', 'pty'];
/** Appends are batched into buffers of this size before they go to the file. */
const BATCH_BYTES = 256 * 1024;
/** Above this much not yet written, the process stops reading its child (`congested`); below the low mark it resumes. */
const WRITE_HIGH_WATER = 4 * 1024 * 1024;
const WRITE_LOW_WATER = 1024 * 1024;
/** A record gets an index entry once this much payload came after the previous entry: the trim granularity. */
const INDEX_STRIDE = 16 * 1024;
/** Files are read in blocks of this size. */
const READ_BLOCK = 256 * 1024;

export interface SpooledChunk {
  seq: number;
  stream: OutputStream;
  /** Base64, as `process/read` sends it. */
  chunk: string;
}

/** An index entry: a record boundary, with the payload spooled before it (since the spool began). */
interface Entry {
  seq: number;
  offset: number;
  payloadBefore: number;
}

interface Segment {
  path: string;
  /** File bytes appended (written or queued). */
  size: number;
  /** File bytes written: what a read may look at. */
  written: number;
  entries: Entry[];
  lastSeq: number;
  /** Payload appended up to the end of this segment (since the spool began). */
  payloadEnd: number;
  fh: Promise<FileHandle> | undefined;
}

/**
 * One process's spool: records (seq, stream, bytes) appended in seq order to segment files of
 * `segmentBytes`; a sparse index (an entry every ~16 KiB of payload) finds a seq; the logical start
 * moves forward over whole records when a cap drops bytes, and a segment wholly before it is removed.
 * Reads wait for the writes queued before them, then read only the asked range, block by block.
 */
export class OutputSpool {
  private readonly segments: Segment[] = [];
  /** The oldest retained record: its seq, segment (index into `segments`) and entry. */
  private start = { seq: 0, segment: 0, entry: 0 };
  /** Payload appended since the spool began, and the payload before the logical start. */
  private appended = 0;
  private dropped = 0;
  private lastSeqValue = 0;
  private batch: { buf: Buffer; used: number; segment: Segment } | undefined;
  private flushScheduled = false;
  /** Every write, segment close and removal runs on this chain, in order. */
  private chain: Promise<void> = Promise.resolve();
  private unwritten = 0;
  private drainWaiters: Array<() => void> = [];
  private broken = false;
  private released = false;
  private sinceEntry = Infinity;
  /** Segments removed so far (file names stay unique). */
  private removedSegments = 0;

  constructor(
    private readonly store: SpoolStore,
    private readonly id: number,
    private readonly processBytes: number,
  ) {}

  /** Output one process keeps for replay (its memory window included). */
  get capBytes(): number {
    return this.processBytes;
  }

  /** Payload bytes retained on disk for replay. */
  get retainedBytes(): number {
    return this.appended - this.dropped;
  }

  /** Payload bytes ever appended. */
  get appendedBytes(): number {
    return this.appended;
  }

  /** Seq of the newest spooled record (0: none). */
  get lastSeq(): number {
    return this.lastSeqValue;
  }

  /** Seq of the oldest retained record, or undefined when nothing is retained. */
  get firstSeq(): number | undefined {
    return this.retainedBytes > 0 ? this.start.seq : undefined;
  }

  /** More than the high-water mark waits to be written: the caller should stop producing. */
  get congested(): boolean {
    return this.unwritten > WRITE_HIGH_WATER;
  }

  /** Resolves once the unwritten amount is below the low-water mark (or the spool is released). */
  whenDrained(): Promise<void> {
    if (this.unwritten <= WRITE_LOW_WATER || this.released) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Appends one output event (copied: `data` may be reused once this returns). */
  append(seq: number, stream: OutputStream, data: Buffer): void {
    if (this.released || this.broken) return;
    const dir = this.store.directoryForWrite();
    if (!dir) {
      this.broken = true;
      return;
    }
    const n = data.length;
    const rec = HEADER + n;
    let seg = this.segments[this.segments.length - 1];
    if (!seg || (seg.size > 0 && seg.size + rec > this.store.segmentBytes)) seg = this.newSegment(dir);
    const empty = this.retainedBytes === 0;
    if (empty) this.start = { seq, segment: this.segments.length - 1, entry: seg.entries.length };
    if (empty || seg.entries.length === 0 || this.sinceEntry >= INDEX_STRIDE) {
      seg.entries.push({ seq, offset: seg.size, payloadBefore: this.appended });
      this.sinceEntry = 0;
    }
    this.sinceEntry += n;
    this.writeRecord(seg, seq, stream, data);
    seg.size += rec;
    seg.lastSeq = seq;
    this.appended += n;
    seg.payloadEnd = this.appended;
    this.lastSeqValue = seq;
    this.store.adjust(n);
  }

  /** Keeps at most `bytes` of payload: the oldest whole records beyond it are dropped. */
  trimTo(bytes: number): void {
    if (this.retainedBytes > bytes) this.dropOldest(this.retainedBytes - bytes);
  }

  /**
   * Drops at least `bytes` of the oldest payload (or everything), moving the start to an index
   * entry; segments wholly before it are removed. Returns the payload dropped.
   */
  dropOldest(bytes: number): number {
    const before = this.dropped;
    const goal = this.dropped + bytes;
    // The first index entry after the start with at least `goal` payload before it; none: everything goes.
    let found: { segment: number; entry: number } | undefined;
    for (let si = this.start.segment, ei = this.start.entry + 1; si < this.segments.length && !found; si++, ei = 0) {
      const seg = this.segments[si]!;
      if (seg.payloadEnd < goal) continue;
      for (; ei < seg.entries.length; ei++) {
        if (seg.entries[ei]!.payloadBefore >= goal) {
          found = { segment: si, entry: ei };
          break;
        }
      }
    }
    let droppedTo: number;
    if (!found) {
      droppedTo = this.appended;
      this.start = { seq: this.lastSeqValue + 1, segment: this.segments.length, entry: 0 };
    } else {
      const en = this.segments[found.segment]!.entries[found.entry]!;
      droppedTo = en.payloadBefore;
      this.start = { seq: en.seq, ...found };
    }
    this.store.adjust(-(droppedTo - this.dropped));
    this.dropped = droppedTo;
    this.removeSegmentsBefore(this.start.segment);
    return this.dropped - before;
  }

  /** The process is done: its spooled bytes go first when the server is over its cap. */
  finished(): void {
    this.store.markFinished(this);
  }

  /**
   * Up to `maxBytes` of spooled output (at least one record if any) with seq > afterSeq, oldest
   * first, and the seq to read on from. Empty when nothing spooled is newer than `afterSeq`.
   */
  async read(afterSeq: number, maxBytes: number): Promise<{ chunks: SpooledChunk[]; nextSeq: number }> {
    if (afterSeq >= this.lastSeqValue || this.released) return { chunks: [], nextSeq: afterSeq + 1 };
    this.flushBatch();
    const flushed = this.chain;
    await flushed;
    for (let attempt = 0; attempt < 8; attempt++) {
      if (this.released || this.retainedBytes === 0) break;
      const target = Math.max(afterSeq + 1, this.start.seq);
      const at = this.locate(target);
      if (!at) break;
      try {
        return await this.readFrom(at.segment, at.offset, target, maxBytes);
      } catch (e) {
        // The segment went meanwhile (a cap dropped it): look again from the new start.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    return { chunks: [], nextSeq: afterSeq + 1 };
  }

  /** Closes and removes this spool's files (the process record was released). */
  release(): Promise<void> {
    if (this.released) return this.chain;
    this.released = true;
    this.batch = undefined;
    this.store.adjust(-this.retainedBytes);
    this.dropped = this.appended;
    this.store.forget(this);
    const segs = this.segments.splice(0);
    this.wakeDrained(true);
    return this.enqueue(async () => {
      for (const s of segs) await this.closeAndRemove(s);
    });
  }

  // ---- internals ----

  private newSegment(dir: string): Segment {
    this.flushBatch();
    const seg: Segment = {
      path: join(dir, `${this.id}-${this.segments.length + this.removedSegments}.out`),
      size: 0,
      written: 0,
      entries: [],
      lastSeq: 0,
      payloadEnd: this.appended,
      fh: undefined,
    };
    this.segments.push(seg);
    return seg;
  }

  private writeRecord(seg: Segment, seq: number, stream: OutputStream, data: Buffer): void {
    const rec = HEADER + data.length;
    if (this.batch && (this.batch.segment !== seg || this.batch.used + rec > this.batch.buf.length)) this.flushBatch();
    this.batch ??= { buf: Buffer.allocUnsafe(Math.max(BATCH_BYTES, rec)), used: 0, segment: seg };
    const b = this.batch;
    b.buf.writeDoubleLE(seq, b.used);
    b.buf.writeUInt32LE(STREAMS.indexOf(stream), b.used + 8);
    b.buf.writeUInt32LE(data.length, b.used + 12);
    data.copy(b.buf, b.used + HEADER);
    b.used += rec;
    this.unwritten += rec;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flushBatch();
      });
    }
  }

  private flushBatch(): void {
    const b = this.batch;
    if (!b || b.used === 0) return;
    this.batch = undefined;
    const seg = b.segment;
    const bytes = b.buf.subarray(0, b.used);
    void this.enqueue(async () => {
      try {
        if (!this.broken && !this.released) {
          seg.fh ??= open(seg.path, 'a', 0o600);
          const fh = await seg.fh;
          let off = 0;
          while (off < bytes.length) off += (await fh.write(bytes, off, bytes.length - off)).bytesWritten;
          seg.written += bytes.length;
        }
      } catch (e) {
        this.fail(e);
      } finally {
        this.unwritten -= bytes.length;
        this.wakeDrained(false);
      }
    });
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const p = this.chain.then(step, step);
    this.chain = p.catch(() => undefined);
    return this.chain;
  }

  private wakeDrained(all: boolean): void {
    if (!all && this.unwritten > WRITE_LOW_WATER) return;
    const ws = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of ws) w();
  }

  /** A write failed: everything spooled is dropped and nothing more is spooled. */
  private fail(e: unknown): void {
    if (this.broken) return;
    this.broken = true;
    this.store.writeFailed(e);
    this.dropOldest(this.retainedBytes);
  }

  private removeSegmentsBefore(index: number): void {
    // Never the segment appended to (it is the last one).
    const n = Math.min(index, this.segments.length - 1);
    if (n <= 0) return;
    const gone = this.segments.splice(0, n);
    this.removedSegments += n;
    this.start.segment -= n;
    if (this.batch && gone.includes(this.batch.segment)) this.flushBatch();
    void this.enqueue(async () => {
      for (const s of gone) await this.closeAndRemove(s);
    });
  }

  private async closeAndRemove(s: Segment): Promise<void> {
    try {
      if (s.fh) await (await s.fh).close();
    } catch {
      // never opened (its open failed): nothing to close
    }
    await rm(s.path, { force: true }).catch(() => undefined);
  }

  /** The segment and file offset of the index entry at or before `seq` (not before the start). */
  private locate(seq: number): { segment: number; offset: number } | undefined {
    let si = this.start.segment;
    while (si < this.segments.length && this.segments[si]!.lastSeq < seq) si++;
    const seg = this.segments[si];
    if (!seg || seg.entries.length === 0) return undefined;
    let lo = si === this.start.segment ? this.start.entry : 0;
    let hi = seg.entries.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (seg.entries[mid]!.seq <= seq) lo = mid;
      else hi = mid - 1;
    }
    return { segment: si, offset: seg.entries[lo]!.offset };
  }

  private async readFrom(
    segIndex: number,
    offset: number,
    target: number,
    maxBytes: number,
  ): Promise<{ chunks: SpooledChunk[]; nextSeq: number }> {
    const chunks: SpooledChunk[] = [];
    let total = 0;
    let last = target - 1;
    let seg: Segment | undefined = this.segments[segIndex];
    let pos = offset;
    while (seg) {
      // Opened for each read: a segment removed meanwhile is ENOENT (the caller looks again).
      const fh = await open(seg.path, 'r');
      try {
        let carry = Buffer.alloc(0);
        // Only what was written: appends queued meanwhile are read by the next page.
        while (pos < seg.written) {
          const want = Math.min(READ_BLOCK, seg.written - pos);
          const block = Buffer.allocUnsafe(want);
          const { bytesRead } = await fh.read(block, 0, want, pos);
          if (bytesRead === 0) break;
          pos += bytesRead;
          let buf = carry.length > 0 ? Buffer.concat([carry, block.subarray(0, bytesRead)]) : block.subarray(0, bytesRead);
          let off = 0;
          while (buf.length - off >= HEADER) {
            const len = buf.readUInt32LE(off + 12);
            if (buf.length - off < HEADER + len) break;
            const seq = buf.readDoubleLE(off);
            if (seq >= target) {
              if (chunks.length > 0 && total + len > maxBytes) return { chunks, nextSeq: last + 1 };
              const stream = STREAMS[buf.readUInt32LE(off + 8)] ?? 'stdout';
              chunks.push({ seq, stream, chunk: buf.toString('base64', off + HEADER, off + HEADER + len) });
              total += len;
              last = seq;
              if (total >= maxBytes) return { chunks, nextSeq: last + 1 };
            }
            off += HEADER + len;
          }
          carry = Buffer.from(buf.subarray(off));
          buf = carry;
        }
      } finally {
        await fh.close();
      }
      if (seg.written < seg.size) break;
      const at = this.segments.indexOf(seg);
      seg = at >= 0 ? this.segments[at + 1] : undefined;
      pos = 0;
    }
    return { chunks, nextSeq: last + 1 };
  }
}
