import { execFile } from 'node:child_process';
import { closeSync, constants, openSync, rmSync, unlink } from 'node:fs';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { join } from 'node:path';
import { makePrivateSubdir, sweepDeadDirs } from '../util';
import { findSystemTool } from './executables';

/**
 * Real pipes for a child's stdio. Node's `stdio: 'pipe'` hands the child a *socket* pair, and that
 * breaks ordinary programs: `/dev/stdin` and `/dev/stdout` cannot be opened on a socket (ENXIO:
 * `head -c 3 /dev/stdin`, `echo x > /dev/stdout`), and Debian's bash sources ~/.bashrc when its
 * stdin is a socket (it thinks it was started by rshd). Node has no pipe(2) or mkfifo(3), so we
 * make named FIFOs with `mkfifo`, open both ends, and unlink them (in the background). `mkfifo` runs in the
 * background in batches, so a process start normally takes ready-made FIFOs and costs no spawn.
 *
 * Security: a FIFO reachable by path is a pipe end anyone who can open it may write or read (even on
 * a read-only mount). So they live only in our private directory (src/util/privateDir.ts), which
 * every sandbox hides behind an inaccessible tmpfs: no sandboxed command can open the FIFOs of the
 * next process (docs/security.md, "Pipes").
 */
export class FifoPool {
  private dir: string | undefined;
  private ready: string[] = [];
  private counter = 0;
  private filling: Promise<void> | undefined;
  private broken = false;
  /** From the system folders, never our PATH: a sandboxed command may write a folder on it (./executables.ts). */
  private readonly mkfifo = findSystemTool('mkfifo');

  constructor(
    private readonly target = 128,
    private readonly lowWater = 64,
  ) {}

  /** Whether FIFOs can be made here at all (else the caller falls back to socket stdio). */
  get available(): boolean {
    return !this.broken && this.mkfifo !== undefined;
  }

  /** Starts filling the pool (call early so that the first starts are fast); sweeps dead servers' FIFOs. */
  warm(): void {
    sweepDeadDirs(FIFO_PREFIX);
    void this.refill(0);
  }

  private names(n: number): string[] {
    this.dir ??= makePrivateSubdir(FIFO_PREFIX);
    return Array.from({ length: n }, () => join(this.dir!, `p${++this.counter}`));
  }

  /** Takes `n` FIFO paths, waiting for a batch to be made if the pool ran dry (a burst of starts). */
  private async take(n: number): Promise<string[]> {
    for (let round = 0; this.ready.length < n; round++) {
      if (this.broken || round > 3) throw new Error('mkfifo failed; cannot make pipes');
      await this.refill(n);
    }
    const out = this.ready.splice(0, n);
    void this.refill(0);
    return out;
  }

  /** Tops the pool up in the background (one `mkfifo` for a whole batch); resolves when done. */
  private refill(needed: number): Promise<void> {
    if (this.filling) return this.filling;
    const mkfifo = this.mkfifo;
    if (this.broken || mkfifo === undefined || this.ready.length >= Math.max(this.lowWater, needed)) return Promise.resolve();
    let names: string[];
    try {
      names = this.names(Math.max(this.target, needed + this.lowWater) - this.ready.length);
    } catch {
      this.broken = true; // no private directory: socket stdio rather than FIFOs anyone could open
      return Promise.resolve();
    }
    this.filling = new Promise<void>((resolve) => {
      execFile(mkfifo, ['-m', '600', ...names], (err) => {
        this.filling = undefined;
        if (err) this.broken = true;
        else this.ready.push(...names);
        resolve();
      });
    });
    return this.filling;
  }

  /**
   * Opens a pipe for each requested direction. `childReads` (stdin): the child gets a blocking read
   * end and we keep a write end; otherwise (stdout/stderr) the child gets a blocking write end and
   * we keep a read end. Our ends are returned as sockets; the child's as fds to pass to spawn and
   * then close (see `closeChildEnds`).
   */
  async open(directions: boolean[]): Promise<Array<{ ours: Socket; childFd: number }>> {
    const paths = await this.take(directions.length);
    const opened: number[] = [];
    try {
      return directions.map((childReads, i) => {
        const path = paths[i]!;
        let ours: number;
        let child: number;
        if (childReads) {
          // A FIFO's write end opens without blocking only if a reader exists: hold a temporary one.
          const tmp = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
          opened.push(tmp);
          ours = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
          opened.push(ours);
          child = openSync(path, constants.O_RDONLY);
          opened.push(child);
          closeSync(tmp);
          opened.splice(opened.indexOf(tmp), 1);
        } else {
          ours = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
          opened.push(ours);
          child = openSync(path, constants.O_WRONLY);
          opened.push(child);
        }
        // Off the event loop: an unlink of an open FIFO on a journalled file system (ext4 /tmp)
        // took ~70 µs of the loop per pipe, two or three per start (bench/RESULTS.md, issue 26).
        // The name lives on a moment longer only in our private directory, beside the ready ones.
        unlink(path, () => undefined);
        return { ours: childReads ? new Socket({ fd: ours, readable: false, writable: true }) : readingSocket(ours), childFd: child };
      });
    } catch (e) {
      for (const fd of opened) {
        try {
          closeSync(fd);
        } catch {
          // already wrapped or closed
        }
      }
      for (const p of paths) rmSync(p, { force: true });
      throw e;
    }
  }

  dispose(): void {
    const dir = this.dir;
    this.dir = undefined;
    this.ready = [];
    this.broken = true; // no new batch after this
    if (!dir) return;
    const remove = () => {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // a batch still being made: removed again once it is done, else swept by the next server
      }
    };
    remove();
    void this.filling?.then(remove);
  }
}

/**
 * Every FIFO we read is read into this one buffer: a read allocates nothing (a fresh 64 KiB Buffer
 * per read, outside the V8 heap, was most of what a stream left for the garbage collector and the
 * server's RSS). A pipe holds 64 KiB, so no read is larger.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * Our read end of a FIFO, read with `onread` into READ_BUFFER. It emits `data` as any socket does,
 * but the Buffer is a view of READ_BUFFER valid only during the listener's call: a listener copies
 * what it keeps (src/server/processOutput.ts). `pause()`/`resume()` stop and restart the reads.
 */
function readingSocket(fd: number): Socket {
  // `onread` is in net.Socket's constructor options since Node 12, but not in @types/node's.
  const options = {
    fd,
    readable: true,
    writable: false,
    onread: {
      buffer: READ_BUFFER,
      callback: (n: number) => {
        socket.emit('data', READ_BUFFER.subarray(0, n));
        return true;
      },
    },
  } as SocketConstructorOpts;
  const socket: Socket = new Socket(options);
  return socket;
}

/** `<private dir>/fifo-<pid>-XXXXXX`: one per server, swept once its server is gone. */
export const FIFO_PREFIX = 'fifo-';

export function closeChildEnds(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}
