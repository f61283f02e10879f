import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { DisposableStore, Emitter, type Event } from '../util';
import { formatDiagnostic, sandboxSummary } from './config';
import { allowEntryFor } from './serverSandbox';
import type { McpServer } from './mcpServer';
import type { McpServerManager } from './serverManager';
import { isFinal } from './serverState';

/**
 * The "MCP Servers" tree without `vscode` (docs/style.md §7): nodes with a `kind` and a stable `id`, and
 * for each node the view data (label, description, tooltip markdown, codicon, contextValue). The
 * provider in src/vscode only maps this to TreeItems.
 */
export type McpTreeNode =
  | { kind: 'server'; id: string; server: string }
  | { kind: 'group'; id: string; server: string; group: 'tools' | 'resources' | 'prompts' }
  | { kind: 'tool'; id: string; server: string; name: string }
  | { kind: 'resource'; id: string; server: string; uri: string }
  | { kind: 'resourceTemplate'; id: string; server: string; uriTemplate: string }
  | { kind: 'prompt'; id: string; server: string; name: string }
  /** A line of explanation under a server (configuration error, why it stopped). */
  | { kind: 'detail'; id: string; server: string; index: number }
  /** Something the executor's sandbox blocked for a sandboxed server (a host, a path), with "Allow". */
  | { kind: 'blocked'; id: string; server: string; index: number }
  /** Shown when nothing is configured. */
  | { kind: 'empty'; id: string };

export interface McpTreeItemView {
  label: string;
  description?: string;
  /** Markdown. */
  tooltip?: string;
  /** A codicon id (`pass-filled`, `loading~spin`, …). */
  icon?: string;
  /** A theme color id for the icon. */
  iconColor?: string;
  /** `mcpServer;ready;canStop;canRestart;…` — menus match with regexes. */
  contextValue: string;
  collapsible: 'none' | 'collapsed' | 'expanded';
  /** Run on click. */
  command?: { command: string; title: string };
}

const STATE_ICON: Record<string, [string, string | undefined]> = {
  stopped: ['circle-large-outline', undefined],
  starting: ['loading~spin', undefined],
  ready: ['pass-filled', 'testing.iconPassed'],
  stopping: ['loading~spin', undefined],
  timedOut: ['watch', 'errorForeground'],
  crashed: ['error', 'errorForeground'],
};

export class McpTreeModel {
  private readonly store = new DisposableStore();
  private readonly changed = new Emitter<McpTreeNode | undefined>();
  /** A node (a server subtree) or everything (`undefined`) must be re-read. */
  readonly onDidChange: Event<McpTreeNode | undefined> = this.changed.event;

  /**
   * One object per node id: VS Code finds the element to refresh by identity, so a refresh must fire
   * the very object `getChildren` returned.
   */
  private readonly nodes = new Map<string, McpTreeNode>();

  constructor(private readonly manager: McpServerManager) {
    this.store.add(
      manager.onDidChangeServers(() => {
        this.nodes.clear();
        this.changed.fire(undefined);
      }),
    );
    this.store.add(manager.onDidChangeServer(({ server }) => this.changed.fire(this.intern(serverNode(server.name)))));
  }

  private intern<T extends McpTreeNode>(node: T): T {
    const known = this.nodes.get(node.id);
    if (known && JSON.stringify(known) === JSON.stringify(node)) return known as T;
    this.nodes.set(node.id, node);
    return node;
  }

  getChildren(node?: McpTreeNode): McpTreeNode[] {
    return this.children(node).map((n) => this.intern(n));
  }

