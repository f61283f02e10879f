/**
 * Binary output frames (docs/protocol-extensions.md, "Binary output frames"): a `process/output`
 * without JSON or base64, sent only to a client that asked for it in `initialize` and only on a
 * transport that carries binary messages (WebSocket).
 *
 *   byte 0      0x00: frame kind "process output" (a JSON text never starts with it)
 *   byte 1      stream: 0 stdout, 1 stderr, 2 pty
 *   bytes 2-3   length of the process id in UTF-8 bytes (unsigned, big-endian)
 *   bytes 4-9   seq (unsigned 48-bit, big-endian)
 *   then        the process id (UTF-8), then the output bytes (the rest of the message)
 */
import type { OutputStream } from './common';

export const BINARY_OUTPUT_KIND = 0x00;
export const BINARY_OUTPUT_HEADER_BYTES = 10;
/** `initialize` param (client → server), `environmentInfo.capabilities` key and `initialize` result field (server → client). */
export const BINARY_OUTPUT_FIELD = 'execBridgeBinaryOutput';

const STREAMS: readonly OutputStream[] = ['stdout', 'stderr', 'pty'];

export interface BinaryOutput {
  processId: string;
  seq: number;
  stream: OutputStream;
  /** A view into the received message (no copy). */
  data: Buffer;
}

/** Bytes of a frame for `idBytes` bytes of process id and `dataBytes` of output. */
export function binaryOutputSize(idBytes: number, dataBytes: number): number {
  return BINARY_OUTPUT_HEADER_BYTES + idBytes + dataBytes;
}

/** Writes one frame; `into` may supply the buffer (at least `size` bytes) to build it in. */
export function encodeBinaryOutput(
  id: Buffer,
  seq: number,
  stream: OutputStream,
  data: Buffer,
  into?: (bytes: number) => Buffer | undefined,
): Buffer {
  const size = binaryOutputSize(id.length, data.length);
  const frame = into?.(size)?.subarray(0, size) ?? Buffer.allocUnsafe(size);
  frame[0] = BINARY_OUTPUT_KIND;
  frame[1] = STREAMS.indexOf(stream);
  frame.writeUInt16BE(id.length, 2);
  frame.writeUIntBE(seq, 4, 6);
  id.copy(frame, BINARY_OUTPUT_HEADER_BYTES);
  data.copy(frame, BINARY_OUTPUT_HEADER_BYTES + id.length);
  return frame;
}

/** Reads one frame, or undefined when it is not a well-formed binary output frame. */
export function decodeBinaryOutput(frame: Buffer): BinaryOutput | undefined {
  if (frame.length < BINARY_OUTPUT_HEADER_BYTES || frame[0] !== BINARY_OUTPUT_KIND) return undefined;
  const stream = STREAMS[frame[1]!];
  if (!stream) return undefined;
  const idBytes = frame.readUInt16BE(2);
  const dataStart = BINARY_OUTPUT_HEADER_BYTES + idBytes;
  if (dataStart > frame.length) return undefined;
  return {
    processId: frame.toString('utf8', BINARY_OUTPUT_HEADER_BYTES, dataStart),
    seq: frame.readUIntBE(4, 6),
    stream,
    data: frame.subarray(dataStart),
  };
}

/**
 * Binary file results: the answer to an `fs/readFile` on a connection with binary frames.
 *
 *   byte 0      0x01: frame kind "fs/readFile result"
 *   byte 1      id type: 0 a number (decimal ASCII), 1 a string (UTF-8)
 *   bytes 2-3   id length in bytes (unsigned, big-endian)
 *   then        the id, then the file's bytes (the rest of the message)
 *
 * It means `{"id":<id>,"result":{"dataBase64":<the bytes in base64>}}`.
 */
export const BINARY_RESULT_KIND = 0x01;
const RESULT_HEADER_BYTES = 4;

/** Bytes a reader may leave free in front of a result's data, for the frame's header and id. */
export const BINARY_RESULT_HEADROOM = 64;

/** What a request handler returns for a result that may travel as a binary frame. */
export class BinaryResult {
  /**
   * `headroom`: that many bytes in front of `data`, in the same memory, belong to this result and
   * may be overwritten: the frame's header is written there instead of copying `data` into a new
   * frame (a 64 MiB file is one copy less).
   */
  constructor(
    readonly data: Buffer,
    readonly headroom = 0,
  ) {}
  /** The result as the JSON protocol has it (encoded on demand). */
  get dataBase64(): string {
    return this.data.toString('base64');
  }
  /** The JSON form, for a connection without binary frames. */
  toJSON(): { dataBase64: string } {
    return { dataBase64: this.data.toString('base64') };
  }
}

export function encodeBinaryResult(id: number | string, result: BinaryResult | Buffer): Buffer {
  const { data, headroom } = result instanceof BinaryResult ? result : { data: result, headroom: 0 };
  const idBytes = Buffer.from(String(id), 'utf8');
  const header = RESULT_HEADER_BYTES + idBytes.length;
  // In place, in front of the data, when the result left room for it.
  const frame =
    headroom >= header
      ? Buffer.from(data.buffer, data.byteOffset - header, header + data.length)
      : Buffer.allocUnsafe(header + data.length);
  frame[0] = BINARY_RESULT_KIND;
  frame[1] = typeof id === 'number' ? 0 : 1;
  frame.writeUInt16BE(idBytes.length, 2);
  idBytes.copy(frame, RESULT_HEADER_BYTES);
  if (headroom < header) data.copy(frame, header);
  return frame;
}

export function decodeBinaryResult(frame: Buffer): { id: number | string; data: Buffer } | undefined {
  if (frame.length < RESULT_HEADER_BYTES || frame[0] !== BINARY_RESULT_KIND || frame[1]! > 1) return undefined;
  const end = RESULT_HEADER_BYTES + frame.readUInt16BE(2);
  if (end > frame.length) return undefined;
  const text = frame.toString('utf8', RESULT_HEADER_BYTES, end);
  const id = frame[1] === 0 ? Number(text) : text;
  if (typeof id === 'number' && !Number.isSafeInteger(id)) return undefined;
  return { id, data: frame.subarray(end) };
}

/** First bytes of the binary messages above: never the first byte of a JSON text. */
export function isBinaryFrameKind(byte: number | undefined): boolean {
  return byte === BINARY_OUTPUT_KIND || byte === BINARY_RESULT_KIND;
}
