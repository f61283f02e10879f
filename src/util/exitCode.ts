/** Death by signal N is reported as exit code 128+N; these are the ones worth a word. */
const SIGNAL_WORDS: Record<number, string> = {
  1: 'hung up',
  2: 'interrupted',
  6: 'aborted',
  9: 'killed',
  11: 'segmentation fault',
  13: 'broken pipe',
  15: 'terminated',
};

/** `exit code 3`, `exit code 137 (killed)`; `exit code unknown` when there is none (-1 or undefined). */
export function describeExitCode(code: number | undefined): string {
  if (code === undefined || code === -1) return 'exit code unknown';
  const word = code > 128 ? SIGNAL_WORDS[code - 128] : undefined;
  return word ? `exit code ${code} (${word})` : `exit code ${code}`;
}
