/** Shared bits of the client integration tests (not a test file itself). */
import assert from 'node:assert/strict';
import type { ProcessHandle } from '../../src/client';

export interface Gathered {
  /** All output so far, decoded as UTF-8. */
  text(): string;
  /** Resolves when the output so far satisfies `pred`; rejects after `timeoutMs`. */
  until(pred: (text: string) => boolean, timeoutMs?: number, what?: string): Promise<void>;
}

/** Collects a handle's output, asserting that seqs strictly increase (no duplicate, no reorder). */
export function gather(h: ProcessHandle): Gathered {
  const chunks: Buffer[] = [];
  let lastSeq = 0;
  let text = '';
  const waiters = new Set<() => void>();
  h.onEvent((e) => {
    if (e.type === 'failed') return;
    assert.ok(e.seq > lastSeq, `seq ${e.seq} after ${lastSeq}`);
    lastSeq = e.seq;
    if (e.type === 'output') {
      chunks.push(e.data);
      text = Buffer.concat(chunks).toString('utf8');
      for (const w of [...waiters]) w();
    }
  });
  return {
    text: () => text,
    until: (pred, timeoutMs = 15_000, what = 'output') =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pred(text)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; got ${text.length} chars, ending ${JSON.stringify(text.slice(-80))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** `line 1\n` … `line n\n`. */
export function numberedLines(n: number): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `line ${i}\n`;
  return s;
}

/**
 * A bash script printing `pid <pid>`, lines 1..n (pausing 50 ms every `every` lines so a test can
 * break the connection mid-stream), then `pid <pid>` again: same pid twice ⇒ never restarted.
 */
export function streamingScript(n: number, every: number): string[] {
  return [
    'bash',
    '-c',
    `echo "pid $$"; for ((i=1;i<=${n};i++)); do echo "line $i"; if ((i % ${every} == 0)); then sleep 0.05; fi; done; echo "pid $$"`,
  ];
}