  private children(node?: McpTreeNode): McpTreeNode[] {
    if (!node) {
      const servers = this.manager.servers;
      if (servers.length === 0) return [{ kind: 'empty', id: 'empty' }];
      return servers.map((s) => serverNode(s.name));
    }
    const server = this.manager.get('server' in node ? node.server : '');
    if (!server) return [];
    switch (node.kind) {
      case 'server': {
        const out: McpTreeNode[] = this.details(server).map((_, index) => ({
          kind: 'detail',
          id: `${node.id}/detail/${index}`,
          server: server.name,
          index,
        }));
        server.blocks.forEach((_, index) => out.push({ kind: 'blocked', id: `${node.id}/blocked/${index}`, server: server.name, index }));
        if (server.state.kind === 'ready') {
          const caps = server.capabilities ?? {};
          if (caps.tools) out.push({ kind: 'group', id: `${node.id}/tools`, server: server.name, group: 'tools' });
          if (caps.resources) out.push({ kind: 'group', id: `${node.id}/resources`, server: server.name, group: 'resources' });
          if (caps.prompts) out.push({ kind: 'group', id: `${node.id}/prompts`, server: server.name, group: 'prompts' });
        }
        return out;
      }
      case 'group':
        if (node.group === 'tools')
          return server.tools.map((t) => ({ kind: 'tool', id: `${node.id}/${t.name}`, server: server.name, name: t.name }));
        if (node.group === 'prompts')
          return server.prompts.map((p) => ({ kind: 'prompt', id: `${node.id}/${p.name}`, server: server.name, name: p.name }));
        return [
          ...server.resources.map((r): McpTreeNode => ({ kind: 'resource', id: `${node.id}/${r.uri}`, server: server.name, uri: r.uri })),
          ...server.resourceTemplates.map((r): McpTreeNode => ({
            kind: 'resourceTemplate',
            id: `${node.id}/t/${r.uriTemplate}`,
            server: server.name,
            uriTemplate: r.uriTemplate,
          })),
        ];
      default:
        return [];
    }
  }

  getItem(node: McpTreeNode): McpTreeItemView {
    if (node.kind === 'empty') {
      return {
        label: 'No MCP servers configured',
        description: 'add .vscode/mcp.json',
        tooltip: "Exec Bridge reads `servers` from each workspace folder's `.vscode/mcp.json` and the setting `execBridge.mcp.servers`.",
        icon: 'info',
        contextValue: 'mcpEmpty;',
        collapsible: 'none',
      };
    }
    const server = this.manager.get(node.server);
    if (!server) return { label: '(removed)', contextValue: 'mcpGone;', collapsible: 'none' };
    switch (node.kind) {
      case 'server':
        return this.serverItem(server);
      case 'detail': {
        const text = this.details(server)[node.index] ?? '';
        const error = server.entry.errors[node.index];
        // The file is in the tooltip; the label starts with what is wrong.
        const label = error ? `${error.key ? `${error.key}: ` : ''}${error.message}` : text;
        return {
          label,
          tooltip: text,
          icon: server.entry.errors.length > 0 ? 'warning' : 'info',
          contextValue: 'mcpDetail;',
          collapsible: 'none',
          command: { command: 'execBridge.mcp.showOutput', title: 'Show Output' },
        };
      }
      case 'blocked':
        return blockedItem(server, node.index);
      case 'group': {
        const count =
          node.group === 'tools'
            ? server.tools.length
            : node.group === 'prompts'
              ? server.prompts.length
              : server.resources.length + server.resourceTemplates.length;
        const hidden = node.group === 'tools' ? server.allTools.length - server.tools.length : 0;
        return {
          label: node.group === 'tools' ? 'Tools' : node.group === 'prompts' ? 'Prompts' : 'Resources',
          description: `${count}${hidden > 0 ? ` (${hidden} disabled)` : ''}`,
          icon: node.group === 'tools' ? 'tools' : node.group === 'prompts' ? 'comment-discussion' : 'file-symlink-file',
          contextValue: `mcpGroup;${node.group};`,
          collapsible: count > 0 ? 'collapsed' : 'none',
        };
      }
      case 'tool': {
        const tool = server.tools.find((t) => t.name === node.name);
        return tool ? toolItem(tool) : { label: node.name, contextValue: 'mcpTool;', collapsible: 'none' };
      }
      case 'resource': {
        const r = server.resources.find((x) => x.uri === node.uri);
        return r ? resourceItem(r) : { label: node.uri, contextValue: 'mcpResource;', collapsible: 'none' };
      }
      case 'resourceTemplate': {
        const r = server.resourceTemplates.find((x) => x.uriTemplate === node.uriTemplate);
        return r ? templateItem(r) : { label: node.uriTemplate, contextValue: 'mcpResourceTemplate;', collapsible: 'none' };
      }
      case 'prompt': {
        const p = server.prompts.find((x) => x.name === node.name);
        return p ? promptItem(p) : { label: node.name, contextValue: 'mcpPrompt;', collapsible: 'none' };
      }
    }
  }

