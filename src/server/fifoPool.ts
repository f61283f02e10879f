import { execFile, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, unlinkSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real pipes for a child's stdio. Node's `stdio: 'pipe'` hands the child a *socket* pair, and that
 * breaks ordinary programs: `/dev/stdin` and `/dev/stdout` cannot be opened on a socket (ENXIO:
 * `head -c 3 /dev/stdin`, `echo x > /dev/stdout`), and Debian's bash sources ~/.bashrc when its
 * stdin is a socket (it thinks it was started by rshd). Node has no pipe(2) or mkfifo(3), so we
 * make named FIFOs with `mkfifo`, open both ends, and unlink them at once. `mkfifo` runs in the
 * background in batches, so a process start normally takes ready-made FIFOs and costs no spawn.
 */
export class FifoPool {
  private dir: string | undefined;
  private ready: string[] = [];
  private counter = 0;
  private filling = false;
  private broken = false;

  constructor(
    private readonly target = 48,
    private readonly lowWater = 24,
  ) {}

  /** Whether FIFOs can be made here at all (else the caller falls back to socket stdio). */
  get available(): boolean {
    return !this.broken;
  }

  /** Starts filling the pool (call early so that the first starts are fast). */
  warm(): void {
    this.refill();
  }

  private names(n: number): string[] {
    this.dir ??= mkdtempSync(join(tmpdir(), 'exec-bridge-fifo-')); // 0700: only we can open them
    return Array.from({ length: n }, () => join(this.dir!, `p${++this.counter}`));
  }

  private take(n: number): string[] {
    if (this.ready.length < n) {
      const names = this.names(n - this.ready.length);
      const r = spawnSync('mkfifo', ['-m', '600', ...names], { stdio: 'ignore' });
      if (r.status !== 0) {
        this.broken = true;
        throw new Error(`mkfifo failed (${r.error?.message ?? `exit ${r.status}`})`);
      }
      this.ready.push(...names);
    }
    const out = this.ready.splice(0, n);
    this.refill();
    return out;
  }

  private refill(): void {
    if (this.filling || this.broken || this.ready.length >= this.lowWater) return;
    this.filling = true;
    const names = this.names(this.target - this.ready.length);
    execFile('mkfifo', ['-m', '600', ...names], (err) => {
      this.filling = false;
      if (err) this.broken = true;
      else this.ready.push(...names);
    });
  }

  /**
   * Opens a pipe for each requested direction. `childReads` (stdin): the child gets a blocking read
   * end and we keep a write end; otherwise (stdout/stderr) the child gets a blocking write end and
   * we keep a read end. Our ends are returned as sockets; the child's as fds to pass to spawn and
   * then close (see `closeChildEnds`).
   */
  open(directions: boolean[]): Array<{ ours: Socket; childFd: number }> {
    const paths = this.take(directions.length);
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
        unlinkSync(path);
        return { ours: new Socket({ fd: ours, readable: !childReads, writable: childReads }), childFd: child };
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
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
    this.ready = [];
  }
}

export function closeChildEnds(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}
