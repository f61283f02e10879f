/*
 * The language-model tools' logic (issue 22), without `vscode`: run a command on an executor and
 * give the model its exit code and bounded output; run one in the background, read what it wrote
 * since the last read, write to its stdin, stop it; say what happened with the sandbox and the
 * approvals in words a model acts on. Every run is a TerminalRun shown in a terminal (the vscode
 * layer opens it through core/executorRun.ts, so the approval rules are a person's). The texts are
 * shared with `exec-bridge mcp`.
 */
import { randomBytes } from 'node:crypto';
import { systemClock, describeExitCode, type Clock } from '../util';
import { forModel, outputBound, type OutputBound } from './agentOutput';
import { decisionText } from './decisionText';
import { RunCapture } from './runCapture';
import type { RunRegistry } from './runRegistry';
import type { TerminalRun } from './terminalRun';

// Moved to decisionText.ts; importers of this file keep the name.
export { decisionText } from './decisionText';

/** The tools' names (package.json `contributes.languageModelTools` declares each with its schema). */
export const AGENT_TOOL_NAMES = {
  run: 'execBridge_runCommand',
  startBackground: 'execBridge_startBackground',
  readBackground: 'execBridge_readBackground',
  writeBackground: 'execBridge_writeBackground',
  stopBackground: 'execBridge_stopBackground',
  listExecutors: 'execBridge_listExecutors',
} as const;

export const DEFAULT_TIMEOUT_S = 120;
export const MAX_TIMEOUT_S = 3600;
/** How long a background start waits for first output by default, and a read at most. */
export const DEFAULT_START_WAIT_S = 3;
export const MAX_WAIT_S = 60;
/** Ended background processes kept for a last read. */
const KEEP_ENDED = 20;
/** How long a stop waits for the process's end before it answers anyway. */
const STOP_WAIT_MS = 5_000;

export interface RunInput {
  command: string;
  executor?: string;
  cwd?: string;
  timeoutSeconds?: number;
}
export interface BackgroundInput {
  command: string;
  executor?: string;
  cwd?: string;
  waitSeconds?: number;
}
export interface ReadInput {
  id: string;
  waitSeconds?: number;
}
export interface WriteInput {
  id: string;
  text: string;
  /** Default true: a newline is sent after `text` (a line for a prompt or a REPL). */
  newline?: boolean;
}

/** A run the vscode layer opened for a tool: already in its terminal, started (or about to ask first). */
export interface OpenedRun {
  run: TerminalRun;
  executor: string;
  cwd: string;
  /** The terminal's name, for the model to point the user to. */
  terminalName: string;
}

export interface OpenRequest {
  commandLine: string;
  executor?: string;
  cwd?: string;
  /** Set for a background run: the id the model uses (remembered for a window reload). */
  backgroundId?: string;
}

export interface ExecutorSummary {
  name: string;
  active: boolean;
  /** `connected`, `offline since 10:42, retrying`, … */
  state: string;
  /** `bundled (this machine)`, `ssh devbox`, … */
  description: string;
  /** The default working directory, when connected. */
  cwd?: string;
}

export interface AgentToolsDeps {
  /** Resolves the executor (connects it), builds the run with the workspace's sandbox, opens its terminal. Throws a sentence. */
  open(request: OpenRequest): Promise<OpenedRun>;
  executors(): ExecutorSummary[];
  /** The Executors view's records (status, error) of runs. */
  registry: RunRegistry;
  /** A background process's output was read up to event `seq` of process `processId` (kept across a window reload). */
  rememberRead?(executor: string, processId: string, seq: number): void;
  /** An id not known in this window: a process from before a reload that is still being reopened. Resolves when that is settled. */
  restore?(id: string): Promise<void>;
  clock?: Clock;
  newId?(): string;
  bound?: OutputBound;
}

interface BackgroundEntry {
  id: string;
  opened: OpenedRun;
  capture: RunCapture;
  /** Decisions already told to the model. */
  toldDecisions: number;
  /** The unread output of earlier processes (a denied attempt's) was told. */
  toldAttempts: number;
  ended: boolean;
  endedAt?: number;
}

export class AgentTools {
  private readonly background = new Map<string, BackgroundEntry>();
  private readonly clock: Clock;
  private readonly bound: OutputBound;

  constructor(private readonly deps: AgentToolsDeps) {
    this.clock = deps.clock ?? systemClock;
    this.bound = deps.bound ?? outputBound();
  }

