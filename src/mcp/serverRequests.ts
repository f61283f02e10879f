import type { Client } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  CallToolResult,
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  LoggingLevel,
  ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestOrigin } from './clientFeatures';
import { McpServerView } from './serverView';

/**
 * What a ready server is asked — tools, resources and their subscriptions, prompts, completions,
 * its logging level, ping — with who asked each call in flight. `McpServer` (./mcpServer.ts) runs
 * the server these go to; asked while it is not ready, they fail at once.
 */
export abstract class McpServerRequests extends McpServerView {
  /** Calls in flight, each with who made it (undefined: ours). */
  private readonly calls = new Map<number, RequestOrigin | undefined>();
  private callSeq = 0;
  /** Resource subscriptions of the current run: uri → how many subscribers. */
  private readonly subscribed = new Map<string, number>();

  /**
   * Calls a tool. With `origin` (VS Code's client through the gateway), what the server asks while
   * serving it — elicitation, sampling — goes to that client when only its calls are in flight.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: RequestOptions & { origin?: RequestOrigin } = {},
  ): Promise<CallToolResult> {
    const sdk = this.readyClient();
    const { origin, ...request } = options;
    const id = ++this.callSeq;
    this.calls.set(id, origin);
    try {
      const result = (await sdk.callTool({ name, arguments: args }, request)) as CallToolResult;
      this.onToolResult(result);
      return result;
    } finally {
      this.calls.delete(id);
    }
  }

  /** Who to ask on the server's behalf: the one origin of every call in flight, if they share one. */
  protected requestOrigin(): RequestOrigin | undefined {
    const origins = new Set(this.calls.values());
    return origins.size === 1 ? [...origins][0] : undefined;
  }

  /** `resources/subscribe`, counted: the server is asked once per uri however many subscribe. */
  async subscribeResource(uri: string, options: RequestOptions = {}): Promise<void> {
    const sdk = this.readyClient();
    const n = this.subscribed.get(uri) ?? 0;
    this.subscribed.set(uri, n + 1);
    if (n > 0) return;
    try {
      await sdk.subscribeResource({ uri }, options);
    } catch (e) {
      this.subscribed.delete(uri);
      throw e;
    }
  }

  /** The last subscriber of `uri` leaving unsubscribes on the server. */
  async unsubscribeResource(uri: string, options: RequestOptions = {}): Promise<void> {
    const n = this.subscribed.get(uri) ?? 0;
    if (n === 0) return;
    if (n > 1) {
      this.subscribed.set(uri, n - 1);
      return;
    }
    this.subscribed.delete(uri);
    await this.readyClient().unsubscribeResource({ uri }, options);
  }

  /** `logging/setLevel` on the server. */
  async setLoggingLevel(level: LoggingLevel, options: RequestOptions = {}): Promise<void> {
    await this.readyClient().setLoggingLevel(level, options);
  }

  async readResource(uri: string, options: RequestOptions = {}): Promise<ReadResourceResult> {
    return this.readyClient().readResource({ uri }, options);
  }

  async getPrompt(name: string, args: Record<string, string> = {}, options: RequestOptions = {}): Promise<GetPromptResult> {
    return this.readyClient().getPrompt({ name, arguments: args }, options);
  }

  /** `completion/complete` (prompt arguments, resource template variables), for servers that offer completions. */
  async complete(params: CompleteRequest['params'], options: RequestOptions = {}): Promise<CompleteResult> {
    return this.readyClient().complete(params, options);
  }

  /** Round trip in ms. */
  async ping(options: RequestOptions = {}): Promise<number> {
    const t0 = this.ctx.clock.now();
    await this.readyClient().ping(options);
    return this.ctx.clock.now() - t0;
  }

  /** A run's subscriptions end with it. */
  protected forgetSubscriptions(): void {
    this.subscribed.clear();
  }

  protected readyClient(): Client {
    const run = this.run;
    if (!run?.sdk || this.stateValue.kind !== 'ready') throw new Error(`MCP server "${this.name}" is not ready (${this.describe()})`);
    return run.sdk;
  }

  /** Every tool result, as it arrives (a sandboxed server's may name a write the sandbox refused). */
  protected abstract onToolResult(result: CallToolResult): void;
}
