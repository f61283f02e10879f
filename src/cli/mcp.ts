import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { CLI_VERSION } from '../client';
import { BundledServer, ExecutorConnection, sandboxLabel } from '../core';
import { errorMessage } from '../util';
import { MCP_USAGE, parseMcpArgs, type McpArgs } from './mcpArgs';
import { ExecutorTools, type ToolAnswer } from './mcpTools';
import { HelpRequested, UsageError } from './runArgs';
import { readTokenFile } from './tokenFile';

export { MCP_USAGE } from './mcpArgs';

/** After "the bundled exec-server … is gone, and what ran on it ended with it.": what an agent does then. */
export const BUNDLED_RESTART_HINT = 'The next command of this MCP server starts it again: run again what you still need';

/** run_command's timeout when the call gives none, and the longest it may ask for. */
const DEFAULT_TIMEOUT_S = 120;
const MAX_TIMEOUT_S = 3600;
/** How long start_process waits for first output when the call says nothing; the longest any wait may be. */
const DEFAULT_START_WAIT_S = 3;
const MAX_WAIT_S = 60;

/**
 * `exec-bridge mcp`: the executor tools as an MCP server on stdio. It ends when stdin closes (the
 * agent went away) or on SIGTERM/SIGINT/SIGHUP, and kills every process it started first.
 */
export async function mcpCommand(argv: string[]): Promise<number> {
  let args: McpArgs;
  try {
    args = parseMcpArgs(argv);
  } catch (e) {
    if (e instanceof HelpRequested) {
      process.stdout.write(MCP_USAGE + '\n');
      return 0;
    }
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`exec-bridge mcp: ${e.message}\n${MCP_USAGE}\n`);
    return 2;
  }
  // stdout is the MCP channel: every word of ours goes to stderr.
  const say = (line: string) => process.stderr.write(`exec-bridge mcp: ${line}\n`);
  const debug = args.verbose ? say : () => undefined;
  const cliPath = process.argv[1]!;
  const bundled = args.executors.some((e) => e.config.kind === 'bundled') ? new BundledServer({ cliPath, log: debug }) : undefined;
  const connections = args.executors.map(
    (e) =>
      new ExecutorConnection(e.config, {
        ...(bundled ? { bundled } : {}),
        getToken: () => Promise.resolve(e.tokenFile !== undefined ? readTokenFile(e.tokenFile) : process.env.EXEC_BRIDGE_TOKEN),
        sshBundle: { cliPath },
        // Not VS Code's Reconnect: here the next tool call starts the daemon again (ExecutorConnection.connect).
        bundledRestartHint: BUNDLED_RESTART_HINT,
        // Nothing here reattaches later: no spool (it halves a stream's throughput), and a short
        // session, so that a server killed outright leaves nothing running for long.
        clientOptions: { clientName: 'exec-bridge-mcp', sessionTtlMs: args.sessionTtlMs, outputSpool: false },
        log: debug,
      }),
  );
  const tools = new ExecutorTools({
    executors: connections,
    sandbox: args.sandbox,
    allowUnsandboxed: args.allowUnsandboxed,
    outputLimit: args.maxOutputBytes,
    log: debug,
  });
  const server = new McpServer(
    { name: 'exec-bridge', version: CLI_VERSION },
    { capabilities: { tools: {} }, instructions: instructions(args, connections[0]!.name) },
  );
  registerTools(server, tools, connections[0]!.name);
  await server.connect(new StdioServerTransport());
  debug(`ready: executors ${connections.map((c) => c.name).join(', ')}; sandbox ${sandboxLabel(args.sandbox)}`);

  return new Promise<number>((resolve) => {
    let closing = false;
    const close = (why: string) => {
      if (closing) return;
      closing = true;
      debug(`closing: ${why}`);
      void tools
        .close()
        .catch((e: unknown) => say(`stopping the processes: ${errorMessage(e)}`))
        .finally(() => {
          for (const c of connections) c.dispose('exec-bridge mcp is closing');
          bundled?.dispose();
          resolve(0);
        });
    };
    process.stdin.once('end', () => close('stdin ended'));
    process.stdin.once('close', () => close('stdin closed'));
    process.stdout.on('error', () => close('stdout closed'));
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, () => close(signal));
  });
}

function instructions(args: McpArgs, defaultExecutor: string): string {
  const s = args.sandbox;
  const sandbox = s.policy === 'full-access' && s.network ? 'no sandbox (full-access, network on)' : `a sandbox (${sandboxLabel(s)})`;
  return (
    `Runs shell commands on executors through Exec Bridge (default executor: ${defaultExecutor}; list_executors names them all). ` +
    `Every command runs in ${sandbox}. When the sandbox blocks a command, the tool call fails with "blocked by the sandbox"` +
    (args.allowUnsandboxed
      ? '; re-run it with unsandboxed: true only if the user allowed that command.'
      : '; this server runs nothing outside the sandbox, so tell the user.') +
    ' Use run_command for commands that finish, start_process for servers and watchers (then read_process_output). ' +
    'Output is bounded: its head and tail, with a line saying how many bytes were left out in between.'
  );
}

