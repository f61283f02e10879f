import type { ProcessHandle } from '../client';
import { BoundedOutput, FULL_OUTPUT_IN_TERMINAL, type OutputBound } from './agentOutput';
import type { TerminalRun } from './terminalRun';

/** The output of each process of a run (an approved retry is a second one), as the terminal got it. */
export class RunCapture {
  readonly attempts: { sandboxed: boolean; output: BoundedOutput; exitCode?: number; lastSeq: number; processId?: string }[] = [];
  private readonly subs: { dispose(): void }[];

  constructor(
    readonly run: TerminalRun,
    private readonly bound: OutputBound,
    /** Events of the first process up to this seq were read before (a reopened terminal replays them). */
    private readonly skipThrough = 0,
    private readonly onProcess?: (handle: ProcessHandle) => void,
  ) {
    this.subs = [
      run.onDidStart((handle) => this.onProcess?.(handle)),
      run.onProcessEvent(({ attempt, sandboxed, event }) => {
        const a = (this.attempts[attempt - 1] ??= {
          sandboxed,
          output: new BoundedOutput(this.bound, FULL_OUTPUT_IN_TERMINAL),
          lastSeq: 0,
        });
        a.processId ??= run.process?.processId;
        if (event.type === 'failed') return;
        if (attempt === 1 && event.seq <= this.skipThrough) return;
        a.lastSeq = Math.max(a.lastSeq, event.seq);
        if (event.type === 'output') a.output.push(event.data);
        else if (event.type === 'exited') a.exitCode = event.exitCode;
      }),
    ];
  }

  get last() {
    return this.attempts.at(-1);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
  }
}
