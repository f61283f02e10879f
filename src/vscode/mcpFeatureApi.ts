import type { McpServer, McpServerManager, McpTreeModel } from '../mcp';
import type { McpSignIn } from './mcpAuth';
import type { McpProviderHandle } from './mcpProvider';

/** What the extension (and the `execBridge.mcp.*` commands, mcpCommands.ts) use of the MCP feature. */
export interface McpFeature {
  readonly manager: McpServerManager;
  readonly tree: McpTreeModel;
  /** Shows a server's output channel. */
  showOutput(server: McpServer): void;
  /** Reads the configuration now and applies it (starting nothing on its own). */
  reload(): Promise<void>;
  /** Forgets every stored `${input:…}` answer of the current configuration; returns how many inputs it has. */
  forgetInputs(): Promise<number>;
  /** VS Code's MCP list integration, once registered (undefined on a VS Code without the API). */
  readonly provider: Promise<McpProviderHandle | undefined>;
  /** Sign-in to remote servers (SecretStorage, the browser). */
  readonly signIn: McpSignIn;
  /** Deactivate: drain every server (call before the executors' clients are disposed). */
  shutdown(): Promise<void>;
}
