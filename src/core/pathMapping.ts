import { posix } from 'node:path';

/** The URI scheme of files on an executor: `execbridge://<executor>/<absolute path>`. */
export const EXECUTOR_FS_SCHEME = 'execbridge';

/**
 * A local folder and the folder on the executor that holds the same tree. Identity on the
 * bundled executor (same machine); for a remote one the task's `executorRoot` says where.
 */
export interface PathMapping {
  /** Absolute local path (the VS Code workspace folder). */
  local: string;
  /** Absolute path on the executor. */
  executor: string;
}

const trim = (p: string) => (p.length > 1 ? p.replace(/\/+$/, '') : p);

/** `/a/b` inside `/a`? (`/ab` is not). */
function within(path: string, root: string): boolean {
  return root === '/' ? path.startsWith('/') : path === root || path.startsWith(`${root}/`);
}

/** An executor path as the local path it stands for; undefined outside the mapped folder. */
export function executorToLocal(path: string, m: PathMapping): string | undefined {
  const [p, root] = [posix.normalize(path), trim(m.executor)];
  if (!within(p, root)) return undefined;
  return trim(posix.join(trim(m.local), p.slice(root.length)));
}

/** A local path as the executor path it stands for; undefined outside the mapped folder. */
export function localToExecutor(path: string, m: PathMapping): string | undefined {
  const [p, root] = [posix.normalize(path), trim(m.local)];
  if (!within(p, root)) return undefined;
  return trim(posix.join(trim(m.executor), p.slice(root.length)));
}

/** Whether the mapping changes anything (the bundled executor's is the identity). */
export function isIdentity(m: PathMapping): boolean {
  return trim(m.local) === trim(m.executor);
}

/** `execbridge://<executor>/<path>` with the executor name percent-encoded. */
export function executorFileUri(executor: string, path: string): string {
  const p = path.split('/').map(encodeURIComponent).join('/');
  return `${EXECUTOR_FS_SCHEME}://${encodeURIComponent(executor)}${p.startsWith('/') ? p : `/${p}`}`;
}

/**
 * Replaces one string by another in a stream of text chunks, also where an occurrence is split
 * across chunks: the end of a chunk that could be the start of one is held back until the next
 * chunk or `end()`. Used to print local paths where the executor prints its own.
 */
export class StreamReplacer {
  private held = '';

  constructor(
    private readonly from: string,
    private readonly to: string,
  ) {}

  push(chunk: string): string {
    if (!this.from) return chunk;
    const text = this.held + chunk;
    this.held = '';
    const replaced = text.split(this.from).join(this.to);
    // Only the unreplaced tail can hold a partial occurrence: find the longest suffix that starts `from`.
    const lastFull = text.lastIndexOf(this.from);
    const tailStart = lastFull < 0 ? 0 : lastFull + this.from.length;
    const maxKeep = Math.min(this.from.length - 1, text.length - tailStart);
    for (let k = maxKeep; k > 0; k--) {
      if (this.from.startsWith(text.slice(text.length - k))) {
        this.held = text.slice(text.length - k);
        return replaced.slice(0, replaced.length - k);
      }
    }
    return replaced;
  }

  /** Whatever was held back (the stream ended). */
  end(): string {
    const rest = this.held;
    this.held = '';
    return rest;
  }
}

export interface PathLink {
  /** Index in the line and length of the whole link text (`path:line:col`). */
  start: number;
  length: number;
  /** Absolute, on the executor. */
  path: string;
  /** Printed relative to the terminal's cwd (it may not name a file: check before offering it). */
  relative?: boolean;
  line?: number;
  column?: number;
}

/**
 * Paths in a line of terminal output, with an optional `:line[:col]` or `(line,col)` (tsc)
 * suffix: absolute ones, and, when `cwd` is known, relative ones that have a file extension and a
 * line suffix (what compilers print: `src/a.ts(3,7)`, `./m.c:3:14`), resolved against `cwd` and
 * marked `relative` (a caller should check they exist). A path ends at whitespace, a quote, a
 * bracket or a colon; a trailing `.` or `,` (end of a sentence) is not part of it.
 */
export function findPathLinks(line: string, cwd?: string): PathLink[] {
  const out: PathLink[] = [];
  if (cwd !== undefined && cwd.startsWith('/')) out.push(...relativePathLinks(line, cwd));
  const re = /(?<![\w.~/:-])(\/[^\s:'"`()<>[\]{}|;,]+)(?::(\d+)(?::(\d+))?|\((\d+),(\d+)\))?/g;
  for (let m = re.exec(line); m !== null && out.length < 100; m = re.exec(line)) {
    let path = m[1]!;
    let text = m[0];
    if (m[2] === undefined && m[4] === undefined) {
      const stripped = path.replace(/[.]+$/, '');
      text = text.slice(0, text.length - (path.length - stripped.length));
      path = stripped;
    }
    if (path.length < 2) continue;
    const lineNo = m[2] ?? m[4];
    const col = m[3] ?? m[5];
    out.push({
      start: m.index,
      length: text.length,
      path,
      ...(lineNo !== undefined ? { line: Number(lineNo) } : {}),
      ...(col !== undefined ? { column: Number(col) } : {}),
    });
  }
  return out.sort((a, b) => a.start - b.start);
}

function relativePathLinks(line: string, cwd: string): PathLink[] {
  const out: PathLink[] = [];
  const re = /(?<![\w.~/:@$%-])((?:\.\.?\/)*[\w+-][\w.+-]*(?:\/[\w.+-]+)*\.[A-Za-z0-9]+)(?::(\d+)(?::(\d+))?|\((\d+),(\d+)\))/g;
  for (let m = re.exec(line); m !== null && out.length < 100; m = re.exec(line)) {
    const lineNo = m[2] ?? m[4];
    const col = m[3] ?? m[5];
    out.push({
      start: m.index,
      length: m[0].length,
      path: posix.normalize(posix.join(cwd, m[1]!)),
      relative: true,
      ...(lineNo !== undefined ? { line: Number(lineNo) } : {}),
      ...(col !== undefined ? { column: Number(col) } : {}),
    });
  }
  return out;
}

/** Prints local paths for the executor's: `executorRoot/` becomes `localRoot/` in the output. */
export function outputRewriter(m: PathMapping): StreamReplacer | undefined {
  if (isIdentity(m)) return undefined;
  const withSlash = (p: string) => (trim(p) === '/' ? '/' : `${trim(p)}/`);
  return new StreamReplacer(withSlash(m.executor), withSlash(m.local));
}
