import * as vscode from 'vscode';
import type { McpTreeModel, McpTreeNode } from '../mcp';

/** Thin provider: the tree model (src/mcp/treeModel.ts) decides everything, this maps it to TreeItems. */
export class McpTreeProvider implements vscode.TreeDataProvider<McpTreeNode> {
  private readonly changed = new vscode.EventEmitter<McpTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };
  private pending: ReturnType<typeof setTimeout> | undefined;
  private pendingNodes = new Map<string, McpTreeNode>();
  private pendingAll = false;
  /** Whether each node was last drawn without children. */
  private readonly shownCollapsible = new Map<string, boolean>();

  constructor(private readonly model: McpTreeModel) {
    this.subscription = model.onDidChange((node) => this.queue(node));
  }

  getChildren(node?: McpTreeNode): McpTreeNode[] {
    return this.model.getChildren(node);
  }

  getTreeItem(node: McpTreeNode): vscode.TreeItem {
    const v = this.model.getItem(node);
    this.shownCollapsible.set(node.id, v.collapsible === 'none');
    const collapsible =
      v.collapsible === 'none'
        ? vscode.TreeItemCollapsibleState.None
        : v.collapsible === 'expanded'
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(v.label, collapsible);
    item.id = node.id;
    if (v.description !== undefined) item.description = v.description;
    if (v.tooltip !== undefined) item.tooltip = new vscode.MarkdownString(v.tooltip);
    if (v.icon) item.iconPath = new vscode.ThemeIcon(v.icon, v.iconColor ? new vscode.ThemeColor(v.iconColor) : undefined);
    item.contextValue = v.contextValue;
    if (v.command) item.command = { ...v.command, arguments: [node] };
    return item;
  }

  dispose(): void {
    if (this.pending) clearTimeout(this.pending);
    this.subscription.dispose();
    this.changed.dispose();
  }

  /** Coalesces bursts (state + lists + meta for one start) into one refresh per node. */
  private queue(node: McpTreeNode | undefined): void {
    // A node that gains or loses children (a server stopping) is redrawn with the whole tree:
    // refreshed alone, VS Code can draw the next top-level server indented under it.
    const leaf = node ? this.shownCollapsible.get(node.id) : undefined;
    if (node && leaf !== undefined && leaf !== (this.model.getItem(node).collapsible === 'none')) this.pendingAll = true;
    else if (node) this.pendingNodes.set(node.id, node);
    else this.pendingAll = true;
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      const all = this.pendingAll;
      const nodes = [...this.pendingNodes.values()];
      this.pendingAll = false;
      this.pendingNodes.clear();
      if (all) this.changed.fire(undefined);
      else for (const n of nodes) this.changed.fire(n);
    }, 50);
  }
}