const CommandShape = {
  command: z
    .string()
    .min(1, 'command must not be empty')
    .describe(
      'The shell command line, e.g. "npm test 2>&1". It runs as `SHELL -c COMMAND` with the executor user\'s shell (bash, zsh or sh).',
    ),
  cwd: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Working directory on the executor, absolute or relative to the default one (list_executors shows it). Default: the default one, which is also the workspace the sandbox lets the command write.',
    ),
  executor: z.string().optional().describe('Which executor (list_executors names them). Default: the first one.'),
  unsandboxed: z
    .boolean()
    .optional()
    .describe(
      'Run outside the sandbox. Only after the sandbox blocked this command AND the user allowed running it unsandboxed; refused unless the server was started with --allow-unsandboxed.',
    ),
  env: z
    .record(z.string(), z.string())
    .optional()
    .describe("Environment variables to set for the command, on top of the executor's environment."),
};

const waitSeconds = (description: string) =>
  z
    .number()
    .min(0, 'wait_seconds must not be negative')
    .max(MAX_WAIT_S, `wait_seconds may be at most ${MAX_WAIT_S}`)
    .optional()
    .describe(description);
const waitFor = z
  .string()
  .min(1)
  .optional()
  .describe('Stop waiting as soon as this exact text appears in new output (e.g. "Listening on").');
const waits = (seconds: number, text: string | undefined) => ({ waitMs: seconds * 1000, ...(text !== undefined ? { waitFor: text } : {}) });

const Id = z.string().min(1, 'id must not be empty').describe('The id start_process answered, e.g. "bg-1a2b3c4d".');

function answer(a: ToolAnswer): { content: Array<{ type: 'text'; text: string }>; isError?: boolean } {
  return { content: [{ type: 'text', text: a.text }], ...(a.isError ? { isError: true } : {}) };
}

function registerTools(server: McpServer, tools: ExecutorTools, defaultExecutor: string): void {
  server.registerTool(
    'run_command',
    {
      title: 'Run a command',
      description:
        `Runs a shell command on an executor (default: ${defaultExecutor}) in the sandbox, waits for it to finish, and answers with its exit code and output ` +
        '(stdout and stderr together, bounded: head and tail with an "N bytes left out" line between). Its stdin is empty. ' +
        'It is killed when timeout_seconds pass. For servers, watchers and anything that runs on, use start_process instead.',
      inputSchema: {
        ...CommandShape,
        timeout_seconds: z
          .number()
          .positive('timeout_seconds must be more than 0')
          .max(MAX_TIMEOUT_S, `timeout_seconds may be at most ${MAX_TIMEOUT_S}`)
          .optional()
          .describe(`Kill the command after this many seconds. Default ${DEFAULT_TIMEOUT_S}.`),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    async ({ timeout_seconds, ...p }, extra) =>
      answer(await tools.run({ ...p, timeoutMs: (timeout_seconds ?? DEFAULT_TIMEOUT_S) * 1000 }, extra.signal)),
  );
  server.registerTool(
    'start_process',
    {
      title: 'Start a background process',
      description:
        'Starts a long-running shell command (a dev server, a watcher, an interactive program) on an executor in the sandbox and answers with its id ' +
        `and what it wrote in its first ${DEFAULT_START_WAIT_S} seconds (wait_seconds). Then read_process_output gives what it wrote since the last read, ` +
        'write_process_input writes to its stdin, stop_process ends it. Every background process is killed when this MCP server closes.',
      inputSchema: {
        ...CommandShape,
        wait_seconds: waitSeconds(
          `Wait up to this many seconds for first output before answering (less if it exits, or once wait_for appears). Default ${DEFAULT_START_WAIT_S}.`,
        ),
        wait_for: waitFor,
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    async ({ wait_seconds, wait_for, ...p }, extra) =>
      answer(await tools.start({ ...p, ...waits(wait_seconds ?? DEFAULT_START_WAIT_S, wait_for) }, extra.signal)),
  );
  server.registerTool(
    'read_process_output',
    {
      title: 'Read a background process',
      description:
        'Answers with the state of a background process (running, or its exit code) and what it wrote since the last read (bounded: head and tail). ' +
        'With wait_seconds it first waits, up to that long, for the process to exit, or with wait_for for that text to appear in its output.',
      inputSchema: {
        id: Id,
        wait_seconds: waitSeconds(
          'Wait up to this many seconds for the process to exit (or for wait_for) before answering. Default 0: answer at once.',
        ),
        wait_for: waitFor,
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ id, wait_seconds, wait_for }, extra) => answer(await tools.read({ id, ...waits(wait_seconds ?? 0, wait_for) }, extra.signal)),
  );
  server.registerTool(
    'write_process_input',
    {
      title: 'Write to a background process',
      description:
        "Writes text to a background process's stdin, followed by a newline unless newline is false (a line for a prompt or a REPL). " +
        'Stdin cannot be closed, so a command that reads it to the end never finishes by itself.',
      inputSchema: {
        id: Id,
        text: z.string().describe('The text to write.'),
        newline: z.boolean().optional().describe('Send a newline after the text. Default true.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    async (p) => answer(await tools.write(p)),
  );
  server.registerTool(
    'stop_process',
    {
      title: 'Stop a background process',
      description:
        'Stops a background process: an interrupt (SIGINT), then after a second the kill of its whole process group. Answers with its exit code and its last output.',
      inputSchema: { id: Id },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    },
    async (p) => answer(await tools.stop(p)),
  );
  server.registerTool(
    'list_executors',
    {
      title: 'List executors',
      description:
        'Lists the executors commands can run on (the first is the default), each with its connection state and default working directory, the sandbox, and the background processes.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () => answer(tools.list()),
  );
}
