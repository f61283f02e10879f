import { statfsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { makePrivateSubdir, sweepDeadDirs } from '../util';
import { DEFAULT_SPOOL_PROCESS_BYTES, DEFAULT_SPOOL_TOTAL_BYTES, OutputSpool, SPOOL_DIR_PREFIX, SPOOL_RECORD_HEADER } from './outputSpool';

/*
 * The server's side of the output spool (docs/architecture.md "Output spool"): one directory for
 * every process's spool (./outputSpool.ts), and the caps across them.
 */

export interface SpoolLimits {
  /** Output one process keeps for replay, memory window included (default 64 MiB; 0: no spool). */
  processBytes?: number;
  /** Spooled output of all processes of this server (default 1 GiB). */
  totalBytes?: number;
  /** Size of one segment file (default 4 MiB; tests make it small). */
  segmentBytes?: number;
  /** Free bytes of the file system holding `dir` (default: statfs; tests pass a small one). */
  freeBytes?: (dir: string) => number;
}

/**
 * Share of its file system's free space the spool may take. The private directory is often a
 * tmpfs (`$XDG_RUNTIME_DIR`, or `/tmp` on many distributions): memory, shared with other programs'
 * sockets and locks, usually a tenth of RAM. Filling it would break them and spend RAM the cap was
 * meant to save.
 */
const FREE_SPACE_SHARE = 0.5;

function statfsFreeBytes(dir: string): number {
  const st = statfsSync(dir);
  return st.bavail * st.bsize;
}

/**
 * The server's spools: their directory (made at the first spooled byte), the per-server cap and the
 * order in which capped bytes go: first the oldest bytes of the processes that finished longest
 * ago, then those of the oldest running ones.
 */
export class SpoolStore {
  readonly processBytes: number;
  readonly totalBytes: number;
  readonly segmentBytes: number;
  /** The cap in force: `totalBytes`, or less where the spool's file system has less room (set with the directory). */
  private capBytes: number;
  private readonly freeBytes: (dir: string) => number;
  private dir: string | undefined;
  private failed = false;
  /** Every open spool, oldest first; finished ones also in `finished`, in the order they finished. */
  private readonly spools = new Set<OutputSpool>();
  private readonly finished = new Set<OutputSpool>();
  private retained = 0;
  private seqNo = 0;

  constructor(
    limits: SpoolLimits = {},
    private readonly log?: (line: string) => void,
  ) {
    this.processBytes = limits.processBytes ?? DEFAULT_SPOOL_PROCESS_BYTES;
    this.totalBytes = limits.totalBytes ?? DEFAULT_SPOOL_TOTAL_BYTES;
    this.segmentBytes = Math.max(SPOOL_RECORD_HEADER + 1, limits.segmentBytes ?? 4 * 1024 * 1024);
    this.capBytes = this.totalBytes;
    this.freeBytes = limits.freeBytes ?? statfsFreeBytes;
    for (const [name, v] of [
      ['processBytes', this.processBytes],
      ['totalBytes', this.totalBytes],
    ] as const) {
      if (!Number.isSafeInteger(v) || v < 0) throw new Error(`spool ${name} must be a non-negative integer, got ${v}`);
    }
    // What servers killed before their stop left behind.
    sweepDeadDirs(SPOOL_DIR_PREFIX);
  }

  get enabled(): boolean {
    return this.processBytes > 0 && this.totalBytes > 0 && !this.failed;
  }

  /** The per-server cap in force (at most `totalBytes`; less on a small file system). */
  get effectiveTotalBytes(): number {
    return this.capBytes;
  }

  /** Payload bytes spooled by all processes of this server. */
  get retainedBytes(): number {
    return this.retained;
  }

  /** The spool directory, once something was spooled. */
  get directory(): string | undefined {
    return this.dir;
  }

  /**
   * A spool for one process (nothing is on disk until its first append), keeping at most
   * `processBytes`: what its session's client asked for (default `processBytes` of the server),
   * never more than the server's total.
   */
  create(processBytes = this.processBytes): OutputSpool | undefined {
    const cap = Math.min(processBytes, this.totalBytes);
    if (!this.enabled || cap <= 0) return undefined;
    const s = new OutputSpool(this, ++this.seqNo, cap);
    this.spools.add(s);
    return s;
  }

  /** @internal the directory, made on first use; undefined if it cannot be (then nothing is spooled). */
  directoryForWrite(): string | undefined {
    if (this.dir || this.failed) return this.dir;
    try {
      this.dir = makePrivateSubdir(SPOOL_DIR_PREFIX);
      this.fitCapTo(this.dir);
    } catch (e) {
      this.failed = true;
      this.log?.(`output spool disabled: ${(e as Error).message}`);
    }
    return this.dir;
  }

  /** At most `FREE_SPACE_SHARE` of the free space where the spool lives, measured when it is made. */
  private fitCapTo(dir: string): void {
    let free: number;
    try {
      free = this.freeBytes(dir);
    } catch {
      return; // no statfs here: the configured cap stands
    }
    const room = Math.floor(Math.max(0, free) * FREE_SPACE_SHARE);
    if (room >= this.totalBytes) return;
    this.capBytes = room;
    const mib = (n: number) => (n >= 1048576 ? `${Math.round(n / 1048576)} MiB` : `${Math.round(n / 1024)} KiB`);
    this.log?.(
      `output spool: ${dir} has ${mib(free)} free, so this server spools at most ${mib(room)} (half of it) instead of ${mib(this.totalBytes)}; the oldest output goes first`,
    );
  }

  /** @internal */
  adjust(delta: number): void {
    this.retained += delta;
    if (delta > 0 && this.retained > this.capBytes) this.enforce();
  }

  /** @internal the process finished: its bytes are the first to go when the server is over its cap. */
  markFinished(s: OutputSpool): void {
    if (this.spools.has(s)) this.finished.add(s);
  }

  /** @internal */
  forget(s: OutputSpool): void {
    this.spools.delete(s);
    this.finished.delete(s);
  }

  /** @internal a write failed (disk full, directory removed): say so once. */
  writeFailed(e: unknown): void {
    this.log?.(`output spool write failed, spooled output of a process is dropped: ${(e as Error).message}`);
  }

  private enforce(): void {
    for (const order of [this.finished, this.spools]) {
      for (const s of order) {
        if (this.retained <= this.capBytes) return;
        s.dropOldest(this.retained - this.capBytes);
      }
    }
  }

  /** Server stop: every spool closed and the directory removed. */
  async dispose(): Promise<void> {
    const all = [...this.spools];
    await Promise.all(all.map((s) => s.release()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
    this.dir = undefined;
  }
}
