/**
 * A POSIX `sh` wrapper that kills what an MCP server leaves behind when it exits on its own.
 *
 * Why: exec-servers kill the process group on `process/terminate`, but when the server process
 * crashes, helpers it started (language servers, `sleep`s, watchers) stay in its group and nobody
 * signals them — and `codex exec-server` answers `terminate` of an exited process with a no-op.
 * That is the "hundreds of orphaned servers" class of leak. The wrapper runs the server in the
 * foreground (so stdin and signal dispositions are the server's own), and when it returns, reports
 * the exit code on stderr as a marker line and SIGKILLs the rest of its process group.
 *
 * It kills only if the group is its own (pgid = pid, which exec-servers arrange), never an
 * exec-server's group. The marker is parsed by the transport and hidden from the log.
 */

export const EXIT_MARKER = 'exec-bridge-mcp-exit:';
/** `$0` of the wrapper; also how tests tell a wrapper from a server in the process table. */
export const WRAPPER_NAME = 'exec-bridge-mcp';

const SCRIPT = [
  // Handlers (not "ignore") reset to the default in the server, which still gets group signals.
  "trap ':' INT TERM HUP",
  '"$@"',
  'rc=$?',
  "trap '' INT TERM HUP",
  `printf '\\n${EXIT_MARKER}%d\\n' "$rc" >&2`,
  'pg=',
  'if [ -r /proc/$$/stat ]; then set -- $(sed "s/.*) //" /proc/$$/stat); pg=$3; else pg=$(ps -o pgid= -p $$ 2>/dev/null | tr -d " "); fi',
  '[ "$pg" = "$$" ] && kill -KILL 0',
  'exit "$rc"',
].join('\n');

/** The argv that runs `argv` under the wrapper. */
export function wrapWithReaper(argv: readonly string[]): string[] {
  return ['/bin/sh', '-c', SCRIPT, WRAPPER_NAME, ...argv];
}

/** The exit code in a marker line, or undefined if `line` is not one. */
export function parseExitMarker(line: string): number | undefined {
  if (!line.startsWith(EXIT_MARKER)) return undefined;
  const n = Number(line.slice(EXIT_MARKER.length).trim());
  return Number.isInteger(n) ? n : undefined;
}