  /** The whole tree as plain data (tests, "copy tree" diagnostics). Bounded in depth. */
  snapshot(
    node?: McpTreeNode,
    depth = 0,
  ): { label: string; description?: string; contextValue: string; children: ReturnType<McpTreeModel['snapshot']> }[] {
    if (depth > 4) return [];
    return this.getChildren(node).map((child) => {
      const item = this.getItem(child);
      return {
        label: item.label,
        ...(item.description !== undefined ? { description: item.description } : {}),
        contextValue: item.contextValue,
        children: item.collapsible === 'none' ? [] : this.snapshot(child, depth + 1),
      };
    });
  }

  dispose(): void {
    this.store.dispose();
    this.changed.dispose();
  }

  /** Explanation lines under a server: configuration errors, or why it is in its final state. */
  private details(server: McpServer): string[] {
    if (server.entry.errors.length > 0) return server.entry.errors.map((e) => formatDiagnostic(e));
    const st = server.state;
    if (st.kind === 'timedOut' || st.kind === 'crashed')
      return [st.reason, ...(st.stderrTail.length > 0 ? [`stderr: ${st.stderrTail[st.stderrTail.length - 1]}`] : [])];
    return [];
  }

  private serverItem(server: McpServer): McpTreeItemView {
    const st = server.state;
    const def = server.entry.definition;
    const invalid = !def;
    const reconnecting = !invalid && server.isActive && server.connection === 'recovering';
    // Reconnecting is a state of its own (icon first, words first: a narrow sidebar cuts the end).
    const [icon, iconColor] = invalid
      ? ['warning', 'problemsWarningIcon.foreground']
      : reconnecting
        ? ['debug-disconnect', 'problemsWarningIcon.foreground']
        : (STATE_ICON[st.kind] ?? ['circle-large-outline', undefined]);
    const parts = [invalid ? 'configuration error' : reconnecting ? 'executor reconnecting…' : server.describe()];
    const executor = server.executor?.label ?? def?.executor;
    if (executor && st.kind !== 'stopped') parts.push(executor);
    else if (def?.executor) parts.push(def.executor);
    if (server.stale) parts.push('restart to apply');
    const auth = server.auth.status;
    if (auth.kind === 'signedIn') parts.push(auth.account ? `signed in as ${auth.account}` : 'signed in');
    else if (auth.kind === 'signInRequired') parts.push('sign-in required');
    else if (auth.kind === 'signingIn') parts.push('signing in…');
    if (server.sandbox) parts.push(server.blocks.length > 0 ? `sandboxed, ${server.blocks.length} blocked` : 'sandboxed');
    const caps: string[] = ['mcpServer', st.kind];
    const active = server.isActive;
    const restartPending = st.kind === 'crashed' && (st.restartAt !== undefined || st.waitingForExecutor === true);
    if (!invalid && !active) caps.push('canStart');
    if (active || restartPending) caps.push('canStop');
    // A stopped server offers Start; Restart is for running ones and for failures.
    if (!invalid && (active || (isFinal(st.kind) && st.kind !== 'stopped'))) caps.push('canRestart');
    if (server.stale) caps.push('stale');
    caps.push('canShowOutput', 'canShowConfiguration');
    // Remote servers sign in ("Sign In…" inline when the server asks for it) and out.
    if (def?.remote && def.remote.oauth?.enabled !== false) caps.push(auth.kind === 'signInRequired' ? 'needsSignIn' : 'canSignIn');
    if (auth.kind === 'signedIn') caps.push('canSignOut');
    const expandable =
      server.entry.errors.length > 0 || st.kind === 'ready' || st.kind === 'timedOut' || st.kind === 'crashed' || server.blocks.length > 0;
    return {
      label: server.name,
      description: parts.join(' · '),
      tooltip: this.serverTooltip(server),
      icon,
      ...(iconColor ? { iconColor } : {}),
      contextValue: caps.join(';') + ';',
      collapsible: expandable ? (st.kind === 'ready' ? 'collapsed' : 'expanded') : 'none',
    };
  }