  /** Runs a command to its end (or timeout, or cancel) and tells the model what happened. */
  async runCommand(input: RunInput, signal: AbortSignal): Promise<string> {
    const command = required(input.command, 'command');
    const timeoutS = clamp(input.timeoutSeconds ?? DEFAULT_TIMEOUT_S, 1, MAX_TIMEOUT_S);
    const opened = await this.deps.open({ commandLine: command, ...pick(input) });
    const capture = new RunCapture(opened.run, this.bound);
    try {
      const how = await this.waitForEnd(opened.run, timeoutS * 1000, signal);
      if (how === 'timeout') opened.run.stop(`the tool's timeout (${timeoutS} s) passed`);
      if (how === 'cancelled') opened.run.stop('the chat request was cancelled');
      if (how !== 'done') await this.waitForEnd(opened.run, STOP_WAIT_MS, undefined);
      return this.runText(opened, capture, how, timeoutS);
    } finally {
      capture.dispose();
    }
  }

  /** Starts a command in the background; answers with its id and what it wrote in the first seconds. */
  async startBackground(input: BackgroundInput, signal: AbortSignal): Promise<string> {
    const command = required(input.command, 'command');
    const id = this.deps.newId?.() ?? `bg-${randomBytes(4).toString('hex')}`;
    const opened = await this.deps.open({ commandLine: command, ...pick(input), backgroundId: id });
    const entry = this.track(id, opened, 0);
    // Until a process runs (the askBeforeRun question may come first), or the run ended.
    const started = await this.until(opened.run, () => opened.run.process !== undefined, signal);
    if (started === 'cancelled' && opened.run.process === undefined) {
      opened.run.stop('the chat request was cancelled');
      await this.waitForEnd(opened.run, STOP_WAIT_MS, undefined);
    } else {
      await this.waitForEnd(opened.run, clamp(input.waitSeconds ?? DEFAULT_START_WAIT_S, 0, MAX_WAIT_S) * 1000, signal);
    }
    const head = entry.ended
      ? `Started \`${command}\` in the background as "${id}" on ${opened.executor} (in ${opened.cwd}), and it already ended.`
      : `Started \`${command}\` in the background as "${id}" on ${opened.executor} (in ${opened.cwd}). It keeps running (also through a window reload) until it ends or you stop it with ${AGENT_TOOL_NAMES.stopBackground}; read its new output with ${AGENT_TOOL_NAMES.readBackground}.`;
    return [head, ...this.readText(entry)].join('\n');
  }

  /** What a background process wrote since the last read (waiting up to `waitSeconds` first, less if it ends). */
  async readBackground(input: ReadInput, signal: AbortSignal): Promise<string> {
    const entry = await this.entry(input.id);
    await this.waitForEnd(entry.opened.run, clamp(input.waitSeconds ?? 0, 0, MAX_WAIT_S) * 1000, signal);
    return this.readText(entry).join('\n');
  }

  async writeBackground(input: WriteInput): Promise<string> {
    const entry = await this.entry(input.id);
    const data = `${input.text ?? ''}${input.newline === false ? '' : '\n'}`;
    if (entry.ended) return [`"${entry.id}" has ended; nothing was written.`, ...this.readText(entry)].join('\n');
    try {
      await entry.opened.run.sendInput(data);
    } catch (e) {
      return `Could not write to "${entry.id}": ${e instanceof Error ? e.message : String(e)}.`;
    }
    return `Wrote ${Buffer.byteLength(data)} bytes to the stdin of "${entry.id}". Read its answer with ${AGENT_TOOL_NAMES.readBackground}.`;
  }

  async stopBackground(input: { id: string }): Promise<string> {
    const entry = await this.entry(input.id);
    const wasRunning = !entry.ended;
    entry.opened.run.stop('stopped by the agent');
    await this.waitForEnd(entry.opened.run, STOP_WAIT_MS, undefined);
    return [wasRunning ? `Stopped "${entry.id}".` : `"${entry.id}" had already ended.`, ...this.readText(entry)].join('\n');
  }

