import { posix } from 'node:path';
import type { ExecServerClient } from '../client/execServerClient';
import { RemoteError } from '../client/errors';
import type { ProcessHandle } from '../client/processHandle';
import { LineSplitter } from '../util/lineSplitter';
import { sandboxUnavailableReason } from './approvalPolicy';
import { sandboxRequest } from './sandboxSettings';

/*
 * Search in executor folders (README "Executor files"): ripgrep (`rg --json`) run on the executor,
 * or `grep -r` where it has no rg, through the exec-server like any command, in the executor's
 * sandbox with a read-only file system. Used by VS Code's Find in Files where VS Code lets an
 * extension search a file system of its own (vscode/executorSearch.ts) and by "Exec Bridge: Find in
 * Executor Files…".
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

/**
 * A glob (as VS Code writes them: `**`, `*`, `?`, `{a,b}`, `[abc]`) as a RegExp over a path relative
 * to the folder. A glob names a file or a folder (then everything below it matches too).
 */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  let inBraces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` any folders (also none); a trailing `**` anything.
        if (glob[i + 2] === '/') {
          out += '(?:.*/)?';
          i += 2;
        } else {
          out += '.*';
          i++;
        }
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '{') {
      inBraces++;
      out += '(?:';
    } else if (c === '}' && inBraces > 0) {
      inBraces--;
      out += ')';
    } else if (c === ',' && inBraces > 0) out += '|';
    else if (c === '[') {
      const close = glob.indexOf(']', i + 1);
      if (close < 0) out += '\\[';
      else {
        out += `[${glob
          .slice(i + 1, close)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = close;
      }
    } else out += c.replace(/[.+^$()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}(?:/.*)?$`);
}

/** Whether `relative` (to the scope's folder) passes the scope's includes and excludes. */
export function inScope(relative: string, scope: SearchScope): boolean {
  if ((scope.excludes ?? []).some((g) => globToRegExp(g).test(relative))) return false;
  const includes = scope.includes ?? [];
  return includes.length === 0 || includes.some((g) => globToRegExp(g).test(relative));
}

/** A fuzzy file-name query (Quick Open's): its characters in order in the path, case-insensitive. */
export function fuzzyMatches(path: string, query: string): boolean {
  const q = query.replace(/\s+/g, '').toLowerCase();
  if (q === '') return true;
  const p = path.toLowerCase();
  let i = 0;
  for (const ch of p) if (ch === q[i] && ++i === q.length) return true;
  return false;
}

/** How a search runs a command on the executor: argv, stdout as it comes, the exit code and stderr at the end. */
export interface SearchProcesses {
  run(
    argv: string[],
    cwd: string,
    onStdout: (data: Buffer) => void,
    signal: AbortSignal,
  ): Promise<{ exitCode: number; stderr: string; sandboxed: boolean }>;
}

/** Thrown when the tool is not on the executor (the search falls back to the next tool). */
export class ToolMissingError extends Error {}

const MAX_STDERR = 64 * 1024;

/**
 * Commands of a search through an exec-server client: in the executor's sandbox, file system
 * read-only and no network (a search reads, it never writes); where the executor cannot build a
 * sandbox at all, unsandboxed (the argv is ours, with `--no-config`: nothing of the user's runs).
 */
export function clientProcesses(
  client: () => Promise<Pick<ExecServerClient, 'startProcess'>>,
  log?: (line: string) => void,
): SearchProcesses {
  return {
    async run(argv, cwd, onStdout, signal) {
      const c = await client();
      const sandbox = sandboxRequest({ policy: 'read-only', network: false }, cwd);
      let handle: ProcessHandle;
      let sandboxed = true;
      try {
        try {
          handle = await c.startProcess({ argv, cwd, ...(sandbox ? { sandbox } : {}), signal });
        } catch (e) {
          const unavailable = sandboxUnavailableReason(e);
          if (unavailable === undefined) throw e;
          log?.(`search: the executor cannot sandbox (${unavailable}); running ${argv[0]} without the sandbox`);
          sandboxed = false;
          handle = await c.startProcess({ argv, cwd, signal });
        }
      } catch (e) {
        if (e instanceof RemoteError && (e.data as { kind?: unknown } | undefined)?.kind === 'spawnNotFound')
          throw new ToolMissingError(argv[0]);
        throw e;
      }
      let stderr = '';
      handle.onEvent((e) => {
        if (e.type !== 'output') return;
        if (e.stream === 'stderr') {
          if (stderr.length < MAX_STDERR) stderr += e.data.toString('utf8');
        } else onStdout(e.data);
      });
      const stop = () => void handle.terminate().catch(() => undefined);
      signal.addEventListener('abort', stop, { once: true });
      try {
        const done = await handle.completion;
        // Inside a sandbox the missing tool shows as the sandbox helper's failed exec.
        if (/execvp?\b.*No such file or directory|: (?:command )?not found/i.test(stderr) && done.exitCode !== 0 && done.exitCode !== 1)
          throw new ToolMissingError(argv[0]);
        return { exitCode: done.exitCode, stderr, sandboxed };
      } finally {
        signal.removeEventListener('abort', stop);
      }
    },
  };
}

export interface TextSearchOutcome {
  /** Matches reported (at most `maxResults`). */
  count: number;
  /** There were more than `maxResults`, or the search was stopped. */
  limitHit: boolean;
  tool: SearchTool;
  /** It ran in the executor's sandbox (read-only); false where the executor cannot build one. */
  sandboxed: boolean;
}

export interface SearchTools {
  /** argv[0] of ripgrep and of grep on the executor (tests point them elsewhere). */
  rg: string;
  grep: string;
}

const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** Text and file search on one executor. */
export class ExecutorSearch {
  /** Executors with no rg: asked once, then grep straight away. */
  private noRipgrep = false;

  constructor(
    private readonly processes: SearchProcesses,
    private readonly tools: SearchTools = { rg: 'rg', grep: 'grep' },
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** Every match of `q` in `scope`, given to `onMatch` as found, until `maxResults` (then `limitHit`). */
  async findText(
    q: TextQuery,
    scope: SearchScope,
    options: { maxResults: number; signal?: AbortSignal; onMatch(m: TextMatch): void },
  ): Promise<TextSearchOutcome> {
    if (!this.noRipgrep) {
      try {
        return await this.run('rg', q, scope, options);
      } catch (e) {
        if (!(e instanceof ToolMissingError)) throw e;
        this.noRipgrep = true;
        this.log(`search: no ripgrep (${this.tools.rg}) on the executor; using grep`);
      }
    }
    try {
      return await this.run('grep', q, scope, options);
    } catch (e) {
      if (e instanceof ToolMissingError) throw new Error('the executor has neither ripgrep (rg) nor grep to search with');
      throw e;
    }
  }

  private async run(
    tool: SearchTool,
    q: TextQuery,
    scope: SearchScope,
    options: { maxResults: number; signal?: AbortSignal; onMatch(m: TextMatch): void },
  ): Promise<TextSearchOutcome> {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let count = 0;
    let limitHit = false;
    const re = tool === 'grep' ? queryRegExp(q) : undefined;
    const take = (m: TextMatch) => {
      if (stop.signal.aborted) return;
      if (tool === 'grep' && !inScope(posix.relative(scope.folder, m.path), scope)) return;
      if (count >= options.maxResults) {
        limitHit = true;
        stop.abort();
        return;
      }
      count++;
      options.onMatch(m);
    };
    const lines = new LineSplitter({
      maxLineBytes: MAX_LINE_BYTES,
      overflow: 'discard',
      onLine: (line) => {
        if (tool === 'rg') for (const m of parseRipgrepLine(line.toString('utf8'))) take(m);
        else {
          const m = parseGrepLine(line, re);
          if (m) take(m);
        }
      },
      onOverflow: () => undefined,
    });
    try {
      const argv = tool === 'rg' ? [this.tools.rg, ...ripgrepArgs(q, scope)] : [this.tools.grep, ...grepArgs(q, scope)];
      const r = await this.processes.run(argv, scope.folder, (d) => lines.push(d), stop.signal);
      if (options.signal?.aborted) limitHit = true;
      // rg and grep: 0 found, 1 nothing found, 2 an error (with matches: some files could not be read).
      if (r.exitCode > 1 && count === 0 && !stop.signal.aborted) {
        const why = r.stderr.trim().split('\n')[0] || `exit code ${r.exitCode}`;
        throw new Error(`${tool} failed on the executor: ${why}`);
      }
      return { count, limitHit, tool, sandboxed: r.sandboxed };
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Files of `scope` whose path (relative to its folder) fuzzily matches `pattern`, at most `maxResults` (rg --files, or find). */
  async findFiles(
    pattern: string,
    scope: SearchScope,
    options: { maxResults: number; signal?: AbortSignal },
  ): Promise<{ paths: string[]; limitHit: boolean }> {
    const paths: string[] = [];
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let limitHit = false;
    const lines = new LineSplitter({
      maxLineBytes: 64 * 1024,
      overflow: 'discard',
      onLine: (line) => {
        if (stop.signal.aborted) return;
        const path = line.toString('utf8').replace(/\r$/, '');
        if (path === '') return;
        const rel = posix.relative(scope.folder, path);
        if (!fuzzyMatches(rel, pattern) || (this.noRipgrep && !inScope(rel, scope))) return;
        if (paths.length >= options.maxResults) {
          limitHit = true;
          stop.abort();
          return;
        }
        paths.push(path);
      },
      onOverflow: () => undefined,
    });
    try {
      const run = (argv: string[]) => this.processes.run(argv, scope.folder, (d) => lines.push(d), stop.signal);
      if (!this.noRipgrep) {
        try {
          await run([this.tools.rg, ...ripgrepFilesArgs(scope)]);
          return { paths, limitHit };
        } catch (e) {
          if (!(e instanceof ToolMissingError)) throw e;
          this.noRipgrep = true;
        }
      }
      await run(['find', ...(scope.followSymlinks ? ['-L'] : []), scope.folder, '-name', '.git', '-prune', '-o', '-type', 'f', '-print']);
      return { paths, limitHit };
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }
}
