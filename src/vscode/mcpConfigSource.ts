import * as vscode from 'vscode';
import { mergeMcpConfig, parseMcpJson, parseSettingsServers, readSandboxValue } from '../mcp';
import type { McpConfig, McpConfigLayer, McpDiagnostic } from '../mcp';
import { DisposableStore, Emitter, errorMessage, type Disposable, type Event } from '../util';

export const SETTINGS_LABEL = 'settings: execBridge.mcp.servers';

/**
 * Reads the MCP configuration from the workspace (each folder's `.vscode/mcp.json`, through
 * `workspace.fs` so remote workspaces work) and settings; watches both; publishes `mcp.json`
 * problems to the Problems panel with their positions.
 */
export class McpConfigSource implements Disposable {
  private readonly store = new DisposableStore();
  private readonly diagnostics: vscode.DiagnosticCollection;
  private readonly changed = new Emitter<McpConfig>();
  /** A new configuration was read (debounced). */
  readonly onDidChange: Event<McpConfig> = this.changed.event;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private watchers = new DisposableStore();
  private disposed = false;

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.diagnostics = vscode.languages.createDiagnosticCollection('execBridge.mcp');
    this.store.add(this.diagnostics);
    this.store.add(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('execBridge.mcp.servers') || e.affectsConfiguration('execBridge.mcp.executorSandbox')) this.schedule();
      }),
    );
    this.store.add(
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        this.watch();
        this.schedule();
      }),
    );
    this.watch();
  }

  /** Reads everything now. */
  async read(): Promise<McpConfig> {
    const layers: McpConfigLayer[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const uri = vscode.Uri.joinPath(folder.uri, '.vscode', 'mcp.json');
      const source = { kind: 'mcpJson' as const, file: uri.fsPath, workspaceFolder: folder.uri.fsPath };
      let text: string;
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      } catch (e) {
        if (e instanceof vscode.FileSystemError && e.code === 'FileNotFound') continue; // no mcp.json in this folder
        // Unreadable (permissions, a remote file system failing): say so instead of dropping its servers silently.
        layers.push({
          source,
          servers: [],
          inputs: [],
          diagnostics: [{ severity: 'error', file: uri.fsPath, message: `cannot read ${uri.fsPath}: ${errorMessage(e)}` }],
        });
        continue;
      }
      layers.push(parseMcpJson(text, source));
    }
    layers.push(
      parseSettingsServers(vscode.workspace.getConfiguration('execBridge.mcp').get<unknown>('servers'), {
        kind: 'settings',
        file: SETTINGS_LABEL,
      }),
    );
    // The workspace default of `executorSandbox` (a server's own key wins over it).
    const sandboxErrors: McpDiagnostic[] = [];
    const raw = vscode.workspace.getConfiguration('execBridge.mcp').get<unknown>('executorSandbox');
    const sandboxDefault =
      raw === undefined || raw === null
        ? undefined
        : readSandboxValue(raw, 'execBridge.mcp.executorSandbox', (key, message) =>
            sandboxErrors.push({ severity: 'error', file: SETTINGS_LABEL, key, message }),
          );
    const config = mergeMcpConfig(layers, sandboxDefault !== undefined ? { sandboxDefault } : {});
    config.diagnostics.push(...sandboxErrors);
    this.publish(config.diagnostics);
    return config;
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.watchers.dispose();
    this.store.dispose();
    this.changed.dispose();
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    // Saves come in bursts (format on save, several folders): read once they settle.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.read().then(
        (c) => {
          if (!this.disposed) this.changed.fire(c);
        },
        (e: unknown) => this.log.error(`MCP: reading the configuration failed: ${errorMessage(e)}`),
      );
    }, 200);
  }

  private watch(): void {
    this.watchers.dispose();
    this.watchers = new DisposableStore();
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, '.vscode/mcp.json'));
      this.watchers.add(w);
      this.watchers.add(w.onDidChange(() => this.schedule()));
      this.watchers.add(w.onDidCreate(() => this.schedule()));
      this.watchers.add(w.onDidDelete(() => this.schedule()));
    }
  }

  private publish(all: readonly McpDiagnostic[]): void {
    this.diagnostics.clear();
    const byFile = new Map<string, vscode.Diagnostic[]>();
    for (const d of all) {
      if (d.file === SETTINGS_LABEL) {
        this.log.warn(
          `MCP ${d.severity}: ${d.server ? `server "${d.server}", ` : ''}${d.key ? `key "${d.key}": ` : ''}${d.message} (${SETTINGS_LABEL})`,
        );
        continue;
      }
      const range = d.range
        ? new vscode.Range(d.range.line, d.range.character, d.range.line, d.range.character + Math.max(1, Math.min(d.range.length, 200)))
        : new vscode.Range(0, 0, 0, 1);
      const diag = new vscode.Diagnostic(
        range,
        d.server ? `${d.server}: ${d.message}` : d.message,
        d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning,
      );
      diag.source = 'Exec Bridge MCP';
      byFile.set(d.file, [...(byFile.get(d.file) ?? []), diag]);
    }
    for (const [file, diags] of byFile) this.diagnostics.set(vscode.Uri.file(file), diags);
  }
}
