import * as vscode from 'vscode';
import { describeExecutor, executorVersionLabel, stateText, isActive, type RunRecord, type RunRegistry } from '../core';
import { formatDuration, describeExitCode } from '../util';
import { commandId } from './commandIds';
import type { FeatureContext } from './context';

type Node = { kind: 'executor'; name: string } | { kind: 'state'; executor: string } | { kind: 'run'; executor: string; runId: string };

function runDescription(run: RunRecord): string {
  const sandbox = run.sandboxed ? '' : ' · unsandboxed';
  switch (run.status) {
    case 'starting':
      return 'starting…';
    case 'running':
      return `running${sandbox}`;
    case 'awaitingApproval':
      return 'blocked by the sandbox — awaiting approval';
    case 'exited':
      return `${describeExitCode(run.exitCode ?? -1)}${run.sandboxDenied ? ' · sandbox denied' : ''}${sandbox}`;
    case 'failed':
      // The first clause; the whole text (what to do) is in the tooltip.
      return `failed${run.error ? `: ${run.error.split(/[,;.] /)[0]}` : ''}`;
  }
}

/**
 * The Executors view: executors → their state → running and recent runs. The model is the
 * ExecutorManager + RunRegistry (no vscode in them); this provider only maps nodes to TreeItems.
 * `contextValue` lists capabilities (`run;running;canStop;`) and package.json menus match them.
 */
class ExecutorsTreeProvider implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly ext: FeatureContext) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  dispose(): void {
    this.changed.dispose();
  }

  getChildren(node?: Node): Node[] {
    if (!node) return this.ext.executors.all().map((c) => ({ kind: 'executor', name: c.name }));
    if (node.kind !== 'executor') return [];
    return [
      { kind: 'state', executor: node.name },
      ...this.ext.runs.forExecutor(node.name).map((r): Node => ({ kind: 'run', executor: node.name, runId: r.id })),
    ];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'executor': {
        const conn = this.ext.executors.get(node.name);
        const active = this.ext.executors.active.name === node.name;
        const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `executor:${node.name}`;
        // The state is said once, by the row below.
        item.description = active ? 'active' : undefined;
        item.tooltip = conn ? describeExecutor(conn.config) : undefined;
        item.iconPath = new vscode.ThemeIcon(active ? 'vm-running' : 'vm');
        item.contextValue = `executor;${active ? 'active;' : 'canUse;'}canReconnect;${conn?.config.kind === 'websocket' ? 'canSetToken;' : ''}`;
        return item;
      }
      case 'state': {
        const conn = this.ext.executors.get(node.executor);
        const state = conn?.state ?? { kind: 'idle' as const };
        const { icon, label, detail } = stateText(state, node.executor);
        const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
        item.id = `state:${node.executor}`;
        const ttl = conn?.sessionTtlMs;
        // How long this window's work survives a lost connection on that executor.
        const kept =
          ttl !== undefined
            ? `If the connection drops, ${node.executor} keeps this window's commands, shells and MCP servers for ${formatDuration(ttl)}.`
            : `${node.executor} does not say how long it keeps a detached session (codex keeps one about a minute).`;
        if (detail) item.tooltip = detail;
        if (state.kind === 'connected') {
          item.tooltip = kept;
          const version = executorVersionLabel(conn?.client?.environmentInfo?.executorVersion);
          item.description = `session ${state.sessionId.slice(0, 8)}${version ? ` · ${version}` : ''}${ttl !== undefined ? ` · kept ${formatDuration(ttl)}` : ''}`;
          const remote = conn?.config.kind === 'ssh' ? conn.remote : undefined;
          if (remote && conn?.config.kind === 'ssh')
            item.description = `${conn.config.ssh} · ${remote.platform} · node ${remote.nodeVersion} · ${remote.version}`;
        }
        item.iconPath = new vscode.ThemeIcon(
          icon,
          state.kind === 'recovering' ? new vscode.ThemeColor('problemsWarningIcon.foreground') : undefined,
        );
        item.contextValue = `state;${state.kind};`;
        if (state.kind === 'idle' || state.kind === 'failed') {
          item.command = {
            command: commandId('executor.connect'),
            title: 'Connect',
            arguments: [{ kind: 'executor', name: node.executor }],
          };
          item.tooltip = 'Click to connect';
        }
        return item;
      }
      case 'run': {
        const run = this.ext.runs.get(node.runId);
        const item = new vscode.TreeItem(run?.commandLine ?? '(gone)', vscode.TreeItemCollapsibleState.None);
        item.id = `run:${node.runId}`;
        if (!run) return item;
        const active = isActive(run);
        item.description = runDescription(run);
        item.tooltip = `${run.kind === 'shell' ? 'Shell' : 'Command'} on ${run.executor}${run.processId ? ` (process ${run.processId})` : ''}${run.status === 'failed' && run.error ? `\n${run.error}` : ''}`;
        item.iconPath = new vscode.ThemeIcon(
          run.status === 'awaitingApproval'
            ? 'shield'
            : active
              ? 'loading~spin'
              : run.status === 'exited' && run.exitCode === 0
                ? 'pass'
                : 'error',
        );
        item.contextValue = `run;${active ? 'running;canStop;' : ''}canShowTerminal;canCopy;`;
        item.command = { command: commandId('run.showTerminal'), title: 'Show Terminal', arguments: [node] };
        return item;
      }
    }
  }
}

