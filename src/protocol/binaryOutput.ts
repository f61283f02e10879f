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
