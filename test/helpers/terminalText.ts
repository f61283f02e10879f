import { STATUS_REPLY, STATUS_REQUEST } from '../../src/core/terminalFlow';
import type { TerminalRun } from '../../src/core/terminalRun';

/**
 * What a TerminalRun writes into its terminal, read as a terminal would show it: the model's status
 * requests are answered as a terminal does once it parsed what came before (it paces floods by
 * them) and left out of the text, colours are left out, `\r\n` is `\n`. `until` resolves when the
 * text matches, or rejects after `waitMs` with the text's end.
 */
export function terminalText(run: TerminalRun, waitMs: number): { text(): string; until(pattern: RegExp): Promise<void> } {
  // Cleaned as it arrives, once (a 3 MiB replay comes in ~200 writes: cleaning all of it on each
  // write was quadratic). `pending` holds a tail that may continue in the next write: a `\r`
  // before its `\n`, or a colour sequence cut short.
  let clean = '';
  let pending = '';
  const waiters = new Set<() => void>();
  const tidy = (t: string) =>
    t
      .split(STATUS_REQUEST)
      .join('')
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/\r\n/g, '\n');
  run.model.onWrite((t) => {
    const requests = t.split(STATUS_REQUEST).length - 1;
    if (requests > 0)
      setImmediate(() => {
        for (let i = 0; i < requests; i++) run.model.handleInput(STATUS_REPLY);
      });
    pending += t;
    let cut = pending.length;
    const esc = pending.lastIndexOf('\x1b');
    if (esc >= 0 && pending.length - esc < 16 && !/^\x1b\[[0-9;]*[A-Za-z]/.test(pending.slice(esc))) cut = esc;
    if (cut > 0 && pending[cut - 1] === '\r') cut--;
    clean += tidy(pending.slice(0, cut));
    pending = pending.slice(cut);
    for (const w of [...waiters]) w();
  });
  const text = () => (pending ? clean + tidy(pending) : clean);
  const until = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(text())) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${pattern}; text ends ${JSON.stringify(text().slice(-200))}`));
      }, waitMs);
      waiters.add(check);
      check();
    });
  return { text, until };
}
