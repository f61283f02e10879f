import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { inheritAllEnv, DisconnectedError, isExecClientError, type ProcessHandle, type ProcessCompletion } from '../client';
import {
  BoundedOutput,
  outputBound,
  reportedDenial,
  sandboxUnavailableReason,
  redactUrl,
  stateText,
  sandboxLabel,
  sandboxRequest,
  withManagedNetwork,
} from '../core';
import type { ExecutorConfig, ExecutorConnection, SandboxSettings } from '../core';
import { formatDuration, errorMessage, describeExitCode } from '../util';

/*
 * What the tools of `exec-bridge mcp` do, without the MCP SDK (mcp.ts registers them): run a
 * command and answer with its exit code and bounded output; start one in the background and read
 * its new output, write its stdin, stop it; list the executors. They mean what the extension's
 * language-model tools mean (core/agentTools.ts), minus the terminals and the approval prompts:
 * every command runs in the sandbox unless the call says `unsandboxed: true` and the server was
 * started with --allow-unsandboxed. Answers are text for a model; `isError` marks what did not go
 * as asked (a denial, a timeout, bad input), so the agent sees a failed tool call.
 */

export interface ToolAnswer {
  text: string;
  isError?: boolean;
}

export interface CommandParams {
  command: string;
  cwd?: string;
  executor?: string;
  unsandboxed?: boolean;
  env?: Record<string, string>;
}

/** Waiting in start_process and read_process_output: for the exit, or for a text in new output. */
export interface WaitParams {
  waitMs: number;
  waitFor?: string;
}

export interface ExecutorToolsOptions {
  /** The first is the default. */
  executors: readonly ExecutorConnection[];
  sandbox: SandboxSettings;
  allowUnsandboxed: boolean;
  /** Bytes of output one answer carries (and one process holds unread). */
  outputLimit: number;
  log(line: string): void;
  /** Background ids (default `bg-` and 8 hex digits: a restarted server never answers to an old id). */
  newId?(): string;
}

/** Background processes running at once. */
export const MAX_RUNNING = 16;
/** Ended background processes kept for a last read (the oldest go first). */
const KEEP_ENDED = 20;
/** stop_process: SIGINT first, then SIGKILL of the process group after this long (as our MCP servers are stopped). */
const STOP_GRACE_MS = 1_000;
/** How long closing waits for the executors to confirm the kills (an MCP client sends SIGTERM after 2 s); the session TTL ends the rest. */
const CLOSE_WAIT_MS = 1_500;

const NOT_ALLOWED =
  'this server runs nothing outside the sandbox (it was started without --allow-unsandboxed): tell the user what was blocked; they can run the command themselves, or restart the server with --allow-unsandboxed';
const RERUN = 're-run with unsandboxed: true only if the user allowed it';

/** A command started here, with what the answers say about it. */
interface Launched {
  conn: ExecutorConnection;
  handle: ProcessHandle;
  command: string;
  cwd: string;
  sandboxed: boolean;
  /** `workspace-write, network off`, or `none`. */
  label: string;
}

interface Background extends Launched {
  id: string;
  startedAt: number;
  unread: BoundedOutput;
  /** Set once the process is over: its completion, or why it was lost. */
  end?: ProcessCompletion | { lost: string };
  endedAt?: number;
  /** Called on each output chunk, and at the end (no chunk). */
  readonly watchers: Set<(chunk?: Buffer) => void>;
}

export class ExecutorTools {
  private readonly background = new Map<string, Background>();
  /** Every process started here that has not ended: closing kills them. */
  private readonly live = new Set<ProcessHandle>();
  /** `process/start` calls still on their way: closing waits for them, so their processes go too. */
  private readonly starting = new Set<Promise<unknown>>();
  private closed = false;
  /** `close` has taken the processes to stop: a start answered after that stops its own. */
  private stopsTaken = false;

  constructor(private readonly options: ExecutorToolsOptions) {}

