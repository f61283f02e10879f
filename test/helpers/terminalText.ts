import { STATUS_REPLY, STATUS_REQUEST } from '../../src/core/terminalFlow';
import type { TerminalRun } from '../../src/core/terminalRun';

/**
 * What a TerminalRun writes into its terminal, read as a terminal would show it: the model's status
 * requests are answered as a terminal does once it parsed what came before (it paces floods by
 * them) and left out of the text, colours are left out, `\r\n` is `\n`. `until` resolves when the
 * text matches, or rejects after `waitMs` with the text's end.
 */
export function terminalText(run: TerminalRun, waitMs: number): { text(): string; until(pattern: RegExp): Promise<void> } {
  let raw = '';
  const waiters = new Set<() => void>();
  run.model.onWrite((t) => {
    raw += t;
    const requests = t.split(STATUS_REQUEST).length - 1;
    if (requests > 0)
      setImmediate(() => {
        for (let i = 0; i < requests; i++) run.model.handleInput(STATUS_REPLY);
      });
    for (const w of [...waiters]) w();
  });
  const text = () =>
    raw
      .split(STATUS_REQUEST)
      .join('')
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/\r\n/g, '\n');
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
