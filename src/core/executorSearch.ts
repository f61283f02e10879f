import { posix } from 'node:path';
import { RemoteError, type ExecServerClient, type ProcessHandle } from '../client';
import { LineSplitter } from '../util';
import { sandboxUnavailableReason } from './approvalPolicy';
import { sandboxRequest } from './sandboxSettings';
import {
  grepArgs,
  parseGrepLine,
  parseRipgrepLine,
  queryRegExp,
  ripgrepArgs,
  ripgrepFilesArgs,
  type SearchScope,
  type SearchTool,
  type TextMatch,
  type TextQuery,
} from './searchCommands';

// Moved to searchCommands.ts; importers of this file keep these names.
export { grepArgs, parseGrepLine, parseRipgrepLine, queryRegExp, ripgrepArgs, ripgrepFilesArgs } from './searchCommands';
export type { SearchScope, SearchTool, TextMatch, TextQuery } from './searchCommands';

/*
 * Search in executor folders (README "Executor files"): ripgrep (`rg --json`) run on the executor,
 * or `grep -r` where it has no rg, through the exec-server like any command, in the executor's
 * sandbox with a read-only file system. Used by VS Code's Find in Files where VS Code lets an
 * extension search a file system of its own (vscode/executorSearch.ts) and by "Exec Bridge: Find in
 * Executor Files…".
 */

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