  private serverTooltip(server: McpServer): string {
    const st = server.state;
    const def = server.entry.definition;
    // Markdown paragraphs, joined by blank lines.
    const blocks = [`**${escapeMd(server.name)}** — ${escapeMd(def ? server.describe() : 'configuration error')}`];
    if (server.entry.errors.length > 0) blocks.push(server.entry.errors.map((e) => `- ${escapeMd(formatDiagnostic(e))}`).join('\n'));
    if (def) {
      if (def.remote)
        blocks.push(
          `URL (${def.remote.type}${def.remote.connectFrom === 'executor' ? ', reached through the executor' : ''}): \`${def.remote.url.replace(/`/g, "'")}\``,
        );
      else blocks.push(`Command: \`${[def.command, ...def.args].join(' ').replace(/`/g, "'")}\``);
      blocks.push(`Executor: ${escapeMd(server.executor?.label ?? def.executor ?? 'the active one')}`);
    }
    blocks.push(
      `Defined in: ${escapeMd(server.entry.source.file)}${def?.adjustedBy ? ` (adjusted in ${escapeMd(def.adjustedBy.file)})` : ''}`,
    );
    const sb = server.sandbox;
    blocks.push(
      sb
        ? `Sandbox on the executor: ${escapeMd(sandboxSummary(sb))}${sb.writable.length > 0 ? `; also writable: ${escapeMd(sb.writable.join(', '))}` : ''}`
        : 'Sandbox: none (`executorSandbox` runs it in the executor\u2019s sandbox)',
    );
    const auth = server.auth.status;
    if (auth.kind === 'signedIn') {
      const until = auth.expiresAt !== undefined ? `; token valid until ${new Date(auth.expiresAt).toLocaleTimeString()}` : '';
      blocks.push(
        `Signed in${auth.account ? ` as ${escapeMd(auth.account)}` : ''}${auth.authServer ? ` at ${escapeMd(auth.authServer)}` : ''}${auth.scope ? ` (scope ${escapeMd(auth.scope)})` : ''}${until}. "Sign Out" deletes the stored sign-in.`,
      );
    } else if (auth.kind === 'signInRequired')
      blocks.push(
        `*Sign-in required:* ${escapeMd(auth.reason)}${auth.authServer ? ` (at ${escapeMd(auth.authServer)})` : ''}. Use "Sign In…".`,
      );
    if (server.processId) blocks.push(`Process: \`${server.processId}\``);
    if (server.serverInfo) blocks.push(`Server: ${escapeMd(`${server.serverInfo.name} ${server.serverInfo.version}`)}`);
    if (server.protocolVersion) blocks.push(`MCP ${escapeMd(server.protocolVersion)}`);
    // A time, not a duration: a tooltip is computed once and would go stale.
    blocks.push(`In this state since ${new Date(st.since).toLocaleTimeString()}`);
    if (server.isActive && server.connection === 'recovering')
      blocks.push(
        '*The connection to its executor was lost and is being resumed.* The server keeps running there; tool calls wait until the connection is back.',
      );
    if (server.stale) blocks.push('*The configuration changed since it started: restart to apply.*');
    if (st.kind === 'stopped' && st.reason) blocks.push(`Stopped: ${escapeMd(st.reason)}`);
    if (st.kind === 'timedOut' || st.kind === 'crashed') {
      blocks.push(escapeMd(st.reason));
      if (st.stderrTail.length > 0)
        blocks.push('Last stderr lines:\n```\n' + st.stderrTail.map((l) => l.replace(/```/g, "'''")).join('\n') + '\n```');
    }
    return blocks.join('\n\n');
  }
}

/** A block under a sandboxed server: what was blocked, and what Allow would write. */
function blockedItem(server: McpServer, index: number): McpTreeItemView {
  const b = server.blocks[index];
  if (!b) return { label: '(gone)', contextValue: 'mcpBlocked;', collapsible: 'none' };
  const read = server.sandbox?.policy === 'read-only';
  if (b.kind === 'host')
    return {
      label: `blocked ${b.target}`,
      description: `Allow ${allowEntryFor(b)} for this server?`,
      tooltip: `The executor's sandbox refused **${escapeMd(b.target)}**: ${escapeMd(b.reason)}\n\n**Allow** adds \`${escapeMd(allowEntryFor(b))}\` to this server's \`executorSandbox.networkAllow\` and restarts it.`,
      icon: 'shield',
      iconColor: 'problemsWarningIcon.foreground',
      contextValue: 'mcpBlocked;host;canAllow;',
      collapsible: 'none',
    };
  return {
    label: `blocked writing ${b.path}`,
    description: read ? 'read-only sandbox' : 'Allow writing there?',
    tooltip: `The executor's sandbox kept **${escapeMd(b.path)}** read-only:\n\n\`${b.evidence.replace(/`/g, "'")}\`${read ? '' : '\n\n**Allow** adds its folder to this server\u2019s `executorSandbox.writable` and restarts it.'}`,
    icon: 'shield',
    iconColor: 'problemsWarningIcon.foreground',
    contextValue: `mcpBlocked;path;${read ? '' : 'canAllow;'}`,
    collapsible: 'none',
  };
}

