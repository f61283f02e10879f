/*
 * The command lines of a search on the executor (ripgrep, else grep) for a query and a scope, and
 * what their output lines mean: the matches, with their columns (core/executorSearch.ts runs them).
 */

export interface TextQuery {
  pattern: string;
  isRegExp?: boolean;
  isCaseSensitive?: boolean;
  isWordMatch?: boolean;
}

export interface SearchScope {
  /** An absolute folder on the executor. */
  folder: string;
  /** Globs relative to the folder (`**\/*.ts`, `src/**`); a file must match one of them. */
  includes?: readonly string[];
  /** Globs relative to the folder; what matches (a file, or a folder and all below it) is left out. */
  excludes?: readonly string[];
  /** Honour `.gitignore`/`.ignore` files (default true), the parent folders' (default true) and the global ones (default true). */
  useIgnoreFiles?: boolean;
  useParentIgnoreFiles?: boolean;
  useGlobalIgnoreFiles?: boolean;
  followSymlinks?: boolean;
  /** Files larger than this (bytes) are skipped. */
  maxFileSize?: number;
}

/** One line that matches; `line` is 0-based, `ranges` are UTF-16 columns in `text`. */
export interface TextMatch {
  path: string;
  line: number;
  text: string;
  ranges: Array<{ start: number; end: number }>;
}

export type SearchTool = 'rg' | 'grep';

/** `rg` arguments (after argv[0]) for a text search: JSON lines out, no config file, hidden files in (as VS Code searches). */
export function ripgrepArgs(q: TextQuery, scope: SearchScope): string[] {
  const args = ['--json', '--no-config', '--hidden', '--no-messages'];
  args.push(q.isCaseSensitive ? '--case-sensitive' : '--ignore-case');
  if (!q.isRegExp) args.push('--fixed-strings');
  if (q.isWordMatch) args.push('--word-regexp');
  if (q.isRegExp && /\\n|\n/.test(q.pattern)) args.push('--multiline');
  args.push(...scopeArgs(scope));
  args.push('--regexp', q.pattern, '--', scope.folder);
  return args;
}

/** `rg --files` arguments: every file of the scope, one path a line. */
export function ripgrepFilesArgs(scope: SearchScope): string[] {
  return ['--files', '--no-config', '--hidden', '--no-messages', ...scopeArgs(scope), '--', scope.folder];
}

function scopeArgs(scope: SearchScope): string[] {
  const args: string[] = [];
  if (scope.useIgnoreFiles === false) args.push('--no-ignore');
  else {
    if (scope.useParentIgnoreFiles === false) args.push('--no-ignore-parent');
    if (scope.useGlobalIgnoreFiles === false) args.push('--no-ignore-global');
  }
  if (scope.followSymlinks) args.push('--follow');
  if (scope.maxFileSize !== undefined && scope.maxFileSize > 0) args.push('--max-filesize', String(scope.maxFileSize));
  for (const g of scope.includes ?? []) args.push('--glob', g);
  for (const g of scope.excludes ?? []) args.push('--glob', `!${g}`);
  return args;
}

/** rg's JSON for a path or a line: `{text}`, or `{bytes}` (base64) when it is not UTF-8. */
function rgText(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as { text?: unknown; bytes?: unknown };
  if (typeof o.text === 'string') return o.text;
  if (typeof o.bytes === 'string') return Buffer.from(o.bytes, 'base64').toString('utf8');
  return undefined;
}

