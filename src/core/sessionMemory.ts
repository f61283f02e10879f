import { z } from 'zod';
import { systemClock, type Clock } from '../util';

/*
 * What a window remembers of its executor sessions, so that a window reload resumes them instead of
 * starting new ones (docs/architecture.md, "Window reload"). Kept per workspace (VS Code's
 * workspaceState): a window of another workspace has its own list and never adopts these.
 */

/** The workspaceState key. */
export const SESSION_MEMORY_KEY = 'execBridge.sessions';

const TerminalInfo = z.object({
  /** The terminal's title when the window went away. */
  title: z.string(),
  kind: z.enum(['command', 'shell']),
  commandLine: z.string(),
  cwd: z.string(),
  sandboxed: z.boolean(),
  sandboxLabel: z.string(),
  /** A task's label: it comes back as a terminal (VS Code's task system does not bring ours back). */
  task: z.string().optional(),
  /**
   * Started by a language model's tool. `backgroundId`: the id the model reads it by; `readSeq`: the
   * last output event the model has read (what a reopened terminal replays before it is new again).
   */
  agent: z.object({ backgroundId: z.string().optional(), readSeq: z.number().int().nonnegative().optional() }).optional(),
});
export type TerminalInfo = z.infer<typeof TerminalInfo>;

const RememberedProcess = z.object({
  processId: z.string(),
  tty: z.boolean(),
  stdinWritable: z.boolean(),
  /** Set for a process shown in one of our terminals; anything else (MCP servers, tasks) is ended on resume. */
  terminal: TerminalInfo.optional(),
});
export type RememberedProcess = z.infer<typeof RememberedProcess>;

const RememberedSession = z.object({
  /** The executor's settings when the session was made: another config is another executor. */
  configKey: z.string(),
  sessionId: z.string(),
  savedAt: z.number(),
  processes: z.array(RememberedProcess),
  /**
   * Since when the executor has been unreachable, while this window was recovering: a reload in
   * an outage goes on from the outage's start (what "offline since" says, and until when the
   * executor keeps the session), not from the reload.
   */
  offlineSince: z.number().optional(),
});
export type RememberedSession = z.infer<typeof RememberedSession>;

const Stored = z.record(z.string(), RememberedSession);

/** The part of a vscode.Memento this needs (tests use a Map). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

/**
 * The remembered sessions, by executor name. Every change is written through at once (in order), so
 * that whatever ends the window — reload, close, crash of the extension host — finds it stored.
 */
export class SessionMemory {
  private readonly sessions: Map<string, RememberedSession>;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly memento: MementoLike,
    private readonly clock: Clock = systemClock,
  ) {
    const parsed = Stored.safeParse(memento.get(SESSION_MEMORY_KEY) ?? {});
    // Something unreadable (an older layout) is dropped: nothing to resume, nothing breaks.
    this.sessions = new Map(parsed.success ? Object.entries(parsed.data) : []);
  }

  /** The session remembered for `executor`, if it was made with the same settings. */
  recall(executor: string, configKey: string): RememberedSession | undefined {
    const s = this.sessions.get(executor);
    return s && s.configKey === configKey ? s : undefined;
  }

  /** `executor` is now in `sessionId`: the same session keeps its processes, another one starts empty. */
  session(executor: string, configKey: string, sessionId: string): void {
    const old = this.sessions.get(executor);
    const keep = old && old.sessionId === sessionId && old.configKey === configKey ? old.processes : [];
    this.sessions.set(executor, { configKey, sessionId, savedAt: this.clock.now(), processes: keep });
    this.save();
  }

  /** `executor` is unreachable since `since` (its connection is recovering), or reachable again (undefined). */
  offline(executor: string, since: number | undefined): void {
    const s = this.sessions.get(executor);
    if (!s || s.offlineSince === since) return;
    if (since === undefined) delete s.offlineSince;
    else s.offlineSince = since;
    this.save();
  }

  /** A process of `executor`'s current session (started, or attached after a reload). */
  tracked(executor: string, p: Omit<RememberedProcess, 'terminal'>): void {
    const s = this.sessions.get(executor);
    if (!s || s.processes.some((x) => x.processId === p.processId)) return;
    s.processes.push({ processId: p.processId, tty: p.tty, stdinWritable: p.stdinWritable });
    this.save();
  }

  /** The process is shown in a terminal (what to reopen after a reload). */
  describe(executor: string, processId: string, terminal: TerminalInfo): void {
    const p = this.sessions.get(executor)?.processes.find((x) => x.processId === processId);
    if (!p) return;
    p.terminal = copyInfo(terminal);
    this.save();
  }

  /** A model read a background process's output up to event `seq` (a reload replays only what came after). */
  agentRead(executor: string, processId: string, seq: number): void {
    const agent = this.sessions.get(executor)?.processes.find((x) => x.processId === processId)?.terminal?.agent;
    if (!agent || (agent.readSeq ?? 0) >= seq) return;
    agent.readSeq = seq;
    this.save();
  }

  /** Which executor and process a model's background id stands for (after a reload, before it is reopened). */
  findAgentProcess(backgroundId: string): { executor: string; processId: string } | undefined {
    for (const [executor, s] of this.sessions)
      for (const p of s.processes) if (p.terminal?.agent?.backgroundId === backgroundId) return { executor, processId: p.processId };
    return undefined;
  }

  /** The process is over for good (closed, or unknown to the executor). */
  untracked(executor: string, processId: string): void {
    const s = this.sessions.get(executor);
    if (!s) return;
    const before = s.processes.length;
    s.processes = s.processes.filter((x) => x.processId !== processId);
    if (s.processes.length !== before) this.save();
  }

  /** Nothing to resume for `executor` (its session is gone, or it was removed). */
  forget(executor: string): void {
    if (this.sessions.delete(executor)) this.save();
  }

  /** Resolves when every change so far is stored. */
  flush(): Promise<void> {
    return this.writing;
  }

  private save(): void {
    const snapshot = Object.fromEntries(
      [...this.sessions].map(([k, v]) => [
        k,
        { ...v, processes: v.processes.map((p) => ({ ...p, ...(p.terminal ? { terminal: copyInfo(p.terminal) } : {}) })) },
      ]),
    );
    this.writing = this.writing.then(
      () => this.memento.update(SESSION_MEMORY_KEY, snapshot),
      () => this.memento.update(SESSION_MEMORY_KEY, snapshot),
    ) as Promise<void>;
    this.writing.catch(() => undefined);
  }
}

function copyInfo(t: TerminalInfo): TerminalInfo {
  return { ...t, ...(t.agent ? { agent: { ...t.agent } } : {}) };
}
