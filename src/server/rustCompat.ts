import { constants } from 'node:os';
import { ErrorCode } from '../protocol';
import { RpcError } from '../rpc';
import { errorMessage } from '../util';

/**
 * Two small pieces of the reference server's (Rust) behaviour that our fs and http methods must
 * reproduce word for word, so that a client sees the same errors from either server:
 * - the base64 crate's strict decoder (padding required, canonical trailing bits) and its messages;
 * - `std::io::Error`'s display of an OS error, `<description> (os error N)`, with the musl libc
 *   descriptions (the npm binary is a static musl build: ELOOP reads "Symbolic link loop").
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DECODE = new Int8Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;
const PAD = 0x3d;

/** Decodes standard padded base64 or returns the reference's error text (`Invalid symbol 42, offset 1.`). */
export function decodeBase64(text: string): { ok: true; bytes: Buffer } | { ok: false; message: string } {
  // Work on the UTF-8 bytes, as the crate does: any byte outside the alphabet is an invalid symbol.
  const input = Buffer.from(text, 'utf8');
  if (input.length === 0) return { ok: true, bytes: Buffer.alloc(0) };
  const invalidByte = (offset: number, byte: number) => ({ ok: false as const, message: `Invalid symbol ${byte}, offset ${offset}.` });
  const rem = input.length % 4;
  const last = input[input.length - 1]!;
  if (rem === 1 && last !== PAD && DECODE[last] === -1) return invalidByte(input.length - 1, last);
  // Every quad but the last is decoded strictly ('=' is invalid there); the last one (the
  // "suffix", 1..4 bytes) carries the padding rules.
  const suffixStart = input.length - (rem === 0 ? 4 : rem);
  for (let i = 0; i < suffixStart; i++) if (DECODE[input[i]!] === -1) return invalidByte(i, input[i]!);
  let morsels = 0;
  let padding = 0;
  let firstPad = 0;
  let lastSymbol = 0;
  let bits = 0;
  for (let k = 0; suffixStart + k < input.length; k++) {
    const b = input[suffixStart + k]!;
    if (b === PAD) {
      if (k < 2) return invalidByte(suffixStart + k, b);
      if (padding === 0) firstPad = k;
      padding++;
      continue;
    }
    if (padding > 0) return invalidByte(suffixStart + firstPad, PAD);
    const v = DECODE[b]!;
    if (v === -1) return invalidByte(suffixStart + k, b);
    lastSymbol = b;
    bits = bits * 64 + v;
    morsels++;
  }
  if (morsels < 2) return { ok: false, message: `Invalid input length: ${suffixStart + morsels}` };
  if ((padding + morsels) % 4 !== 0) return { ok: false, message: 'Invalid padding' };
  // Bits below the last whole output byte must be zero (canonical encoding).
  const unused = (morsels * 6) % 8;
  if (bits % 2 ** unused !== 0) return { ok: false, message: `Invalid last symbol ${lastSymbol}, offset ${suffixStart + morsels - 1}.` };
  return { ok: true, bytes: Buffer.from(text, 'base64') };
}

/** musl's strerror texts for the errnos a file or socket operation can produce. */
const MUSL_STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  ESRCH: 'No such process',
  EINTR: 'Interrupted system call',
  EIO: 'I/O error',
  ENXIO: 'No such device or address',
  E2BIG: 'Argument list too long',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Out of memory',
  EACCES: 'Permission denied',
  EFAULT: 'Bad address',
  EBUSY: 'Resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Cross-device link',
  ENODEV: 'No such device',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  ENFILE: 'Too many open files in system',
  EMFILE: 'No file descriptors available',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  ESPIPE: 'Invalid seek',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  EPIPE: 'Broken pipe',
  ENAMETOOLONG: 'Filename too long',
  ENOSYS: 'Function not implemented',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Symbolic link loop',
  EOVERFLOW: 'Value too large for data type',
  ENOTSUP: 'Not supported',
  EOPNOTSUPP: 'Not supported',
  ECONNRESET: 'Connection reset by peer',
  ECONNREFUSED: 'Connection refused',
  ETIMEDOUT: 'Operation timed out',
  EHOSTUNREACH: 'Host is unreachable',
  ENETUNREACH: 'Network unreachable',
  ESTALE: 'Stale file handle',
  EDQUOT: 'Quota exceeded',
  ECANCELED: 'Operation canceled',
};

interface ErrnoLike {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
}

function errnoCode(e: unknown): string | undefined {
  const code = (e as ErrnoLike | null)?.code;
  return typeof code === 'string' && code in constants.errno ? code : undefined;
}

/** `Permission denied (os error 13)`, as Rust prints an OS error; other errors keep their message. */
export function describeIoError(e: unknown): string {
  const code = errnoCode(e);
  if (code) {
    const n = (constants.errno as Record<string, number>)[code]!;
    return `${MUSL_STRERROR[code] ?? code} (os error ${n})`;
  }
  return errorMessage(e);
}

/**
 * Maps an OS error to the reference's JSON-RPC error: not found → -32004; permission denied and
 * invalid input (Rust's error kinds for EACCES/EPERM and EINVAL) → -32600; anything else → -32603.
 */
export function ioErrorToRpc(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  const message = describeIoError(e);
  switch (errnoCode(e)) {
    case 'ENOENT':
      return new RpcError(ErrorCode.NotFound, message);
    case 'EACCES':
    case 'EPERM':
    case 'EINVAL':
      return new RpcError(ErrorCode.InvalidRequest, message);
    default:
      return new RpcError(ErrorCode.Internal, message);
  }
}