  /** run_command: waits for the exit (at most `timeoutMs`: the command is killed then) and answers with the code and the output. */
  async run(p: CommandParams & { timeoutMs: number }, signal?: AbortSignal): Promise<ToolAnswer> {
    const launched = await this.launch(p, false);
    if ('text' in launched) return launched;
    const { handle } = launched;
    const output = new BoundedOutput(outputBound(this.options.outputLimit));
    handle.onEvent((e) => {
      if (e.type === 'output') output.push(e.data);
    });
    let timedOut = false;
    const kill = () => void handle.terminate().catch(() => undefined);
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, p.timeoutMs);
    signal?.addEventListener('abort', kill);
    try {
      const done = await handle.completion;
      const ran = ranLine(launched);
      if (timedOut) {
        return {
          isError: true,
          text:
            `timed out after ${formatDuration(p.timeoutMs)}: the command was killed (${describeExitCode(done.exitCode)}). ` +
            `For a server or a watcher use start_process; for a long build give a larger timeout_seconds.\n${ran}\n${outputBlock('Output', output)}`,
        };
      }
      const denial = this.denial(launched, done);
      const text = `${ran}\nExit: ${describeExitCode(done.exitCode)}.\n${outputBlock('Output', output)}`;
      return denial ? { isError: true, text: `${denial}\n${text}` } : { text };
    } catch (e) {
      return { isError: true, text: `${lostText(p.command, e)}\n${outputBlock('Output', output)}` };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', kill);
    }
  }

  /** start_process: starts the command with a writable stdin, waits a little for its first output (or exit), answers with its id. */
  async start(p: CommandParams & WaitParams, signal?: AbortSignal): Promise<ToolAnswer> {
    const running = [...this.background.values()].filter((b) => !b.end);
    if (running.length >= MAX_RUNNING) {
      return error(
        `${MAX_RUNNING} background processes run already (${running.map((b) => b.id).join(', ')}): stop one with stop_process first`,
      );
    }
    const launched = await this.launch(p, true);
    if ('text' in launched) return launched;
    const bg: Background = {
      ...launched,
      id: this.options.newId?.() ?? `bg-${randomBytes(4).toString('hex')}`,
      startedAt: Date.now(),
      unread: new BoundedOutput(outputBound(this.options.outputLimit)),
      watchers: new Set(),
    };
    this.background.set(bg.id, bg);
    bg.handle.onEvent((e) => {
      if (e.type !== 'output') return;
      bg.unread.push(e.data);
      for (const w of bg.watchers) w(e.data);
    });
    const ended = (end: Background['end']) => {
      bg.end = end;
      bg.endedAt = Date.now();
      for (const w of bg.watchers) w();
      this.trimEnded();
    };
    bg.handle.completion.then(ended, (e: unknown) => ended({ lost: lostText(bg.command, e) }));
    await this.waitFor(bg, p, signal);
    const head = bg.end
      ? `Started \`${bg.command}\` in the background as "${bg.id}" on ${bg.conn.name} (in ${bg.cwd}), and it already ended.`
      : `Started \`${bg.command}\` in the background as "${bg.id}" on ${bg.conn.name} (in ${bg.cwd}). It runs until it ends, you stop it with stop_process, or this MCP server closes; read its new output with read_process_output.`;
    return this.readAnswer(bg, head);
  }

  /** read_process_output: what the process wrote since the last read; with `waitMs` first waits for its exit (or `waitFor`). */
  async read(p: { id: string } & WaitParams, signal?: AbortSignal): Promise<ToolAnswer> {
    const bg = this.find(p.id);
    if ('text' in bg) return bg;
    await this.waitFor(bg, p, signal);
    return this.readAnswer(bg);
  }

  /** write_process_input: writes `text` (and a newline unless `newline` is false) to the process's stdin. */
  async write(p: { id: string; text: string; newline?: boolean }): Promise<ToolAnswer> {
    const bg = this.find(p.id);
    if ('text' in bg) return bg;
    if (bg.end) return this.readAnswer(bg, `"${bg.id}" has ended; nothing was written.`);
    const data = `${p.text}${p.newline === false ? '' : '\n'}`;
    if (data === '') return error('nothing to write: text is empty and newline is false');
    try {
      await bg.handle.write(data);
    } catch (e) {
      return error(`could not write to "${bg.id}": ${errorMessage(e)}`);
    }
    return { text: `Wrote ${Buffer.byteLength(data)} bytes to the stdin of "${bg.id}". Read its answer with read_process_output.` };
  }

  /** stop_process: SIGINT, then after a second SIGKILL of its process group; answers with its end and last output. */
  async stop(p: { id: string }): Promise<ToolAnswer> {
    const bg = this.find(p.id);
    if ('text' in bg) return bg;
    if (bg.end) return this.readAnswer(bg, `"${bg.id}" had already ended.`);
    await bg.handle.interrupt().catch(() => undefined);
    if (!(await settlesWithin(bg.handle.completion, STOP_GRACE_MS))) await bg.handle.terminate().catch(() => undefined);
    // `end` is set by start's completion handler, which runs before this await resumes.
    await settlesWithin(bg.handle.completion, CLOSE_WAIT_MS);
    return this.readAnswer(bg, `Stopped "${bg.id}".`);
  }

  /** list_executors: each executor with its state and directory, the sandbox, then the background processes. */
  list(): ToolAnswer {
    const lines = ['Executors (where commands run; the default is used when a call names none):'];
    this.options.executors.forEach((conn, i) => {
      const cwd = conn.config.cwd ?? (conn.client ? conn.defaultCwd() : undefined);
      const state = stateText(conn.state, conn.name).label;
      lines.push(
        `- ${conn.name}${i === 0 ? ' (default)' : ''}: ${describe(conn.config)}; ${state}; default cwd ${cwd ?? "the executor user's home"}`,
      );
    });
    const s = this.options.sandbox;
    const unsandboxed = this.options.allowUnsandboxed
      ? 'allowed when the user agreed (started with --allow-unsandboxed)'
      : 'refused (started without --allow-unsandboxed)';
    lines.push(
      `Sandbox: ${s.policy === 'full-access' && s.network ? 'none (full-access, network on)' : sandboxLabel(s)}; unsandboxed runs: ${unsandboxed}.`,
    );
    const bg = [...this.background.values()];
    if (bg.length > 0) {
      lines.push('', 'Background processes:');
      for (const b of bg) lines.push(`- ${b.id}: \`${b.command}\` on ${b.conn.name}, ${stateOf(b)}`);
    }
    return { text: lines.join('\n') };
  }

  /** Kills every process started here (the agent went away) and waits, briefly, for the executors to confirm. */
  async close(): Promise<void> {
    this.closed = true;
    // A start the executor may already run, unanswered: its handle first (bounded), then it is stopped with the rest.
    await settlesWithin(Promise.allSettled([...this.starting]), CLOSE_WAIT_MS);
    this.stopsTaken = true;
    const kills = [...this.live].map((h) => h.terminate().catch(() => undefined));
    if (kills.length > 0) this.options.log(`stopping ${kills.length} process(es)`);
    await settlesWithin(Promise.all(kills), CLOSE_WAIT_MS);
  }

  private find(id: string): Background | ToolAnswer {
    const bg = this.background.get(id.trim());
    if (bg) return bg;
    const known = [...this.background.keys()];
    return error(
      `there is no background process "${id}"${known.length > 0 ? ` (there are: ${known.join(', ')})` : ''}: ids come from start_process of this MCP server; list_executors lists them`,
    );
  }

  private executor(name: string | undefined): ExecutorConnection | ToolAnswer {
    const all = this.options.executors;
    if (name === undefined || name.trim() === '') return all[0]!;
    const conn = all.find((c) => c.name === name.trim());
    return conn ?? error(`there is no executor "${name}": use one of ${all.map((c) => c.name).join(', ')} (list_executors describes them)`);
  }

  private async launch(p: CommandParams, pipeStdin: boolean): Promise<Launched | ToolAnswer> {
    if (this.closed) return error('the server is shutting down');
    if (p.command.trim() === '') return error('command is empty: give a shell command line, e.g. "ls -la"');
    const conn = this.executor(p.executor);
    if ('text' in conn) return conn;
    if (p.unsandboxed && !this.options.allowUnsandboxed) return error(`unsandboxed: true is refused: ${NOT_ALLOWED}`);
    let client;
    try {
      client = await conn.connect();
    } catch (e) {
      return error(`cannot reach the executor ${conn.name}: ${errorMessage(e)}`);
    }
    const workspace = conn.defaultCwd();
    const cwd = p.cwd ? posix.resolve(workspace, p.cwd) : workspace;
    const sandbox = p.unsandboxed ? undefined : sandboxRequest(this.options.sandbox, cwd, [workspace]);
    const label = sandbox ? sandboxLabel(this.options.sandbox) : 'none';
    let handle: ProcessHandle;
    const starting = client.startProcess({
      argv: [shellFor(client.environmentInfo?.shell.path), '-c', p.command],
      cwd,
      pipeStdin,
      ...(p.env && Object.keys(p.env).length > 0 ? { env: p.env, envPolicy: inheritAllEnv() } : {}),
      ...(sandbox ? { sandbox, ...withManagedNetwork(this.options.sandbox) } : {}),
    });
    this.starting.add(starting);
    const started = () => this.starting.delete(starting);
    starting.then(started, started);
    try {
      handle = await starting;
    } catch (e) {
      const unavailable = sandboxUnavailableReason(e);
      if (unavailable !== undefined)
        return error(
          `not run: the executor ${conn.name} cannot sandbox commands (${unavailable}); ${this.options.allowUnsandboxed ? RERUN : NOT_ALLOWED}`,
        );
      return error(`could not start the command on ${conn.name} in ${cwd}: ${errorMessage(e)}`);
    }
    this.live.add(handle);
    const forget = () => this.live.delete(handle);
    handle.completion.then(forget, forget);
    this.options.log(`${conn.name}: started ${handle.processId} (sandbox: ${label}): ${p.command}`);
    // Answered after closing took the processes to stop (past its wait): this one stops itself.
    if (this.stopsTaken) void handle.terminate().catch(() => undefined);
    return { conn, handle, command: p.command, cwd, sandboxed: sandbox !== undefined, label };
  }

  /** The denial words when the sandbox blocked the command, else undefined. */
  private denial(l: Launched, done: ProcessCompletion): string | undefined {
    if (!reportedDenial({ sandboxed: l.sandboxed, sandboxDenied: done.sandboxDenied })) return undefined;
    return denialText(l.command, done, l.label, this.options.allowUnsandboxed);
  }

  /** A background process's state and its new output (then read); a denial or a loss makes it a tool error. */
  private readAnswer(bg: Background, head?: string): ToolAnswer {
    const end = bg.end;
    const denial = end && !('lost' in end) ? this.denial(bg, end) : undefined;
    const lines = [...(denial ? [denial] : []), ...(head ? [head] : []), `State: ${stateOf(bg)}.`, outputBlock('New output', bg.unread)];
    bg.unread.take();
    return { text: lines.join('\n'), ...(denial || (end && 'lost' in end) ? { isError: true } : {}) };
  }

  /** Ended processes beyond KEEP_ENDED go, the longest ended first. */
  private trimEnded(): void {
    const ended = [...this.background.values()].filter((b) => b.end).sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    for (const b of ended.slice(KEEP_ENDED)) this.background.delete(b.id);
  }

  /** Resolves when the process ends, `waitFor` shows up in its output (unread already, or arriving), `waitMs` pass, or `signal` fires. */
  private waitFor(bg: Background, p: WaitParams, signal: AbortSignal | undefined): Promise<void> {
    const want = p.waitFor ? Buffer.from(p.waitFor) : undefined;
    if (bg.end || p.waitMs <= 0 || signal?.aborted || (want && bg.unread.text().includes(p.waitFor!))) return Promise.resolve();
    return new Promise<void>((resolve) => {
      // The last bytes before each chunk: a text split across two chunks is still found.
      let carry = Buffer.alloc(0);
      const done = () => {
        clearTimeout(timer);
        bg.watchers.delete(watch);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const watch = (chunk?: Buffer) => {
        if (chunk === undefined) return done();
        if (!want) return;
        const hay = Buffer.concat([carry, chunk]);
        if (hay.includes(want)) return done();
        carry = Buffer.from(hay.subarray(Math.max(0, hay.length - want.length + 1)));
      };
      const timer = setTimeout(done, p.waitMs);
      bg.watchers.add(watch);
      signal?.addEventListener('abort', done);
    });
  }
}

