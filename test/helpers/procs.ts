import { readFileSync } from 'node:fs';
import { listProcesses, parseStat, type ProcInfo } from '../../src/server/processTree';

export type { ProcInfo };

/** A file of `/proc/<pid>/` as text; '' once the process is gone (or when it is not ours to read). */
export function procFile(pid: number, name: 'cmdline' | 'comm' | 'environ' | 'stat' | 'status'): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'latin1');
  } catch {
    return '';
  }
}

/**
 * Whether a pid is a live process. A zombie counts as dead: it has exited, and in a container
 * whose init does not reap orphans it may stay a zombie for good.
 */
export function isAlive(pid: number): boolean {
  const p = parseStat(pid, procFile(pid, 'stat'));
  return p !== undefined && !p.zombie;
}

/** Live (non-zombie) processes, this test process left out. */
export function liveProcesses(): ProcInfo[] {
  return listProcesses().filter((p) => !p.zombie && p.pid !== process.pid);
}

/** Every descendant of `pid` (zombies too: their children are still someone's), parents before children. */
export function descendantsOf(pid: number, procs: readonly ProcInfo[] = listProcesses()): ProcInfo[] {
  const children = new Map<number, ProcInfo[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: ProcInfo[] = [];
  const stack = [pid];
  for (let guard = 0; stack.length > 0 && guard < 100_000; guard++) {
    for (const c of children.get(stack.pop() as number) ?? []) {
      out.push(c);
      stack.push(c.pid);
    }
  }
  return out;
}

/**
 * Polls `probe` every 20 ms until it yields something other than `false`/`undefined`, and resolves
 * with that (for what has no event, like the OS process table); rejects after `ms`.
 */
export async function until<T>(
  probe: () => T | false | undefined | Promise<T | false | undefined>,
  ms = 5000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== false && v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `p`, or a failure naming `what` after `ms` (a held process must fail the test, not hang it). */
export async function within<T>(p: Promise<T>, what: string, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what} (${ms} ms)`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