function serverNode(name: string): McpTreeNode {
  return { kind: 'server', id: `mcp:${name}`, server: name };
}

/** A leaf of the tree; the tooltip is markdown blocks, empty ones dropped. */
function leaf(label: string, description: string | undefined, tooltip: string[], icon: string, contextValue: string): McpTreeItemView {
  return {
    label,
    ...(description ? { description } : {}),
    tooltip: tooltip.filter(Boolean).join('\n\n'),
    icon,
    contextValue,
    collapsible: 'none',
  };
}

/** A tool leaf (exported for its unit test). */
export function toolItem(tool: Tool): McpTreeItemView {
  const schema = JSON.stringify(tool.inputSchema ?? {}, null, 2);
  const title = tool.annotations?.title ?? tool.title;
  const a = tool.annotations;
  // The behaviour hints a careful user looks for before calling (the spec's defaults when absent).
  const hints = a
    ? [
        a.readOnlyHint ? 'read-only' : a.destructiveHint === false ? 'writes, not destructive' : 'may modify or delete',
        a.idempotentHint ? 'idempotent' : '',
        a.openWorldHint === false ? 'closed world' : 'reaches outside systems',
      ].filter(Boolean)
    : [];
  const tooltip = [
    `**${escapeMd(title ?? tool.name)}**`,
    tool.description ? escapeMd(tool.description) : '',
    hints.length > 0 ? `_${hints.join(' · ')}_` : '',
    'Input schema:',
    '```json\n' + schema + '\n```',
    tool.outputSchema ? 'Output schema (the result has `structuredContent`):' : '',
    tool.outputSchema ? '```json\n' + JSON.stringify(tool.outputSchema, null, 2) + '\n```' : '',
  ];
  return leaf(tool.name, tool.description ? firstLine(tool.description) : undefined, tooltip, 'symbol-method', 'mcpTool;canCall;');
}

function resourceItem(r: Resource): McpTreeItemView {
  const tooltip = [
    `**${escapeMd(r.title ?? r.name)}**`,
    `\`${r.uri}\``,
    r.mimeType ? `Type: ${r.mimeType}` : '',
    r.description ? escapeMd(r.description) : '',
  ];
  return leaf(r.name, r.uri, tooltip, 'file', 'mcpResource;canRead;');
}

function templateItem(r: ResourceTemplate): McpTreeItemView {
  const tooltip = [`**${escapeMd(r.title ?? r.name)}** (template)`, `\`${r.uriTemplate}\``, r.description ? escapeMd(r.description) : ''];
  return leaf(r.name, r.uriTemplate, tooltip, 'file-code', 'mcpResourceTemplate;');
}

function promptItem(p: Prompt): McpTreeItemView {
  const args = (p.arguments ?? []).map(
    (a) => `- \`${a.name}\`${a.required ? ' (required)' : ''}${a.description ? `: ${escapeMd(a.description)}` : ''}`,
  );
  const tooltip = [
    `**${escapeMd(p.title ?? p.name)}**`,
    p.description ? escapeMd(p.description) : '',
    args.length > 0 ? 'Arguments:\n' + args.join('\n') : '',
  ];
  return leaf(p.name, p.description ? firstLine(p.description) : undefined, tooltip, 'comment', 'mcpPrompt;');
}

function firstLine(s: string): string {
  const line = s.split('\n')[0] ?? '';
  return line.length > 80 ? line.slice(0, 79) + '…' : line;
}

function escapeMd(s: string): string {
  return s.replace(/([\\`*_{}[\]<>#|])/g, '\\$1');
}