  listExecutors(): string {
    const executors = this.deps.executors();
    const lines = ['Executors (where commands run; the active one is used when no executor is named):'];
    for (const e of executors)
      lines.push(`- ${e.name}${e.active ? ' (active)' : ''}: ${e.description}; ${e.state}${e.cwd ? `; default cwd ${e.cwd}` : ''}`);
    const bg = [...this.background.values()];
    if (bg.length > 0) {
      lines.push('', 'Background processes:');
      for (const b of bg) lines.push(`- ${b.id}: \`${b.opened.run.spec.commandLine}\` on ${b.opened.executor}, ${this.stateText(b)}`);
    }
    return lines.join('\n');
  }

  /**
   * A terminal reopened after a window reload runs a background process of this window's models:
   * known again by the same id, its reads go on after event `readSeq`.
   */
  adopt(id: string, opened: OpenedRun, readSeq: number): void {
    const old = this.background.get(id);
    if (old && !old.ended) return;
    this.track(id, opened, readSeq);
  }

  /** The ids of background processes still running. */
  running(): string[] {
    return [...this.background.values()].filter((b) => !b.ended).map((b) => b.id);
  }

  dispose(): void {
    for (const b of this.background.values()) b.capture.dispose();
    this.background.clear();
  }

  private track(id: string, opened: OpenedRun, readSeq: number): BackgroundEntry {
    const capture = new RunCapture(opened.run, this.bound, readSeq);
    const entry: BackgroundEntry = { id, opened, capture, toldDecisions: 0, toldAttempts: 0, ended: false };
    this.background.set(id, entry);
    void opened.run.done.then(() => {
      entry.ended = true;
      entry.endedAt = this.clock.now();
      this.trim();
    });
    return entry;
  }

  private trim(): void {
    const ended = [...this.background.values()].filter((b) => b.ended).sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    for (const b of ended.slice(KEEP_ENDED)) {
      b.capture.dispose();
      this.background.delete(b.id);
    }
  }

  private async entry(id: unknown): Promise<BackgroundEntry> {
    const key = required(id, 'id');
    if (!this.background.has(key)) await this.deps.restore?.(key);
    const entry = this.background.get(key);
    if (!entry) {
      const known = [...this.background.keys()];
      throw new Error(
        `There is no background process "${key}" in this window${known.length > 0 ? ` (there are: ${known.join(', ')})` : ''}. ${AGENT_TOOL_NAMES.listExecutors} lists them.`,
      );
    }
    return entry;
  }

  /** The state line, what the approvals did since the last read, and the new output (then marked read). */
  private readText(entry: BackgroundEntry): string[] {
    const { run } = entry.opened;
    const lines: string[] = [];
    const decisions = run.decisions.slice(entry.toldDecisions);
    entry.toldDecisions = run.decisions.length;
    lines.push(...decisions.map((d) => decisionText(d, run.spec.sandboxLabel)));
    lines.push(`State: ${this.stateText(entry)}.`);
    const attempts = entry.capture.attempts;
    // Earlier processes (a blocked attempt) are over: what they wrote is told once, then the current one's.
    for (let i = entry.toldAttempts; i < attempts.length; i++) {
      const a = attempts[i]!;
      const current = i === attempts.length - 1;
      const { text, bytes } = a.output.take();
      const label = current ? 'New output' : 'Output of the blocked attempt in the sandbox';
      lines.push(
        bytes === 0 ? (current ? 'No new output.' : `${label}: none.`) : `${label} (${bytes.toLocaleString('en-US')} bytes):\n${text}`,
      );
      if (a.processId && a.lastSeq > 0) this.deps.rememberRead?.(entry.opened.executor, a.processId, a.lastSeq);
      if (!current) entry.toldAttempts = i + 1;
    }
    if (attempts.length === 0) lines.push('No output yet.');
    return lines;
  }

  private stateText(entry: BackgroundEntry): string {
    const { run } = entry.opened;
    const record = run.runId ? this.deps.registry.get(run.runId) : undefined;
    if (!entry.ended) {
      if (record?.status === 'awaitingApproval') return 'waiting for the user to answer the approval notification';
      if (!run.process) return 'not started yet';
      return `running${run.sandboxed ? ` in the sandbox (${run.spec.sandboxLabel})` : ' without the sandbox'}`;
    }
    const exit = entry.capture.last?.exitCode ?? run.model.exitCode;
    const stopped = run.stoppedBecause ? ` (${run.stoppedBecause})` : '';
    if (exit !== undefined) return `ended, ${describeExitCode(exit)}${stopped}`;
    return `ended without an exit code${stopped}${record?.error ? `: ${record.error}` : ''}`;
  }

