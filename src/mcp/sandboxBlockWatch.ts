import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sandboxSummary, type McpSandboxSettings, type McpServerDefinition } from './config';
import type { ServerLog } from './serverLog';
import type { Run } from './serverRun';
import { blockedPathIn, hostOfTarget, type SandboxBlock } from './serverSandbox';

/**
 * Notices what the executor's sandbox blocked while a server runs in it: hosts the managed network
 * refused, and writes refused outside where the run may write, named in the server's stderr or its
 * tool results (inside those folders a permission error is the server's own, not the sandbox's).
 * What it notices goes to `onBlock`, which keeps each block once.
 */
export class SandboxBlockWatch {
  /** Where the current sandboxed run may write. */
  private writable: string[] = [];

  constructor(
    private readonly log: ServerLog,
    private readonly onBlock: (b: SandboxBlock) => void,
  ) {}

  /** A run starts in `sandbox` (in `cwd`): said in the log; its stderr is read while `isCurrent()`, until the run ends. */
  watchRun(run: Run, def: McpServerDefinition, sandbox: McpSandboxSettings, cwd: string | undefined, isCurrent: () => boolean): void {
    this.log.lifecycle(
      `sandbox: ${sandboxSummary(sandbox)} (executorSandbox${def.sandbox?.from === 'default' ? ', the workspace default' : ''})`,
    );
    const root = def.source.workspaceFolder ?? cwd;
    this.writable = sandbox.policy === 'workspace-write' ? [...(root ? [root] : []), ...sandbox.writable, '/tmp'] : [];
    run.subscriptions.add(
      this.log.onDidAppend((e) => {
        if (e.kind !== 'stderr' || !isCurrent()) return;
        const b = blockedPathIn(e.text, this.writable);
        if (b) this.onBlock(b);
      }),
    );
  }

  /** A sandboxed server's tool result (an error text, say) naming a write the sandbox refused. */
  scanToolResult(result: CallToolResult): void {
    for (const c of result.content ?? []) {
      if (c.type !== 'text') continue;
      for (const line of c.text.split('\n').slice(0, 200)) {
        const b = blockedPathIn(line, this.writable);
        if (b) this.onBlock(b);
      }
    }
  }

  /** The managed network refused `target` (`host:port`). */
  hostRefused(target: string, reason: string): void {
    this.onBlock({ kind: 'host', target, host: hostOfTarget(target), reason });
  }
}
