import type { Writable } from 'node:stream';
import type { IPty } from 'node-pty';
import type { WriteStatus } from '../protocol';
import { RpcError } from '../rpc';

/** writeIds remembered per process: a write sent again (a retry after a resume) is one write. */
const WRITE_ID_MEMORY = 4096;
/** A pipe write is answered at once unless this much is already queued for the child's stdin. */
const STDIN_QUEUE_LIMIT = 8 * 1024 * 1024;

/** What a process's stdin writer needs of its process (./managedProcess.ts). */
export interface StdinTarget {
  /** A PTY or a piped stdin: it takes input at all. */
  accepts(): boolean;
  /** Exited or destroyed: writes fail. */
  ended(): boolean;
  pty(): IPty | undefined;
  stdin(): Writable | undefined;
  /** While the process's start may be run again (./sandbox/coverRace.ts): pipe writes wait for this first. */
  ready?(): Promise<void> | undefined;
  /** Told each pipe write (kept for such a run again). */
  wrote?(data: Buffer): void;
}

/**
 * `process/write` for one process: each writeId is written once (a repeat answers like the first),
 * PTY writes go straight in, and pipe writes are queued one at a time behind a bounded stdin queue.
 */
export class StdinWriter {
  private readonly writeIds = new Set<string>();
  private readonly writeOrder: string[] = [];
  /** Pipe writes not yet answered, by writeId; each starts once the one before it was answered. */
  private readonly pipeWrites = new Map<string, Promise<WriteStatus>>();
  private pipeTail: Promise<unknown> = Promise.resolve();

  constructor(private readonly target: StdinTarget) {}

  async write(data: Buffer, writeId: string): Promise<WriteStatus> {
    if (!this.target.accepts()) return 'stdinClosed';
    if (this.writeIds.has(writeId)) return 'accepted';
    // The same write sent again while it waits its turn: one write, one outcome.
    const waiting = this.pipeWrites.get(writeId);
    if (waiting) return waiting;
    if (this.target.ended()) throw RpcError.internal('failed to write to process stdin');
    const pty = this.target.pty();
    if (pty) {
      if (data.length > 0) pty.write(data);
      this.rememberWrite(writeId);
      return 'accepted';
    }
    // Pipe writes go in one at a time while one is held: each then waits in its request (which the
    // connection's request budget counts), not in the child's stdin queue, which stays below
    // STDIN_QUEUE_LIMIT plus one write (120 concurrent 11 MiB writes once queued 1.3 GB there).
    const run = () => this.writePipe(data, writeId);
    const write = this.pipeWrites.size === 0 ? run() : this.pipeTail.then(run, run);
    this.pipeTail = write;
    this.pipeWrites.set(writeId, write);
    const settled = () => {
      if (this.pipeWrites.get(writeId) === write) this.pipeWrites.delete(writeId);
    };
    write.then(settled, settled);
    return write;
  }

  private async writePipe(data: Buffer, writeId: string): Promise<WriteStatus> {
    for (let i = 0, wait = this.target.ready?.(); wait && i < 8; i++, wait = this.target.ready?.()) await wait;
    const stdin = this.target.stdin();
    if (this.target.ended() || !stdin || stdin.destroyed || !stdin.writable) throw RpcError.internal('failed to write to process stdin');
    if (data.length > 0) stdin.write(data);
    this.target.wrote?.(data);
    if (stdin.writableLength > STDIN_QUEUE_LIMIT) {
      // The child is not reading: hold the answer (and so the client's next write) until it does.
      await new Promise<void>((resolve) => {
        const done = () => {
          stdin.off('drain', done);
          stdin.off('close', done);
          resolve();
        };
        stdin.on('drain', done);
        stdin.on('close', done);
      });
    }
    this.rememberWrite(writeId);
    return 'accepted';
  }

  private rememberWrite(writeId: string): void {
    this.writeIds.add(writeId);
    this.writeOrder.push(writeId);
    if (this.writeOrder.length > WRITE_ID_MEMORY) this.writeIds.delete(this.writeOrder.shift()!);
  }
}
