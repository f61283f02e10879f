/** Waiting for a process to stall: blocked writing into a pipe nobody drains (Linux /proc). */
import { readFileSync } from 'node:fs';
import { collectTree } from '../../src/server/processTree';

function procText(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'latin1');
  } catch {
    return undefined;
  }
}

/** Bytes `pid` has written so far (`wchar`); undefined once it is gone or a zombie. */
function bytesWritten(pid: number): number | undefined {
  const stat = procText(pid, 'stat');
  if (stat === undefined || /^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3))) return undefined;
  const m = /^wchar:\s*(\d+)$/m.exec(procText(pid, 'io') ?? '');
  return m ? Number(m[1]) : undefined;
}

/** The process in `root`'s tree (descendants, group and session) running exactly `argv`, once it exists. */
export async function processInTree(root: number, argv: string[], ms = 15_000): Promise<number> {
  const want = `${argv.join('\0')}\0`;
  const end = Date.now() + ms;
  for (;;) {
    const pid = collectTree(root).find((p) => procText(p, 'cmdline') === want);
    if (pid !== undefined) return pid;
    if (Date.now() > end) throw new Error(`no \`${argv.join(' ')}\` under ${root} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Resolves once `pid` has written at least `minBytes` and then nothing over five looks 50 ms
 * apart: its output is held back. (A stall has no event of its own; while output flows, the count
 * grows on every look.) Rejects if the process ends first, or after `ms`.
 */
export async function stalled(pid: number, minBytes: number, ms = 30_000): Promise<number> {
  const end = Date.now() + ms;
  let last = -1;
  let still = 0;
  for (;;) {
    const n = bytesWritten(pid);
    if (n === undefined) throw new Error(`process ${pid} ended without stalling (last seen at ${last} bytes)`);
    still = n === last && n >= minBytes ? still + 1 : 0;
    last = n;
    if (still >= 5) return n;
    if (Date.now() > end) throw new Error(`process ${pid} did not stall within ${ms} ms (${n} bytes written)`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
