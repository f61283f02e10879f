import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { errorMessage, shellWord } from '../util';

/** A token file we refuse to use; the message names the file and the fix. */
export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

/**
 * Reads the bearer token from `path` (`--token-file`; the content, trimmed). Refused, as ssh refuses
 * a private key: a file that group or others may access (whoever reads the token can run commands
 * as us), one owned by another user (who could replace the token), and an empty one. Checked on the
 * opened file, so a swap between the check and the read changes nothing.
 */
export function readTokenFile(path: string, flag = '--token-file'): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new TokenFileError(`cannot read ${flag} ${path}: ${errorMessage(e)}`);
  }
  try {
    const st = fstatSync(fd);
    if (process.platform !== 'win32') {
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid && st.uid !== 0) {
        throw new TokenFileError(
          `${flag} ${path} belongs to uid ${st.uid}, not to this user (uid ${uid}), who could replace the token: use a token file of your own`,
        );
      }
      if ((st.mode & 0o077) !== 0) {
        const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
        throw new TokenFileError(
          `${flag} ${path} is accessible by group or others (mode ${mode}); anyone who can read it can run commands as this user. Fix: chmod 600 ${shellWord(path)}`,
        );
      }
    }
    const token = readFileSync(fd, 'utf8').trim();
    if (!token) throw new TokenFileError(`${flag} ${path} is empty`);
    return token;
  } finally {
    closeSync(fd);
  }
}
