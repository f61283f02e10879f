/**
 * What following a tty's terminal modes costs the server per byte (src/server/terminalModes.ts,
 * issue 27): `TerminalModes.feed` over a few hundred MiB of five kinds of output, chunked as the
 * server sends it (64 KiB events). Prints one JSON line per kind: MiB/s, ms per MiB, and the
 * transitions held at the end (the memory bound). Run:
 *   npx esbuild bench/terminalModesBench.ts --bundle --platform=node --outfile=bench/out/m/terminalModesBench.js \
 *     && node bench/out/m/terminalModesBench.js [MiB per kind, default 256]
 */
import { TerminalModes } from '../src/server/terminalModes';

const MiB = 1024 * 1024;
const CHUNK = 64 * 1024;
const total = Number(process.argv[2] ?? 256) * MiB;

/** `unit` repeated to one CHUNK (cut at the chunk's end: sequences then straddle chunks, as in real output). */
function chunkOf(unit: string): Buffer {
  const one = Buffer.from(unit, 'latin1');
  const out = Buffer.alloc(CHUNK);
  for (let i = 0; i < CHUNK; i += one.length) one.copy(out, i, 0, Math.min(one.length, CHUNK - i));
  return out;
}

const kinds: Record<string, Buffer> = {
  // Build logs, `cat`: no ESC at all.
  plain: chunkOf('compiling src/server/terminalModes.ts ... ok (12 ms)\r\n'),
  // `ls --color`, test runners: an SGR every few words.
  colours: chunkOf('\x1b[01;34mdirectory\x1b[0m  \x1b[01;32mscript.sh\x1b[0m  file.txt  \x1b[38;5;208mother\x1b[0m\r\n'),
  // A TUI frame: cursor hidden, moves, colours, shown again (htop, an agent CLI's spinner).
  frames: chunkOf('\x1b[?25l\x1b[1;1H\x1b[7m CPU [|||||     42.0%] \x1b[m\x1b[2;1H\x1b[32mMem\x1b[m 1.2G/8G\x1b[K\x1b[24;80H\x1b[?25h'),
  // Title updates and hyperlinks: OSC strings with text that looks like modes.
  osc: chunkOf('\x1b]0;vim [?1049h build\x07\x1b]8;;file:///a/b?25l\x1b\\link\x1b]8;;\x1b\\ text text text\r\n'),
  // Long hyperlinks (OSC 8, ended by ESC \, no BEL) around file names, as `ls --hyperlink` or a
  // compiler's diagnostics print them: strings past the first 64 bytes.
  links: chunkOf('\x1b]8;;file:///home/user/projects/exec-bridge/src/server/terminalModes.ts#L259\x1b\\terminalModes.ts\x1b]8;;\x1b\\\r\n'),
};

/** For scale: a JS loop that looks at every byte once (counts ESCs), over the colours' bytes. */
function touchEveryByte(): void {
  const chunk = kinds.colours!;
  const n = Math.ceil(total / CHUNK);
  let escs = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) for (let j = 0; j < chunk.length; j++) if (chunk[j] === 0x1b) escs++;
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const mib = (n * CHUNK) / MiB;
  console.log(
    JSON.stringify({ kind: 'baseline: a loop over every byte', mib, ms: Math.round(ms), msPerMiB: Number((ms / mib).toFixed(4)), escs }),
  );
}
touchEveryByte();

for (const [kind, chunk] of Object.entries(kinds)) {
  const t = new TerminalModes();
  const n = Math.ceil(total / CHUNK);
  // Warm-up (the JIT), then timed.
  for (let i = 1; i <= 256; i++) t.feed(i, chunk);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) t.feed(257 + i, chunk);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const mib = (n * CHUNK) / MiB;
  console.log(
    JSON.stringify({
      kind,
      mib,
      ms: Math.round(ms),
      mibPerS: Math.round(mib / (ms / 1000)),
      msPerMiB: Number((ms / mib).toFixed(4)),
      transitionsHeld: t.keptTransitions,
    }),
  );
}
