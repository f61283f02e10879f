import { readdirSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';

/*
 * The `Host` aliases ssh itself would know, for the Add SSH Executor picker: the files ssh reads
 * (ssh_config(5)), not what $HOME points at. ssh finds `~/.ssh/config` under the account's home
 * from the password database (a $HOME set elsewhere changes nothing for it), then reads the
 * system-wide /etc/ssh/ssh_config; both follow `Include`.
 */

/** The home ssh expands `~` with: the account's, from the password database (not $HOME). */
export function sshUserHome(): string {
  return userInfo().homedir;
}

/** ssh's own bound on nested Include files (readconf.c `READCONF_MAX_DEPTH`). */
export const SSH_INCLUDE_MAX_DEPTH = 16;
/** At most this many files are read in all (a glob in an Include may match a whole directory). */
const MAX_FILES = 256;

export interface SshConfigHost {
  /** The alias as it is typed: `ssh devbox`. */
  host: string;
  /** The file that names it, for the picker: `~/.ssh/config`, `/etc/ssh/ssh_config.d/work.conf`. */
  file: string;
}

export interface SshConfigSources {
  /** The account's home (default: `sshUserHome()`). */
  home?: string;
  /** The system-wide file (default `/etc/ssh/ssh_config`); its relative Includes are under its directory. */
  systemFile?: string;
}

/**
 * Splits one ssh_config line into its keyword and arguments as ssh does: `Keyword args`, or
 * `Keyword=args`; double quotes group an argument; a `#` that starts a word starts a comment.
 */
export function sshConfigWords(line: string): string[] {
  const words: string[] = [];
  const re = /"([^"]*)"|([^\s"]+)/g;
  const text = line.replace(/^\s*([A-Za-z]+)\s*=\s*/, '$1 ');
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[1] === undefined && m[2]!.startsWith('#')) break;
    words.push(m[1] ?? m[2]!);
  }
  return words;
}

/** A glob(3) pattern of one path component as a RegExp (`*`, `?`, `[…]`); a leading `.` is matched only by a `.`. */
function componentPattern(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The files an absolute Include pattern names, sorted as glob(3) sorts them; none when nothing matches. */
function expandGlob(pattern: string): string[] {
  const parts = pattern.split('/').filter((p) => p !== '');
  let paths = ['/'];
  for (const part of parts) {
    if (!/[*?[]/.test(part)) {
      paths = paths.map((p) => join(p, part));
      continue;
    }
    const re = componentPattern(part);
    const next: string[] = [];
    for (const dir of paths) {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const n of names.sort()) if ((!n.startsWith('.') || part.startsWith('.')) && re.test(n)) next.push(join(dir, n));
    }
    paths = next;
  }
  return paths;
}

/**
 * Every concrete `Host` alias of the files ssh reads (no wildcards or negations), user file first,
 * each alias once (where it is first named). Includes are followed as ssh follows them: outside
 * any block or in one for every host (`Host *`, `Match all`); `~` is the account's home, a
 * relative path is under `~/.ssh` (or the system file's directory), globs expand, nesting stops
 * at ssh's depth bound. Missing or unreadable files name no hosts.
 */
export function sshConfigHostsOf(sources: SshConfigSources = {}): SshConfigHost[] {
  const home = sources.home ?? sshUserHome();
  const systemFile = sources.systemFile ?? '/etc/ssh/ssh_config';
  const out: SshConfigHost[] = [];
  let filesRead = 0;
  const shown = (file: string) => {
    const r = relative(home, file);
    return r !== '' && !r.startsWith('..') && !isAbsolute(r) ? `~/${r}` : file;
  };
  const read = (file: string, base: string, depth: number) => {
    if (depth > SSH_INCLUDE_MAX_DEPTH || filesRead >= MAX_FILES) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    filesRead++;
    // Whether the block we are in applies to every host (a file starts so). An Include inside any
    // other block is read by ssh only for the hosts that block matches, its Hosts never on their
    // own (readconf.c: SSHCONF_NEVERMATCH), so only an Include here can name an alias.
    let everyHost = true;
    for (const line of text.split(/\r?\n/)) {
      const [keyword, ...args] = sshConfigWords(line);
      const k = keyword?.toLowerCase();
      if (k === 'host') {
        everyHost = args.includes('*');
        for (const h of args) if (!/[*?!]/.test(h) && !out.some((o) => o.host === h)) out.push({ host: h, file: shown(file) });
      } else if (k === 'match') {
        everyHost = args.length === 1 && args[0]!.toLowerCase() === 'all';
      } else if (k === 'include' && everyHost) {
        for (const arg of args) {
          const path = arg.startsWith('~/') ? join(home, arg.slice(2)) : isAbsolute(arg) ? arg : join(base, arg);
          for (const f of expandGlob(path)) read(f, base, depth + 1);
        }
      }
    }
  };
  read(join(home, '.ssh', 'config'), join(home, '.ssh'), 0);
  read(systemFile, join(systemFile, '..'), 0);
  return out;
}
