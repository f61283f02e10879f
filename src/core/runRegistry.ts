import { systemClock, Emitter, type Clock, type Event } from '../util';

export type RunKind = 'command' | 'shell';

export type RunStatus =
  | 'starting'
  | 'running'
  /** Denied by the sandbox; the user has not answered yet. */
  | 'awaitingApproval'
  | 'exited'
  /** Never started, or its end is unknown (connection failed, output lost). */
  | 'failed';

export interface RunRecord {
  /** Ours, unique in this window (not the executor's processId, which changes on a retry). */
  readonly id: string;
  readonly executor: string;
  readonly kind: RunKind;
  /** What the user typed (commands) or the shell path (shells); shown and copied, never a token. */
  readonly commandLine: string;
  status: RunStatus;
  /** The current process on the executor. */
  processId?: string;
  /** Whether the current process runs inside the executor's sandbox. */
  sandboxed: boolean;
  exitCode?: number;
  sandboxDenied?: boolean;
  error?: string;
  readonly startedAt: number;
  endedAt?: number;
}

export function isActive(run: RunRecord): boolean {
  return run.status === 'starting' || run.status === 'running' || run.status === 'awaitingApproval';
}

/**
 * Running and recent runs per executor, for the Executors view (no `vscode`). Finished runs are
 * kept up to `recentLimit` per executor, newest first.
 */
export class RunRegistry {
  private readonly runs = new Map<string, RunRecord>();
  private readonly changed = new Emitter<RunRecord>();
  private nextId = 1;
  /** Fires with the run that was added or changed. */
  readonly onDidChange: Event<RunRecord> = this.changed.event;

  constructor(
    private readonly recentLimit = 20,
    private readonly clock: Clock = systemClock,
  ) {}

  add(init: { executor: string; kind: RunKind; commandLine: string; sandboxed: boolean }): RunRecord {
    const run: RunRecord = { id: `run-${this.nextId++}`, status: 'starting', startedAt: this.clock.now(), ...init };
    this.runs.set(run.id, run);
    this.changed.fire(run);
    return run;
  }

  get(id: string): RunRecord | undefined {
    return this.runs.get(id);
  }

  update(id: string, patch: Partial<Omit<RunRecord, 'id' | 'executor' | 'kind' | 'commandLine' | 'startedAt'>>): void {
    const run = this.runs.get(id);
    if (!run) return;
    const wasActive = isActive(run);
    Object.assign(run, patch);
    if (wasActive && !isActive(run)) {
      run.endedAt ??= this.clock.now();
      this.trim(run.executor);
    }
    this.changed.fire(run);
  }

  /** Active runs first (oldest first), then finished ones (newest first). */
  forExecutor(executor: string): RunRecord[] {
    const all = [...this.runs.values()].filter((r) => r.executor === executor);
    const active = all.filter(isActive).sort((a, b) => a.startedAt - b.startedAt);
    const done = all.filter((r) => !isActive(r)).sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    return [...active, ...done];
  }

  active(): RunRecord[] {
    return [...this.runs.values()].filter(isActive);
  }

  private trim(executor: string): void {
    const done = this.forExecutor(executor).filter((r) => !isActive(r));
    for (const r of done.slice(this.recentLimit)) this.runs.delete(r.id);
  }

  dispose(): void {
    this.changed.dispose();
    this.runs.clear();
  }
}
