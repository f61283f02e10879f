import * as vscode from 'vscode';
import { McpGateway, buildProxyDefinitions, definitionsKey, type McpServerManager, type ProxyDefinition } from '../mcp';
import { Emitter, errorMessage } from '../util';

/** The provider id in package.json's `contributes.mcpServerDefinitionProviders`. */
export const MCP_PROVIDER_ID = 'execBridge.mcpServers';

// The MCP provider API is final since VS Code 1.101; our engines floor is 1.100, whose types lack
// it, so the part we use is declared here and looked up at run time.
interface StdioDefinition {
  label: string;
  command: string;
  args: string[];
  env: Record<string, string | number | null>;
  version?: string;
}
interface StdioDefinitionCtor {
  new (label: string, command: string, args?: string[], env?: Record<string, string | number | null>, version?: string): StdioDefinition;
}
interface DefinitionProvider {
  onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<StdioDefinition[]>;
  resolveMcpServerDefinition?(server: StdioDefinition, token: vscode.CancellationToken): vscode.ProviderResult<StdioDefinition>;
}
interface McpApi {
  register(id: string, provider: DefinitionProvider): vscode.Disposable;
  Stdio: StdioDefinitionCtor;
}

/** VS Code's MCP provider API, or undefined on a VS Code without it (1.100). */
export function mcpProviderApi(): McpApi | undefined {
  const lm = (vscode as unknown as { lm?: { registerMcpServerDefinitionProvider?: McpApi['register'] } }).lm;
  const Stdio = (vscode as unknown as { McpStdioServerDefinition?: StdioDefinitionCtor }).McpStdioServerDefinition;
  if (typeof lm?.registerMcpServerDefinitionProvider !== 'function' || typeof Stdio !== 'function') return undefined;
  return { register: (id, p) => lm.registerMcpServerDefinitionProvider!(id, p), Stdio };
}

export interface McpProviderHandle extends vscode.Disposable {
  readonly gateway: McpGateway;
  /** What VS Code was last given. */
  definitions(): readonly ProxyDefinition[];
  /** The active executor changed: servers that follow it get a new label and version. */
  recheck(): void;
}

/**
 * Offers every server we manage to VS Code's MCP list (chat, agent mode, MCP: List Servers) as a
 * `mcp-proxy` stdio definition that reaches our running server through the gateway. Returns
 * undefined where VS Code has no such API; everything else works without it.
 */
export async function registerMcpProvider(
  manager: McpServerManager,
  extensionPath: string,
  activeExecutor: () => string,
  log: (line: string) => void,
): Promise<McpProviderHandle | undefined> {
  const api = mcpProviderApi();
  if (!api) {
    log(`MCP: this VS Code (${vscode.version}) has no MCP server provider API; our servers stay in the Exec Bridge tree`);
    return undefined;
  }
  const gateway = new McpGateway(manager, log);
  let socketPath: string;
  try {
    socketPath = await gateway.listen();
  } catch (e) {
    log(`MCP: the gateway for VS Code's MCP list could not listen: ${errorMessage(e)}`);
    await gateway.dispose();
    return undefined;
  }
  const changed = new Emitter<void>();
  const compute = () =>
    buildProxyDefinitions(
      manager.servers.map((s) => s.entry),
      {
        execPath: process.execPath,
        electron: process.versions['electron'] !== undefined,
        cliPath: `${extensionPath}/dist/cli.js`,
        socketPath,
        activeExecutor: activeExecutor(),
      },
    );
  let current = compute();
  let key = definitionsKey(current);
  const recheck = () => {
    const next = compute();
    const k = definitionsKey(next);
    if (k === key) return;
    current = next;
    key = k;
    changed.fire();
  };
  const subs = [manager.onDidChangeServers(recheck), manager.onDidChangeServer(({ change }) => change === 'meta' && recheck())];
  let registration: vscode.Disposable;
  try {
    registration = api.register(MCP_PROVIDER_ID, provider());
  } catch (e) {
    // 1.100 has the function as a proposal that throws for extensions not allowed to use it.
    log(
      `MCP: this VS Code (${vscode.version}) does not let extensions offer MCP servers (${errorMessage(e)}); our servers stay in the Exec Bridge tree`,
    );
    for (const s of subs) s.dispose();
    changed.dispose();
    await gateway.dispose();
    return undefined;
  }
  function provider(): DefinitionProvider {
    const Stdio = api!.Stdio;
    return {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => {
        current = compute();
        key = definitionsKey(current);
        return current.map((d) => new Stdio(d.label, d.command, d.args, d.env, d.version));
      },
      resolveMcpServerDefinition: (server) => server,
    };
  }
  return {
    gateway,
    definitions: () => current,
    recheck,
    dispose: () => {
      registration.dispose();
      for (const s of subs) s.dispose();
      changed.dispose();
      void gateway.dispose();
    },
  };
}
