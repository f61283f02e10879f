import { readFileSync } from 'node:fs';

/**
 * Whether a pid is a live process. A zombie counts as dead: it has exited, and in a container
 * whose init does not reap orphans it may stay a zombie for good.
 */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `pred` every 20 ms until it holds or `ms` pass. */
export async function until(pred: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
