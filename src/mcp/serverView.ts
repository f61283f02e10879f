import type { Implementation, Prompt, Resource, ResourceTemplate, ServerCapabilities, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ConnectionState } from '../client';
import type { McpSandboxSettings, McpServerDefinition, McpServerEntry } from './config';
import type { SandboxBlock } from './serverSandbox';
import type { McpServerContext } from './serverContext';
import { McpServerLists } from './serverLists';
import type { Run } from './serverRun';
import { describeState, type McpServerState } from './serverState';

/**
 * What the tree, the gateway and the commands read about one server: its entry, state, lists and
 * what its current run reported. `McpServer` (./mcpServer.ts) drives it.
 */
export abstract class McpServerView {
  protected stateValue: McpServerState;
  protected run: Run | undefined;
  protected entryValue: McpServerEntry;
  /** The definition the current/last run was started with (the entry may have changed since). */
  protected runningDefinition: McpServerDefinition | undefined;

  protected readonly lists = new McpServerLists();
  protected serverInfoValue: Implementation | undefined;
  protected capabilitiesValue: ServerCapabilities | undefined;
  protected instructionsValue: string | undefined;
  protected protocolVersionValue: string | undefined;
  protected executorValue: { id: string; label: string } | undefined;
  protected connectionValue: ConnectionState['kind'] | undefined;
  /** What the sandbox blocked during the current (or last) run, oldest first, each once. */
  protected blocksValue: SandboxBlock[] = [];

  constructor(
    entry: McpServerEntry,
    protected readonly ctx: McpServerContext,
  ) {
    this.entryValue = entry;
    this.stateValue = { kind: 'stopped', since: ctx.clock.now(), stderrTail: [] };
  }

  get name(): string {
    return this.entryValue.name;
  }
  get entry(): McpServerEntry {
    return this.entryValue;
  }
  get state(): McpServerState {
    return this.stateValue;
  }
  /** Enabled tools (after `enabledTools`/`disabledTools`). */
  get tools(): readonly Tool[] {
    return this.lists.tools;
  }
  /** Every tool the server offers, including the filtered-out ones. */
  get allTools(): readonly Tool[] {
    return this.lists.allTools;
  }
  get resources(): readonly Resource[] {
    return this.lists.resources;
  }
  get resourceTemplates(): readonly ResourceTemplate[] {
    return this.lists.resourceTemplates;
  }
  get prompts(): readonly Prompt[] {
    return this.lists.prompts;
  }
  get serverInfo(): Implementation | undefined {
    return this.serverInfoValue;
  }
  get capabilities(): ServerCapabilities | undefined {
    return this.capabilitiesValue;
  }
  get instructions(): string | undefined {
    return this.instructionsValue;
  }
  /** The MCP revision the current (or last) run negotiated: `2026-07-28`, `2025-11-25`, … */
  get protocolVersion(): string | undefined {
    return this.protocolVersionValue;
  }
  /** Where the current (or last) run happens. */
  get executor(): { id: string; label: string } | undefined {
    return this.executorValue;
  }
  /** The exec connection of the running server (`recovering` while it reconnects). */
  get connection(): ConnectionState['kind'] | undefined {
    return this.connectionValue;
  }
  /** What the executor's sandbox blocked during the current (or last) run, each once. */
  get blocks(): readonly SandboxBlock[] {
    return this.blocksValue;
  }
  /** The executor sandbox the server runs in (the running definition's, else the configured one); undefined: none. */
  get sandbox(): McpSandboxSettings | undefined {
    const s = (this.run ? this.runningDefinition : this.entryValue.definition)?.sandbox?.settings;
    return s === 'none' ? undefined : s;
  }
  /** The process id on the executor while running. */
  get processId(): string | undefined {
    return this.run?.transport?.process?.processId;
  }
  /** Running with a definition that no longer matches the configuration: "restart to apply". */
  get stale(): boolean {
    const running = this.runningDefinition;
    if (!this.run || !running) return false;
    return this.entryValue.definition?.fingerprint !== running.fingerprint;
  }
  /** The executor id this server should run on now (for executor switches). */
  get wantedExecutorId(): string | undefined {
    return this.ctx.host.resolveId(this.entryValue.definition?.executor);
  }
  /** Waiting in `crashed` for the executor to come back before restarting. */
  get waitingForExecutor(): boolean {
    return this.stateValue.kind === 'crashed' && this.stateValue.waitingForExecutor === true;
  }
  /** A run exists (starting, ready or stopping). */
  get isActive(): boolean {
    return this.run !== undefined;
  }

  describe(): string {
    return describeState(this.stateValue, this.ctx.clock.now());
  }
}
