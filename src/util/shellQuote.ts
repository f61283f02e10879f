/** One word for a POSIX shell: bare when it holds no special character, else single-quoted (exact for sh). */
export function shellWord(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** argv as a shell command line: what a user can paste, and what `sh` parses back to the same argv. */
export function shellLine(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}
