import { readSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { IPty } from 'node-pty';

/*
 * Every byte a PTY child wrote reaches its reader before the read side closes. Two things lost the
 * last KiB of a child that exits right after a flood (node-pty 1.1, Linux):
 *
 * - libuv takes a hang-up (POLLHUP: the terminal's last writer closed it) together with a short read
 *   as the end of the stream. A PTY master returns at most ~4 KiB per read however much is queued,
 *   so the socket ended with up to ~17 KiB still in the kernel (readable, then EIO).
 * - node-pty closes the read side itself 200 ms after the child's exit if it is still open (for a
 *   terminal some other process keeps open). A reader that is behind — paused for a congested
 *   connection or a client's `process/pause` — lost what the kernel and the socket still held.
 *
 * The guard: every close first emits what the socket read but did not emit yet, then reads the
 * descriptor to EIO (bounded); node-pty's own close after the exit waits until the read side has
 * been idle while reading (or a bound passed), time spent paused not counted.
 */

/** After node-pty's exit timer: close once nothing arrived for this long while reading. */
const IDLE_MS = 200;
/** …or once this much reading time passed after it (a background process that never stops writing). */
const MAX_DRAIN_MS = 5_000;
/** At a close, at most this much is read from the descriptor (the kernel holds a few KiB). */
const MAX_TAIL_BYTES = 1024 * 1024;

export interface PtyDrainGuard {
  /** Closes the read side now, dropping what it still holds (the process is being destroyed). */
  close(): void;
}

/** node-pty's unix terminal keeps its read side privately as `_socket` (a tty.ReadStream). */
function readSide(pty: IPty): Socket | undefined {
  const socket = (pty as unknown as { _socket?: unknown })._socket;
  return socket && typeof (socket as Socket).destroy === 'function' && typeof (socket as Socket).read === 'function'
    ? (socket as Socket)
    : undefined;
}

/** Installs the guard on a PTY just spawned (before any of its output was read). */
export function guardPtyDrain(pty: IPty): PtyDrainGuard {
  const socket = readSide(pty);
  if (!socket) return { close: () => undefined };
  const fd = (pty as unknown as { fd?: unknown }).fd;
  const realDestroy = socket.destroy.bind(socket);
  let closing = false;
  let timer: NodeJS.Timeout | undefined;
  let bytes = 0;
  socket.prependListener('data', (d: Buffer | string) => (bytes += d.length));

  /** What is still in the kernel, read until EIO (the terminal closed) or EAGAIN (nothing yet), as `data`. */
  const readTail = (): void => {
    if (typeof fd !== 'number') return;
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (let total = 0; total < MAX_TAIL_BYTES;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch {
        return; // EIO, EAGAIN, EBADF
      }
      if (n <= 0) return;
      total += n;
      socket.emit('data', Buffer.from(buf.subarray(0, n)));
    }
  };

  /** Emits what the socket read but has not emitted yet (`read()` emits `data`) and the kernel's rest, then closes. */
  const closeNow = (err?: Error, keep = true): void => {
    if (closing) return;
    closing = true;
    if (timer) clearInterval(timer);
    if (keep) {
      for (let i = 0; i < 10_000 && socket.readableLength > 0; i++) {
        if (socket.read() === null) break;
      }
      readTail();
    }
    realDestroy(err);
  };

  /** node-pty's exit timer: keep reading until EIO, idle or the bound, counting only time spent reading. */
  const deferClose = (): void => {
    if (timer) return;
    let seen = bytes;
    let readingMs = 0;
    timer = setInterval(() => {
      if (socket.readableFlowing !== true) return; // paused by us: the kernel holds the rest
      readingMs += IDLE_MS;
      if (bytes === seen || readingMs >= MAX_DRAIN_MS) closeNow();
      seen = bytes;
    }, IDLE_MS);
    timer.unref();
  };

  socket.destroy = function (this: Socket, err?: Error) {
    if (closing) return realDestroy(err);
    // Node destroys a socket with the read error (EIO: the terminal closed), or without one after its
    // end; node-pty's exit timer without one, its output possibly unread.
    if (err === undefined && !socket.readableEnded) deferClose();
    else closeNow(err);
    return this;
  } as Socket['destroy'];

  return { close: () => closeNow(undefined, false) };
}
