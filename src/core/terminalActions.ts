import type { ProcessHandle } from '../client';
import { errorMessage } from '../util';
import type { TerminalAction } from './terminalStreamModel';

/**
 * What a terminal asks of the process behind it (typing, Ctrl+C, close, flow control, a new size),
 * done on its handle. A failure is logged, never thrown: the terminal goes on.
 */
export class TerminalActions {
  private resizeWarned = false;

  constructor(private readonly executor: { canResize(): boolean; log?(line: string): void }) {}

  apply(handle: ProcessHandle, action: TerminalAction): void {
    const warn = (what: string) => (e: unknown) => this.executor.log?.(`${what} failed for ${handle.processId}: ${errorMessage(e)}`);
    switch (action.kind) {
      case 'write':
        handle.write(action.data).catch(warn('write'));
        break;
      case 'interrupt':
        handle.interrupt().catch(warn('interrupt'));
        break;
      case 'terminate':
        handle.terminate().catch(warn('terminate'));
        break;
      case 'pause':
        handle.pauseOutput();
        break;
      case 'resume':
        handle.resumeOutput();
        break;
      case 'consumed':
        handle.outputConsumed(action.bytes);
        break;
      case 'resize':
        if (this.executor.canResize()) handle.resize(action.cols, action.rows).catch(warn('resize'));
        else if (!this.resizeWarned) {
          this.resizeWarned = true;
          this.executor.log?.('this executor cannot resize a PTY (no processResize capability); the shell keeps its size');
        }
        break;
    }
  }
}