/** The matches of one `rg --json` line (a multi-line match gives one per line), or none for any other message. */
export function parseRipgrepLine(line: string): TextMatch[] {
  let msg: { type?: unknown; data?: Record<string, unknown> };
  try {
    msg = JSON.parse(line) as typeof msg;
  } catch {
    return [];
  }
  if (msg.type !== 'match' || !msg.data) return [];
  const d = msg.data;
  const path = rgText(d.path);
  const text = rgText(d.lines);
  const first = typeof d.line_number === 'number' ? d.line_number - 1 : undefined;
  if (path === undefined || text === undefined || first === undefined) return [];
  const bytes = Buffer.from(text, 'utf8');
  const lines = text.split('\n');
  if (lines.length > 1 && lines.at(-1) === '') lines.pop();
  // Byte offsets of each line's start in `text`.
  const starts: number[] = [];
  let offset = 0;
  for (const l of lines) {
    starts.push(offset);
    offset += Buffer.byteLength(l, 'utf8') + 1;
  }
  const out: TextMatch[] = lines.map((l, i) => ({ path, line: first + i, text: l.replace(/\r$/, ''), ranges: [] }));
  const subs = Array.isArray(d.submatches) ? (d.submatches as Array<{ start?: unknown; end?: unknown }>) : [];
  const column = (lineIndex: number, byte: number) =>
    bytes.subarray(starts[lineIndex]!, starts[lineIndex]! + Math.max(0, byte - starts[lineIndex]!)).toString('utf8').length;
  const lineOf = (byte: number) => {
    let i = 0;
    while (i + 1 < starts.length && starts[i + 1]! <= byte) i++;
    return i;
  };
  for (const s of subs) {
    if (typeof s.start !== 'number' || typeof s.end !== 'number') continue;
    const a = lineOf(s.start);
    const b = lineOf(Math.max(s.start, s.end - 1));
    for (let i = a; i <= b; i++) {
      const start = i === a ? column(i, s.start) : 0;
      const end = i === b ? column(i, s.end) : out[i]!.text.length;
      out[i]!.ranges.push({ start, end: Math.max(start, Math.min(end, out[i]!.text.length)) });
    }
  }
  return out.filter((m) => m.ranges.length > 0);
}

/** `grep` arguments (after argv[0]): recursive, line numbers, NUL after the file name, binary files skipped. */
export function grepArgs(q: TextQuery, scope: SearchScope): string[] {
  const args = ['-r', '-n', '-H', '-I', '-Z', '--color=never'];
  if (scope.followSymlinks) args[0] = '-R';
  args.push(q.isRegExp ? '-P' : '-F');
  if (!q.isCaseSensitive) args.push('-i');
  if (q.isWordMatch) args.push('-w');
  // grep's --include/--exclude see base names: only `**/NAME`-shaped globs translate (results are filtered by the globs after).
  const includes = (scope.includes ?? []).map((g) => /^\*\*\/([^/{}]+)$/.exec(g)?.[1]);
  // Includes are alternatives: all of them, or none (then only the filter after applies).
  if (includes.length > 0 && includes.every((b) => b !== undefined)) for (const b of includes) args.push(`--include=${b}`);
  for (const g of scope.excludes ?? []) {
    const base = /^\*\*\/([^/{}]+?)(?:\/\*\*)?$/.exec(g)?.[1];
    if (base) args.push(`--exclude=${base}`, `--exclude-dir=${base}`);
  }
  args.push('-e', q.pattern, '--', scope.folder);
  return args;
}

/** A JS RegExp for `q` (what grep does not say: where on the line it matched). */
export function queryRegExp(q: TextQuery): RegExp | undefined {
  const body = q.isRegExp ? q.pattern : q.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  try {
    return new RegExp(q.isWordMatch ? `\\b(?:${body})\\b` : body, q.isCaseSensitive ? 'gu' : 'giu');
  } catch {
    return undefined;
  }
}

/** One `grep -Z -n` line: `PATH\0LINE:TEXT`. */
export function parseGrepLine(line: Buffer, re: RegExp | undefined): TextMatch | undefined {
  const nul = line.indexOf(0);
  if (nul < 0) return undefined;
  const path = line.subarray(0, nul).toString('utf8');
  const rest = line.subarray(nul + 1).toString('utf8');
  const m = /^(\d+):/.exec(rest);
  if (!m) return undefined;
  const text = rest.slice(m[0].length).replace(/\r$/, '');
  const ranges: TextMatch['ranges'] = [];
  if (re) {
    re.lastIndex = 0;
    for (let hit = re.exec(text); hit && ranges.length < 100; hit = re.exec(text)) {
      ranges.push({ start: hit.index, end: hit.index + hit[0].length });
      if (hit[0].length === 0) re.lastIndex++;
    }
  }
  // grep found it even where JS reads the pattern differently: the line is still a result.
  if (ranges.length === 0) ranges.push({ start: 0, end: 0 });
  return { path, line: Number(m[1]) - 1, text, ranges };
}