  /** The foreground run's answer. */
  private runText(opened: OpenedRun, capture: RunCapture, how: 'done' | 'timeout' | 'cancelled', timeoutS: number): string {
    const { run } = opened;
    const lines = [`Ran \`${run.spec.commandLine}\` on ${opened.executor} in ${opened.cwd}.`];
    lines.push(...run.decisions.map((d) => decisionText(d, run.spec.sandboxLabel)));
    const record = run.runId ? this.deps.registry.get(run.runId) : undefined;
    const last = capture.last;
    const exit = last?.exitCode ?? run.model.exitCode;
    if (how === 'timeout')
      lines.push(
        `It did not finish within ${timeoutS} s and was stopped${exit !== undefined ? ` (${describeExitCode(exit)})` : ''}. For a server or a watcher use ${AGENT_TOOL_NAMES.startBackground}; for a long build give a larger timeoutSeconds.`,
      );
    else if (how === 'cancelled')
      lines.push(`The chat request was cancelled, so it was stopped${exit !== undefined ? ` (${describeExitCode(exit)})` : ''}.`);
    else if (last === undefined && exit === undefined) {
      const refused = run.decisions.some((d) => d.kind === 'beforeRun' && d.outcome.decision === 'cancel');
      if (!refused) lines.push(`It did not run: ${record?.error ?? 'it could not be started'}.`);
    } else
      lines.push(
        `Exit: ${describeExitCode(exit)}${last && !last.sandboxed && run.spec.sandbox !== undefined ? ' (run without the sandbox)' : ''}.`,
      );
    // A blocked attempt's own words (its tail) tell the model what the sandbox stopped.
    for (const a of capture.attempts.slice(0, -1)) {
      const { text, bytes } = a.output.take();
      if (bytes > 0) lines.push(`Output of the blocked attempt in the sandbox (${bytes.toLocaleString('en-US')} bytes):\n${text}`);
    }
    if (last) {
      const { text, bytes } = last.output.take();
      lines.push(bytes === 0 ? 'Output: none.' : `Output (stdout and stderr, ${bytes.toLocaleString('en-US')} bytes):\n${text}`);
    }
    lines.push(`The user sees this run in the terminal "${opened.terminalName}".`);
    return lines.join('\n');
  }

  /** The run's end, the timeout, or the signal, whichever comes first. */
  private waitForEnd(run: TerminalRun, ms: number, signal: AbortSignal | undefined): Promise<'done' | 'timeout' | 'cancelled'> {
    return this.until(run, () => false, signal, ms);
  }

  /** Resolves `done` when the run ends or `ready()` (checked on its events) holds; `timeout` after `ms`; `cancelled` on the signal. */
  private until(
    run: TerminalRun,
    ready: () => boolean,
    signal: AbortSignal | undefined,
    ms?: number,
  ): Promise<'done' | 'timeout' | 'cancelled'> {
    if (ready()) return Promise.resolve('done');
    if (signal?.aborted) return Promise.resolve('cancelled');
    return new Promise((resolve) => {
      let settled = false;
      const subs: { dispose(): void }[] = [];
      const finish = (how: 'done' | 'timeout' | 'cancelled') => {
        if (settled) return;
        settled = true;
        if (timer) this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        for (const s of subs) s.dispose();
        resolve(how);
      };
      const onAbort = () => finish('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = ms !== undefined ? this.clock.setTimeout(() => finish('timeout'), ms) : undefined;
      void run.done.then(() => finish('done'));
      subs.push(run.onDidStart(() => ready() && finish('done')));
    });
  }
}

function required(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new Error(`"${name}" is required (a non-empty string)`);
  return v;
}

function clamp(v: number, min: number, max: number): number {
  return Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : min;
}

function pick(input: { executor?: string | undefined; cwd?: string | undefined }): Pick<OpenRequest, 'executor' | 'cwd'> {
  return {
    ...(typeof input.executor === 'string' && input.executor.trim() !== '' ? { executor: input.executor.trim() } : {}),
    ...(typeof input.cwd === 'string' && input.cwd.trim() !== '' ? { cwd: input.cwd.trim() } : {}),
  };
}

/** A one-line sketch of a command for confirmations and progress (`npm test` on devbox). */
export function commandSketch(command: string, max = 200): string {
  const flat = forModel(command).replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