function error(text: string): ToolAnswer {
  return { text, isError: true };
}

/**
 * The shell a command line runs with: the executor user's login shell when it is a POSIX one
 * (commands are written for sh or bash), else /bin/sh.
 */
export function shellFor(loginShell: string | undefined): string {
  return loginShell && /(^|\/)(bash|zsh|sh|dash|ksh|ash)$/.test(loginShell) ? loginShell : '/bin/sh';
}

/** The denial as a model should read it: what was blocked, then whether to ask for a re-run outside the sandbox. */
export function denialText(
  command: string,
  done: Pick<ProcessCompletion, 'exitCode' | 'sandboxDeniedTarget'>,
  label: string,
  allowUnsandboxed: boolean,
): string {
  const what = done.sandboxDeniedTarget
    ? `the network allow-list has no ${done.sandboxDeniedTarget} (\`${command}\` ended with ${describeExitCode(done.exitCode)}; sandbox: ${label})`
    : `\`${command}\` ended with ${describeExitCode(done.exitCode)} because the sandbox (${label}) stopped something it tried`;
  return `blocked by the sandbox: ${what}; ${allowUnsandboxed ? RERUN : NOT_ALLOWED}.`;
}

function ranLine(l: Launched): string {
  return `Ran \`${l.command}\` on ${l.conn.name} in ${l.cwd} (sandbox: ${l.label}).`;
}