/** A row of the view as plain data (`execBridge.executors.snapshot`). */
export interface ExecutorsViewRow {
  /** The item's id: `executor:NAME`, `state:NAME`, `run:RUN-ID` (a run's node for `execBridge.run.*` is `{ kind: 'run', executor, runId }`). */
  id?: string;
  label: string;
  description?: string;
  tooltip?: string;
  contextValue: string;
  children: ExecutorsViewRow[];
}

/** The view's rows, read through its data provider (the same items the view shows): for tests and bug reports. */
export function executorsViewSnapshot(ext: FeatureContext): ExecutorsViewRow[] {
  const provider = new ExecutorsTreeProvider(ext);
  const rows = (node?: Node): ExecutorsViewRow[] =>
    provider.getChildren(node).map((child) => {
      const item = provider.getTreeItem(child);
      const tooltip = typeof item.tooltip === 'string' ? item.tooltip : item.tooltip?.value;
      return {
        ...(item.id !== undefined ? { id: item.id } : {}),
        label: typeof item.label === 'string' ? item.label : (item.label?.label ?? ''),
        ...(typeof item.description === 'string' ? { description: item.description } : {}),
        ...(tooltip !== undefined ? { tooltip } : {}),
        contextValue: item.contextValue ?? '',
        children: child.kind === 'executor' ? rows(child) : [],
      };
    });
  try {
    return rows();
  } finally {
    provider.dispose();
  }
}

/** The executor a node of this view (an argument of `execBridge.executor.*`) stands for. */
export function executorOfNode(node: unknown): string | undefined {
  const n = node as Partial<Extract<Node, { kind: 'executor' }>> | undefined;
  return n?.kind === 'executor' && typeof n.name === 'string' ? n.name : undefined;
}

/** The run a node of this view (an argument of `execBridge.run.*`) stands for, while the registry has it. */
export function runOfNode(runs: RunRegistry, node: unknown): RunRecord | undefined {
  return node && typeof node === 'object' && 'runId' in node ? runs.get((node as { runId: string }).runId) : undefined;
}

/** The Executors view; its item commands (`execBridge.executor.*`, `execBridge.run.*`) are in the table, commands.ts. */
export function registerExecutorsView(ext: FeatureContext): void {
  const provider = new ExecutorsTreeProvider(ext);
  const view = ext.disposables.add(
    vscode.window.createTreeView('execBridge.executors', { treeDataProvider: provider, showCollapseAll: false }),
  );
  // Many output-free state changes come in bursts (reconnect attempts): coalesce refreshes.
  let pending: ReturnType<typeof setTimeout> | undefined;
  const refresh = () => {
    pending ??= setTimeout(() => {
      pending = undefined;
      provider.refresh();
    }, 50);
  };
  ext.disposables.add({ dispose: () => pending && clearTimeout(pending) });
  ext.disposables.add(ext.executors.onDidChange(refresh));
  ext.disposables.add(ext.executors.onDidChangeState(refresh));
  ext.disposables.add(ext.runs.onDidChange(refresh));
  view.description = undefined;
}
