import type * as vscode from 'vscode';
import type { ExecutorConnection, RunRegistry } from '../core';
import type { DisposableStore } from '../util';
import type { ApprovalService } from './approvals';
import type { ExecutorManager } from './executorManager';

/**
 * What a feature (terminals, views, status bar, MCP) takes from the extension. The `Extension`
 * implements it; features import this interface, never the class, so `extension.ts` can import
 * the features without a cycle.
 */
export interface FeatureContext {
  readonly context: Pick<vscode.ExtensionContext, 'workspaceState' | 'secrets' | 'extension' | 'globalStorageUri'>;
  /** Lives as long as the extension. */
  readonly disposables: DisposableStore;
  /** The "Exec Bridge" log (never tokens). */
  readonly log: vscode.LogOutputChannel;
  readonly runs: RunRegistry;
  readonly executors: ExecutorManager;
  readonly approvals: ApprovalService;
  /** The executor named `name`, or the active one when `name` is undefined; throws for an unknown name. */
  connection(name: string | undefined): ExecutorConnection;
  useExecutor(name: string): Promise<void>;
  /**
   * Connects, or shows why not (with Connect / Show Log); resolves whether a connection is there.
   * `askHostKey`: an unknown SSH host key is asked about at once (its fingerprints), not offered as a button.
   */
  connectOrExplain(conn: ExecutorConnection, options?: { askHostKey?: boolean }): Promise<boolean>;
  /** Drops the connection and connects again; a failure is shown, not thrown. */
  reconnect(conn: ExecutorConnection): Promise<void>;
}