function stateOf(bg: Background): string {
  const end = bg.end;
  if (!end) return `running for ${formatDuration(Date.now() - bg.startedAt)} (sandbox: ${bg.label})`;
  if ('lost' in end) return `lost: ${end.lost}`;
  return `ended, ${describeExitCode(end.exitCode)}`;
}

/** `Output (N bytes, stdout and stderr as they came):` and the bounded text; `Output: none.` */
function outputBlock(label: 'Output' | 'New output', output: BoundedOutput): string {
  if (output.totalBytes === 0) return `${label}: none.`;
  return `${label} (stdout and stderr, ${output.totalBytes.toLocaleString('en-US')} bytes):\n${output.text()}`;
}

/** Why a command's result cannot be told: the connection failed for good, or output was lost. */
function lostText(command: string, e: unknown): string {
  if (isExecClientError(e) && e.kind === 'outputLost') return `\`${command}\`: ${e.message}`;
  // Dropped here on purpose (the bundled daemon died, or this server is closing): the words say what became of it.
  if (e instanceof DisconnectedError && e.reason === 'disposed') return `lost \`${command}\`: ${e.message}`;
  return `lost \`${command}\`: ${errorMessage(e)}; it may still be running on the executor until its session ends`;
}

function describe(c: ExecutorConfig): string {
  switch (c.kind) {
    case 'bundled':
      return 'this machine (the exec-bridge daemon)';
    case 'websocket':
      return `exec-server at ${redactUrl(c.url)}`;
    case 'ssh':
      return `ssh ${c.ssh}`;
    case 'stdio':
      return `stdio: ${c.command.join(' ')}`;
  }
}

/** Whether `p` settles within `ms` (its rejection is not passed on). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
