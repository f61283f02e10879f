import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/*
 * The server's young generation (V8), tuned at run time from cli/serve; a client in someone
 * else's process (the extension host) never calls this.
 *
 * 1. A young-generation collection after every few MiB a transport sends. Output reaches the
 *    socket in short-lived Buffers (a 64 KiB pipe read each, outside the V8 heap) that V8 collects
 *    only when its young generation fills or external memory has grown by tens of MiB, so a
 *    256 MiB stream kept 30–40 MiB of dead buffers in malloc's heap and the RSS kept that peak.
 *    Collecting a young generation that holds little else takes well under a millisecond.
 * 2. The young generation stops growing before `maxNewSpaceBytes`. V8 doubles it (to 2 × 16 MiB here)
 *    while many objects survive, e.g. over a few hundred process starts, and never gives the
 *    pages back; `--max-semi-space-size` only works on the command line, but the growth factor can
 *    be set at any time, so it is set to 1 once one more doubling would pass the cap (looked at after
 *    each collection). This server ends at 8 MiB (16 at most). Not smaller: a 1 MiB young
 *    generation doubled the CPU of a base64 stream (a 87 KiB string per chunk fills it quickly).
 */

const DEFAULT_STEP_BYTES = 4 * 1024 * 1024;
const DEFAULT_MAX_NEW_SPACE_BYTES = 16 * 1024 * 1024;

let collect: (() => void) | undefined;
let stepBytes = DEFAULT_STEP_BYTES;
let sinceLast = 0;

function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * Turns both on for this process; false when the runtime refuses (nothing changes then).
 * `--expose-gc` set at run time puts `gc` only into contexts created afterwards (the one made
 * here), not into the main one.
 */
export function tuneYoungGeneration(options: { stepBytes?: number; maxNewSpaceBytes?: number } = {}): boolean {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    if (typeof gc !== 'function') return false;
    stepBytes = options.stepBytes ?? DEFAULT_STEP_BYTES;
    collect = () => (gc as (o: { type: 'minor' }) => void)({ type: 'minor' });
  } catch {
    return false;
  }
  const cap = options.maxNewSpaceBytes ?? DEFAULT_MAX_NEW_SPACE_BYTES;
  // The young generation grows (doubles) only in a collection, and the observer hears of one a
  // little later, maybe after one more doubling: stop it while a doubling would pass the cap.
  const capped = () => {
    if (newSpaceBytes() * 2 < cap) return false;
    setFlagsFromString('--semi-space-growth-factor=1');
    return true;
  };
  if (!capped()) {
    const observer = new PerformanceObserver(() => {
      if (capped()) observer.disconnect();
    });
    observer.observe({ entryTypes: ['gc'] });
  }
  return true;
}

/** Counts bytes handed to a socket; every `stepBytes`, one young-generation collection. */
export function noteTransientBytes(bytes: number): void {
  if (!collect) return;
  sinceLast += bytes;
  if (sinceLast < stepBytes) return;
  sinceLast = 0;
  collect();
}
